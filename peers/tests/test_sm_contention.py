"""scripts/sm_contention.py: its summary and arguments, and a clear exit without a GPU."""
import argparse
import contextlib
import importlib.util
import io
import os
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location(
    "sm_contention", os.path.join(HERE, "..", "..", "scripts", "sm_contention.py"))
sc = importlib.util.module_from_spec(spec)
spec.loader.exec_module(sc)


class SmContention(unittest.TestCase):
    def test_added_time_per_microsecond_of_stand_in(self):
        # 200 µs alone, 245 µs beside 300 µs of stand-in: 0.15 µs per µs (a proportional share
        # of 24 of 132 SMs would be 0.18); all of it: 1.0.
        self.assertAlmostEqual(sc.summarize(200.0, 245.0, 300), 0.15)
        self.assertAlmostEqual(sc.summarize(200.0, 500.0, 300), 1.0)
        with self.assertRaises(ValueError):
            sc.summarize(0.0, 10.0, 300)

    def test_spins_are_positive_integers(self):
        self.assertEqual(sc.parse_spins("100,300"), [100, 300])
        for bad in ("", "0", "100,-5"):
            with self.assertRaises(argparse.ArgumentTypeError):
                sc.parse_spins(bad)

    def test_without_a_gpu_it_says_so(self):
        import torch
        if torch.cuda.is_available():
            self.skipTest("a GPU is present")
        err = io.StringIO()
        with tempfile.TemporaryDirectory() as d, contextlib.redirect_stderr(err):
            rc = sc.main([os.path.join(d, "out.json")])
            self.assertFalse(os.path.exists(os.path.join(d, "out.json")))
        self.assertEqual(rc, 2)
        self.assertIn("needs a CUDA GPU", err.getvalue())


if __name__ == "__main__":
    unittest.main()
