"""The data-parallel peers' command line, names and checks in one process (peers/dp/); the run
on two ranks under torchrun is test_dp_torchrun."""
import contextlib
import io
import math
import os
import unittest
from unittest import mock

from peers import options as opts
from peers.dp import cli
from peers.dp.ranks import RankEnv, rank_env

CPU = ["--gptbench_device=cpu"]
PREFIX = "model/train_step_dp/tiny/fp32/B:2/T:64/opt:adamw/attn:sdpa/head:torch/blocks:torch/"


def run(argv, env=None):
    out, err = io.StringIO(), io.StringIO()
    with mock.patch.dict(os.environ, env or {}), contextlib.redirect_stdout(out), \
            contextlib.redirect_stderr(err):
        code = cli.main(argv)
    return code, out.getvalue(), err.getvalue()


class CommandLine(unittest.TestCase):
    def test_bad_flag_is_one_line_and_exit_2(self):
        for argv in (["--gptbench_device=tpu"], ["--no_such_flag"], ["--gptbench_batch=0"],
                     ["--gptbench_compile_backend=tvm"]):
            code, out, err = run(argv)
            self.assertEqual(code, 2, argv)
            self.assertEqual(len(err.strip().splitlines()), 1, err)
            self.assertIn(argv[0], err)
            self.assertEqual(out, "")

    def test_names_are_ours_with_the_stack_in_the_mode_segment(self):
        code, out, _ = run(CPU + ["--benchmark_list_tests"])
        self.assertEqual(code, 0)
        self.assertEqual(out.split(), [
            PREFIX + "ranks:1/mode:torch_ddp/iterations:3/manual_time",
            PREFIX + "ranks:1/mode:torch_zero1/iterations:3/manual_time",
            PREFIX + "ckpt:all/ranks:1/mode:torch_fsdp/iterations:3/manual_time"])

    def test_the_world_comes_from_the_launcher(self):
        code, out, _ = run(CPU + ["--benchmark_list_tests", "--gptbench_batch=4", "--gptbench_seq=32"],
                           {"RANK": "0", "WORLD_SIZE": "4", "LOCAL_RANK": "0"})
        self.assertEqual(code, 0)
        self.assertTrue(all("/B:4/T:32/" in n and "/ranks:4/" in n for n in out.split()), out)
        code, out, _ = run(CPU + ["--benchmark_list_tests"], {"RANK": "1", "WORLD_SIZE": "2"})
        self.assertEqual((code, out), (0, ""))  # only rank 0 prints

    def test_bad_rank_variables_exit_2(self):
        for env in ({"RANK": "2", "WORLD_SIZE": "2"}, {"RANK": "x", "WORLD_SIZE": "2"},
                    {"WORLD_SIZE": "2"}):
            code, _, err = run(CPU + ["--benchmark_list_tests"], env)
            self.assertEqual(code, 2, env)
            self.assertIn("gptbench-dp-peers:", err)

    def test_filter_as_google_benchmark(self):
        code, out, _ = run(CPU + ["--benchmark_list_tests", "--benchmark_filter=mode:torch_(ddp|fsdp)/"])
        self.assertEqual(code, 0)
        self.assertEqual([n.split("/mode:")[1] for n in out.split()],
                         ["torch_ddp/iterations:3/manual_time", "torch_fsdp/iterations:3/manual_time"])
        code, out, _ = run(CPU + ["--benchmark_list_tests", "--benchmark_filter=-ckpt:all"])
        self.assertEqual(len(out.split()), 2)
        code, _, err = run(CPU + ["--benchmark_filter=^softmax/"])
        self.assertEqual(code, 1)
        self.assertIn("no benchmark matches", err)

    def test_gpu_names_pair_with_ours_fused_step(self):
        o = opts.parse(["--gptbench_models=medium", "--gptbench_batch=16"], cuda_available=True)
        from peers.dp.case import specs
        ours = "model/train_step_dp/medium/bf16/B:16/T:1024/opt:adamw/attn:sdpa/head:fused/blocks:fused/"
        self.assertEqual([s.name for s in specs(o, 4)], [
            ours + "ranks:4/mode:torch_ddp/iterations:10", ours + "ranks:4/mode:torch_zero1/iterations:10",
            ours + "ckpt:all/ranks:4/mode:torch_fsdp/iterations:10"])


class RankVariables(unittest.TestCase):
    def test_torchrun_and_plain(self):
        self.assertEqual(rank_env({}), RankEnv())
        self.assertEqual(rank_env({"RANK": "3", "WORLD_SIZE": "4", "LOCAL_RANK": "1"}),
                         RankEnv(3, 4, 1, launched=True))
        self.assertEqual(rank_env({"RANK": "1", "WORLD_SIZE": "2"}).local_rank, 1)


class Settle(unittest.TestCase):
    """Untimed steps before each side is timed, as ours' settle_s."""

    def setUp(self):
        from peers.dp import case
        self.case, self.steps = case, 0

    def step(self):
        self.steps += 1
        return 0.3

    def test_steps_until_their_times_add_up(self):
        self.case.settle(self.step, 1.0)
        self.assertEqual(self.steps, 4)  # 0.3, 0.6, 0.9, 1.2

    def test_the_ranks_agree_on_the_largest_sum(self):
        seen = []

        def agreed_max(v):  # another rank has 0.5 more already
            seen.append(v)
            return v + 0.5
        self.case.settle(self.step, 1.0, agreed_max)
        self.assertEqual(self.steps, 2)
        self.assertEqual(len(seen), 3)  # one agreement per step, and the last that stops them

    def test_none_on_the_cpu_plan(self):
        self.case.settle(self.step, 0.0, agreed_max=lambda v: self.fail("no collective for none"))
        self.assertEqual(self.steps, 0)
        cuda = opts.parse([], cuda_available=True)
        self.assertEqual(self.case.plan_for(cuda).settle_s, self.case.SETTLE_S)
        self.assertEqual(self.case.plan_for(opts.parse(CPU, cuda_available=False)).settle_s, 0.0)


class Check(unittest.TestCase):
    """The check before timing, on a real one-rank Gloo group and a real stack."""

    @classmethod
    def setUpClass(cls):
        import torch  # noqa: F401
        from peers.dp import case
        from peers.dp.ranks import Ranks
        cls.case = case
        cls.ranks = Ranks(RankEnv(), cuda=False)
        cls.o = opts.parse(CPU + ["--gptbench_compile_backend=eager"], cuda_available=False)
        cls.cfg = case.model_config("tiny")
        cls.trainer = case.Trainer("torch_ddp", cls.cfg, cls.ranks.group, cls.ranks, cls.o)

    @classmethod
    def tearDownClass(cls):
        cls.trainer = None
        cls.ranks.close()

    def test_first_loss_must_be_near_ln_v(self):
        stack, ln_v = self.trainer.stack, math.log(self.cfg.vocab)
        self.assertEqual(self.case.check(ln_v + 0.1, stack, self.cfg, self.ranks), "")
        wrong = self.case.check(ln_v + 2.0, stack, self.cfg, self.ranks)
        self.assertIn("first-step loss", wrong)
        self.assertIn(f"{ln_v:.4f}", wrong)
        self.assertIn("first-step loss", self.case.check(math.nan, stack, self.cfg, self.ranks))

    def test_a_step_starts_near_ln_v_and_trains(self):
        first = self.trainer.step().item()
        self.assertLess(abs(first - math.log(self.cfg.vocab)), self.case.LOSS_TOLERANCE)
        state = self.case.stacks.state_bytes(self.trainer.stack)
        params = self.case.stacks.parameter_bytes(self.trainer.stack)
        self.assertEqual(params, 4 * self.case.param_count(self.cfg))  # tiny: 1,024 = padded
        self.assertEqual(state, 2 * params + 4 * len(list(self.trainer.stack.model.parameters())))

    def test_an_error_is_agreed_on(self):
        self.assertEqual(self.ranks.agree_error(""), "")
        self.assertEqual(self.ranks.agree_error("skipped: out of memory"), "skipped: out of memory")

    def test_one_rank_is_its_own_mean_min_and_max(self):
        self.assertEqual((self.ranks.mean(2.5), self.ranks.min(2.5), self.ranks.max(2.5)), (2.5, 2.5, 2.5))

    def _row(self, stack, argv=()):
        o = opts.parse(CPU + ["--gptbench_compile_backend=eager", *argv], cuda_available=False)
        spec = next(s for s in self.case.specs(o, 1) if s.stack == stack)
        rows = self.case.run_case(spec, self.ranks, o, 0.0, 7)
        self.assertEqual(len(rows), 1)
        self.assertEqual(rows[0]["family_index"], 7)
        self.assertEqual(rows[0]["name"], spec.name + "/manual_time")
        return rows[0]

    def test_a_stack_that_cannot_run_is_a_skipped_row_with_its_reason(self):
        def unsupported(*args):
            raise NotImplementedError("fully_shard on this device\nsecond line")
        with mock.patch.dict(self.case.stacks.BUILDERS, {"torch_fsdp": unsupported}):
            row = self._row("torch_fsdp")
        self.assertTrue(row["error_occurred"])
        self.assertEqual(row["error_message"], "unsupported: fully_shard on this device")
        row = self._row("torch_ddp", ["--gptbench_seq=256"])
        self.assertEqual(row["error_message"], "skipped: T = 256 exceeds the model's context of 128")


if __name__ == "__main__":
    unittest.main()
