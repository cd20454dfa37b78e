import json
import os
import tempfile
import unittest

import torch

from peers import runner
from peers.case import COPY, GEMM_BF16, GEMM_FP32, Case, SkipCase, Spec
from peers.options import parse
from peers.tests.run_checks import check_peer_run
from peers.trace import TRACE_CALLS


def options(**kw):
    o = parse(["--gptbench_device=cpu", "--benchmark_min_time=0.001"], cuda_available=False)
    for k, v in kw.items():
        setattr(o, k, v)
    return o


PEAKS = {COPY: 100.0, GEMM_BF16: 1000.0, GEMM_FP32: 500.0}


class Counters(unittest.TestCase):
    def test_rates_and_peak_as_fixtures_case_slot(self):
        c = Case(run=lambda: None, bytes=50.0, peak=COPY, counters={"n": 3.0, "per_s": lambda s: 1 / s})
        k = runner.counters_for(c, 0.5, PEAKS, -1)
        self.assertEqual(k, {"bytes/s": 100.0, "%peak": 100.0, "n": 3.0, "per_s": 2.0})
        g = Case(run=lambda: None, flops=100.0, bytes=10.0, peak=GEMM_BF16)
        k = runner.counters_for(g, 1.0, PEAKS, 123)
        self.assertEqual((k["FLOP/s"], k["%peak"], k["peak_mem_bytes"]), (100.0, 10.0, 123.0))


class Failures(unittest.TestCase):
    def test_reasons(self):
        self.assertEqual(runner.failure_message(SkipCase("skipped: why")), "skipped: why")
        self.assertEqual(runner.oom_message("CUDA out of memory. Tried to allocate 2.50 GiB. GPU"),
                         "out of memory (needs ≈ 2.50 GiB more)")
        self.assertTrue(runner.failure_message(NotImplementedError("no\nmore")).startswith("unsupported: no"))
        self.assertEqual(runner.failure_message(ValueError("bad\ntrace")), "error: ValueError: bad")


class RunSpec(unittest.TestCase):
    def test_profile_writes_a_trace_of_the_case_before_timing(self):
        with tempfile.TemporaryDirectory() as d:
            a = torch.randn(32, 32)
            spec = Spec("f/impl/mm:32", lambda: Case(run=lambda: torch.mm(a, a), flops=1.0, peak=GEMM_FP32))
            rows = runner.run_spec(spec, options(profile_dir=d), PEAKS, 0)
            self.assertNotIn("error_message", rows[0])
            path = os.path.join(d, "f_impl_mm_32.trace.json")
            with open(path) as f:
                trace = json.load(f)
            mm = [e for e in trace["traceEvents"] if e.get("name") == "aten::mm"]
            self.assertEqual(len(mm), TRACE_CALLS)

    def test_repetitions_give_rows_and_aggregates(self):
        calls = []
        spec = Spec("f/impl/x", lambda: Case(run=lambda: calls.append(1), bytes=8.0, peak=COPY,
                                              label="backend=eager (no code generation)"))
        rows = runner.run_spec(spec, options(repetitions=2), PEAKS, 0)
        self.assertEqual([r["run_type"] for r in rows], ["iteration"] * 2 + ["aggregate"] * 4)
        self.assertGreater(len(calls), 6)  # compile call, warm-up, calibration, timed regions
        self.assertIn("compile_s", rows[0])
        self.assertEqual(rows[0]["label"], "backend=eager (no code generation)")

    def test_wrong_result_and_skip_become_rows_with_the_reason(self):
        wrong = Spec("f/impl/w", lambda: Case(run=lambda: None, verify=lambda: "off by one"))
        self.assertEqual(runner.run_spec(wrong, options(), PEAKS, 0)[0]["error_message"],
                         "wrong result: off by one")
        off = options(verify=False)
        self.assertNotIn("error_message", runner.run_spec(wrong, off, PEAKS, 0)[0])

        def skip():
            raise SkipCase("skipped: needs a GPU")
        row = runner.run_spec(Spec("f/impl/s", skip), options(), PEAKS, 3)[0]
        self.assertEqual((row["error_message"], row["family_index"]), ("skipped: needs a GPU", 3))


class Families(unittest.TestCase):
    """Each family's cases, built, verified and timed on the CPU with backend=eager."""

    def test_every_family_runs_and_verifies(self):
        from peers.cli import register_all, selected
        o = options(backend="eager")
        o.peaks = PEAKS
        specs = selected(register_all(o), r"rows:128/cols:16/|fwd_bwd/rows|fwd_bwd/vocab|"
                                          r"inductor/fp32/causal/fwd_bwd/B:2/H:4/L:32/d:16|"
                                          r"inductor_(adamw|lion|adafactor)|mode:pytorch")
        self.assertGreaterEqual(len(specs), 14)
        rows = [r for i, s in enumerate(specs) for r in runner.run_spec(s, o, PEAKS, i)]
        doc = {"context": {k: "x" for k in ("device", "torch", "peer", "compile_backend",
                                            "peak_copy_bytes_per_s", "peak_gemm_bf16_flops",
                                            "datasheet_bf16_flops")}, "benchmarks": rows}
        self.assertEqual(check_peer_run(doc, "eager", expect_skipped=False), [])
        graph = [r for r in rows if "/launch:graph/" in r["name"]]
        self.assertGreaterEqual(len(graph), 6)  # layernorm, loss, attention fwd_bwd, the steps
        self.assertTrue(all("needs a CUDA GPU" in r["error_message"] for r in graph))

    def test_a_wrong_kernel_is_caught(self):
        from peers.families import softmax
        o = options(backend="eager")
        broken = softmax.FNS["inductor"]
        softmax.FNS["inductor"] = (lambda x: torch.softmax(x, -1) * 1.01, broken[1])
        try:
            case = softmax.make("inductor", "fp32", False, 64, 16, o)
            self.assertIn("relative error", case.verify())
        finally:
            softmax.FNS["inductor"] = broken


if __name__ == "__main__":
    unittest.main()
