import re
import unittest

from peers import device_info, timer


class Datasheet(unittest.TestCase):
    def test_table_is_the_one_gptbench_includes(self):
        table = device_info.datasheet_table()
        self.assertGreaterEqual(len(table), 8)
        for pattern, flops in table:
            re.compile(pattern)
            self.assertGreater(flops, 1e13)

    def test_names_cuda_reports(self):
        f = device_info.datasheet_bf16_flops
        self.assertEqual(f("NVIDIA H100 80GB HBM3"), 989e12)
        self.assertEqual(f("NVIDIA H200"), 989e12)
        self.assertEqual(f("NVIDIA H100 PCIe"), 756e12)  # before the H100 row: first match wins
        self.assertEqual(f("NVIDIA H100 NVL"), 835e12)
        self.assertEqual(f("NVIDIA A100-SXM4-80GB"), 312e12)
        self.assertEqual(f("NVIDIA GeForce GTX 1080"), 0.0)


class Timer(unittest.TestCase):
    def test_short_calls_are_batched_as_fixtures_timer(self):
        self.assertEqual(timer.inner_calls_for(1e-3), 1)
        self.assertEqual(timer.inner_calls_for(20e-6), 1)
        self.assertEqual(timer.inner_calls_for(10e-6), 20)
        self.assertEqual(timer.inner_calls_for(1e-9), timer.MAX_INNER)
        self.assertEqual(timer.inner_calls_for(0.0), 1)

    def test_cpu_timer_times_the_calls(self):
        import torch
        calls = []
        s = timer.RegionTimer(torch.device("cpu")).time(lambda: calls.append(1), 5)
        self.assertEqual(len(calls), 5)
        self.assertGreater(s, 0)


if __name__ == "__main__":
    unittest.main()
