import time
import types
import unittest
from unittest import mock

import torch

from peers import gpu_power, runner
from peers.case import COPY, Case, Spec
from peers.tests.test_runner import PEAKS, options


class Counters(unittest.TestCase):
    def test_mean_clock_and_capped_share_as_fixtures_gpu_power(self):
        c = gpu_power.power_counters([(1980.0, 0), (1700.0, 0x4), (1500.0, 0x80), (1800.0, 0x1)])
        self.assertEqual(c, {"sm_clock_mhz": 1745.0, "power_capped_pct": 50.0})
        self.assertEqual(gpu_power.power_counters([]), {})


class Sampler(unittest.TestCase):
    def test_no_device_no_thread_no_samples(self):
        with gpu_power.PowerSampler("") as s:
            self.assertIsNone(s._thread)
        self.assertEqual(s.samples, [])

    def test_samples_until_stopped_and_once_more_at_the_end(self):
        reads = []

        def read(handle):
            reads.append(handle)
            return 1600.0, 0x4

        with mock.patch.object(gpu_power, "_nvml_device", return_value="dev"), \
                mock.patch.object(gpu_power, "_read", side_effect=read):
            s = gpu_power.PowerSampler("0000:19:00.0", period_s=0.001)
            time.sleep(0.03)
            samples = s.stop()
            n = len(reads)
            time.sleep(0.01)
        self.assertGreaterEqual(len(samples), 2)
        self.assertEqual(len(reads), n)  # stopped: no sample after stop()
        self.assertEqual(set(reads), {"dev"})
        self.assertEqual(gpu_power.power_counters(samples)["power_capped_pct"], 100.0)

    def test_bus_id_in_cudas_format(self):
        props = types.SimpleNamespace(pci_domain_id=0, pci_bus_id=0x19, pci_device_id=0)
        with mock.patch.object(torch.cuda, "get_device_properties", return_value=props):
            self.assertEqual(gpu_power.cuda_pci_bus_id(torch.device("cuda", 0)), "0000:19:00.0")
        self.assertEqual(gpu_power.cuda_pci_bus_id(torch.device("cpu")), "")


class Rows(unittest.TestCase):
    def test_each_repetition_carries_its_own_samples(self):
        clocks = iter([[(1900.0, 0)], [(1700.0, 0x4), (1500.0, 0x4)]])

        class FakeSampler:
            def __init__(self, bus_id):
                self.samples = next(clocks)

            def __enter__(self):
                return self

            def __exit__(self, *exc):
                pass

        spec = Spec("f/impl/x", lambda: Case(run=lambda: None, bytes=8.0, peak=COPY))
        with mock.patch.object(runner, "PowerSampler", FakeSampler):
            rows = runner.run_spec(spec, options(repetitions=2), PEAKS, 0)
        it = [r for r in rows if r.get("run_type") == "iteration"]
        self.assertEqual([r["sm_clock_mhz"] for r in it], [1900.0, 1600.0])
        self.assertEqual([r["power_capped_pct"] for r in it], [0.0, 100.0])

    def test_a_cpu_run_has_no_clock_counters(self):
        spec = Spec("f/impl/x", lambda: Case(run=lambda: None, bytes=8.0, peak=COPY))
        rows = runner.run_spec(spec, options(), PEAKS, 0)
        self.assertNotIn("sm_clock_mhz", rows[0])
        self.assertNotIn("error_message", rows[0])


if __name__ == "__main__":
    unittest.main()
