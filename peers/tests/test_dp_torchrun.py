"""The data-parallel peers on two CPU ranks under torchrun with Gloo (ctest peers_dp_torchrun,
which sets GPTBENCH_DP_TORCHRUN=1, and GPTBENCH_BINARY / GPTBENCH_COMPARE for the pairing with
ours): every stack's row with sane counters, written by rank 0 alone, loadable by
gptbench-compare; names that pair with gptbench's own; a bad flag stops every rank."""
import glob
import json
import math
import os
import random
import subprocess
import sys
import tempfile
import unittest

from peers.tests.run_checks import check_peer_run

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FLAGS = ["--gptbench_device=cpu", "--gptbench_compile_backend=eager"]
STACKS = ("torch_ddp", "torch_zero1", "torch_fsdp")


def torchrun(args, log_dir, nproc=2):
    """torchrun (the interpreter's own) from the checkout, each rank's output in log_dir."""
    port = str(20000 + random.randrange(20000))
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", str(nproc),
           "--master-addr", "127.0.0.1", "--master-port", port, "--log-dir", log_dir,
           "--redirects", "3", "-m", "peers.dp", *args]
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=240)


def rank_log(log_dir, rank, stream):
    paths = glob.glob(os.path.join(log_dir, "**", str(rank), f"{stream}.log"), recursive=True)
    assert len(paths) == 1, paths
    with open(paths[0], encoding="utf-8") as f:
        return f.read()


@unittest.skipUnless(os.environ.get("GPTBENCH_DP_TORCHRUN"), "run by ctest peers_dp_torchrun")
class TwoRanks(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.work = tempfile.TemporaryDirectory()
        cls.out = os.path.join(cls.work.name, "peers.json")
        cls.logs = os.path.join(cls.work.name, "logs")
        cls.p = torchrun(FLAGS + [f"--benchmark_out={cls.out}"], cls.logs)
        if cls.p.returncode != 0:
            raise AssertionError(f"torchrun exit {cls.p.returncode}:\n{cls.p.stderr[-3000:]}")
        with open(cls.out, encoding="utf-8") as f:
            cls.doc = json.load(f)
        cls.rows = {r["name"].split("/mode:")[1].split("/")[0]: r for r in cls.doc["benchmarks"]}

    @classmethod
    def tearDownClass(cls):
        cls.work.cleanup()

    def test_every_stack_has_its_row_on_two_ranks(self):
        self.assertEqual(sorted(self.rows), sorted(STACKS))
        self.assertEqual(check_peer_run(self.doc, "eager", expect_skipped=False), [])
        self.assertEqual(self.doc["context"]["gptbench_ranks"], "2")
        self.assertEqual(self.doc["context"]["dist_backend"], "gloo")
        for stack, r in self.rows.items():
            self.assertIn("/ranks:2/", r["name"])
            self.assertEqual(r["iterations"], 3)
            self.assertEqual(r["ranks"], 2)

    def test_counters_are_sane(self):
        tokens = 2 * 64  # B × T per rank
        for stack, r in self.rows.items():
            with self.subTest(stack=stack):
                step = r["step_ms"] / 1e3
                self.assertGreater(step, 0)
                self.assertAlmostEqual(r["real_time"], r["step_ms"] * 1e3, delta=1e-6 * r["real_time"])
                self.assertGreaterEqual(r["slowest_rank_step_ms"], r["step_ms"] * (1 - 1e-12))
                # the group's step is its slowest rank's mean
                self.assertEqual(r["step_max_rank_ms"], r["step_ms"])
                self.assertTrue(0 < r["step_min_rank_ms"] <= r["step_max_rank_ms"])
                self.assertAlmostEqual(r["tokens/s"], 2 * tokens / step, delta=1e-9 * r["tokens/s"])
                self.assertAlmostEqual(r["tokens_per_s_per_gpu"], r["tokens/s"] / 2)
                self.assertAlmostEqual(r["scaling_efficiency"], r["ref_step_ms"] / r["step_ms"])
                # the reference: the mean of the two ranks' own, halfway between them
                lo, hi = r["ref_step_min_rank_ms"], r["ref_step_max_rank_ms"]
                self.assertTrue(0 < lo <= hi)
                self.assertAlmostEqual(r["ref_step_ms"], (lo + hi) / 2, delta=1e-9 * hi)
                self.assertTrue(r["scaling_efficiency"] > 0 and math.isfinite(r["scaling_efficiency"]))
                self.assertGreater(r["compile_s"], 0)
                self.assertNotIn("peak_mem_max_rank_bytes", r)  # the CPU has no allocator peak

    def test_sharded_state_and_parameters(self):
        ddp, zero1, fsdp = (self.rows[s] for s in STACKS)
        self.assertEqual(ddp["state_ratio"], 1.0)
        self.assertEqual(ddp["param_ratio"], 1.0)
        self.assertAlmostEqual(zero1["state_ratio"], 0.5, delta=0.1)  # whole tensors per rank
        self.assertEqual(zero1["param_ratio"], 1.0)
        self.assertAlmostEqual(fsdp["param_ratio"], 0.5, delta=0.01)  # dim-0 shards
        self.assertAlmostEqual(fsdp["state_ratio"], 0.5, delta=0.01)
        self.assertEqual(fsdp["ref_state_bytes"], ddp["ref_state_bytes"])
        self.assertEqual(ddp["param_bytes"], 4 * ddp["params"])  # fp32, tiny's vocabulary unpadded

    def test_only_rank_0_reports(self):
        printed = [l for l in rank_log(self.logs, 0, "stdout").splitlines() if "/manual_time" in l]
        self.assertEqual(len(printed), 3)
        self.assertEqual(rank_log(self.logs, 1, "stdout"), "")

    def test_the_table_has_every_stack(self):
        p = subprocess.run([sys.executable, "-m", "peers.dp.table", self.out], cwd=ROOT,
                           capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        lines = [l for l in p.stdout.splitlines() if l.startswith("| torch_")]
        self.assertEqual([l.split(" | ")[:2] for l in lines],
                         [["| torch_ddp", "2"], ["| torch_zero1", "2"], ["| torch_fsdp", "2"]])

    @unittest.skipUnless(os.environ.get("GPTBENCH_COMPARE"), "needs gptbench-compare")
    def test_gptbench_compare_loads_and_merges_it(self):
        merged = os.path.join(self.work.name, "merged.json")
        p = subprocess.run([os.environ["GPTBENCH_COMPARE"], "merge", merged, self.out, self.out],
                           capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        p = subprocess.run([os.environ["GPTBENCH_COMPARE"], "filters", merged, "mode:torch_ddp",
                            "mode:torch_zero1"], capture_output=True, text=True)
        self.assertIn("over 1 pair(s)", p.stdout + p.stderr)

    @unittest.skipUnless(os.environ.get("GPTBENCH_BINARY"), "needs gptbench")
    def test_names_pair_with_ours(self):
        """Ours' names with mode:X are the peer's with mode:torch_X (one rank, listed by both)."""
        flt = "--benchmark_filter=^model/train_step_dp/"
        ours = subprocess.run([os.environ["GPTBENCH_BINARY"], "--gptbench_device=cpu", flt,
                               "--benchmark_list_tests=true"], capture_output=True, text=True)
        peers = subprocess.run([sys.executable, "-m", "peers.dp", "--gptbench_device=cpu", flt,
                                "--benchmark_list_tests"], cwd=ROOT, capture_output=True, text=True)
        self.assertEqual(peers.returncode, 0, peers.stderr)
        ours_names = [n for n in ours.stdout.split() if "/tiny/" in n]
        self.assertEqual(len(ours_names), 3, ours.stdout + ours.stderr)
        self.assertEqual(sorted(n.replace("/mode:", "/mode:torch_") for n in ours_names),
                         sorted(peers.stdout.split()))

    def test_a_bad_flag_stops_every_rank(self):
        """The first rank to read the flags exits 2 with the reason in its log; torchrun then
        stops the other, which may not have got that far (a race: both import torch first)."""
        with tempfile.TemporaryDirectory() as logs:
            p = torchrun(["--gptbench_device=cpu", "--gptbench_seq=zero"], logs)
            self.assertNotEqual(p.returncode, 0)
            reason = "gptbench-dp-peers: --gptbench_seq=zero: expected a whole number"
            told = [rank for rank in (0, 1) if reason in rank_log(logs, rank, "stderr")]
            self.assertTrue(told, rank_log(logs, 0, "stderr") + rank_log(logs, 1, "stderr"))
            self.assertIn("exitcode: 2", p.stderr)


if __name__ == "__main__":
    unittest.main()
