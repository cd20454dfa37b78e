"""Users' Python implementations (peers/impl.py) through the runner's command line on the CPU:
named in the impl segment beside the peers' rows, checked against the family's reference and
timed, a wrong one failing the family's check, bad --impl values exiting 2; and the Triton
example's registration."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

from peers import impl
from peers.tests import plain_impls
from peers.tests.run_checks import check_peer_run
from peers.tests.test_cli import run

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURE = "peers.tests.plain_impls"
TRITON_EXAMPLE = os.path.join(ROOT, "examples", "triton_softmax", "triton_softmax.py")
CPU = ["--gptbench_device=cpu", "--benchmark_min_time=0.001", "--gptbench_compile_backend=eager"]
SHAPE = "/fp32/{}/attn.tiny/rows:128/cols:16"


def run_json(argv):
    """(exit code, rows by name without /manual_time, document) of a run writing JSON."""
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "out.json")
        code, _, err = run(CPU + [f"--benchmark_out={path}"] + argv)
        if code != 0:
            raise AssertionError(f"exit {code}: {err}")
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    return {r["name"].removesuffix("/manual_time"): r for r in doc["benchmarks"]}, doc


class PythonSoftmax(unittest.TestCase):
    def test_rows_beside_the_peers_checked_and_timed(self):
        before = dict(plain_impls.CALLS)
        rows, doc = run_json([f"--impl_module={FIXTURE}",
                              "--benchmark_filter=^softmax/.*/fp32/.*/attn.tiny/rows:128/"])
        for pass_name in ("fwd", "bwd"):
            names = [f"softmax/{i}{SHAPE.format(pass_name)}" for i in ("inductor", "inductor_naive", "plain")]
            self.assertEqual([n for n in rows if f"/{pass_name}/" in n], names)  # the peers', then ours
            mine = rows[names[-1]]
            self.assertNotIn("error_message", mine)
            self.assertGreater(mine["real_time"], 0)
            self.assertGreater(mine["bytes/s"], 0)
            self.assertEqual(mine["label"], f"python callable {FIXTURE}:softmax_{pass_name} (not compiled)")
            # compile call, check, warm-up, calibration and timed regions all called it
            self.assertGreater(plain_impls.CALLS[pass_name] - before[pass_name], 6)
        self.assertEqual(check_peer_run(doc, "eager", expect_skipped=False), [])
        self.assertEqual(doc["context"]["python_impls"],
                         f"softmax/plain/fwd={FIXTURE}:softmax_fwd; softmax/plain/bwd={FIXTURE}:softmax_bwd")

    def test_a_wrong_callable_fails_the_family_check(self):
        rows, _ = run_json([f"--impl=softmax:fwd:off={FIXTURE}:softmax_off_by_5pct",
                            f"--impl=softmax:fwd:none={FIXTURE}:returns_none",
                            "--benchmark_filter=^softmax/(off|none)/fp32/fwd/attn.tiny/rows:128/"])
        off = rows["softmax/off" + SHAPE.format("fwd")]
        self.assertTrue(off["error_occurred"])
        self.assertRegex(off["error_message"], r"^wrong result: relative error 0\.05 exceeds 2e-05$")
        self.assertEqual(rows["softmax/none" + SHAPE.format("fwd")]["error_message"],
                         "wrong result: output: the callable returned NoneType, not a tensor")

    def test_same_rows_from_a_file_path(self):
        path = os.path.join(ROOT, *FIXTURE.split(".")) + ".py"
        code, out, _ = run(CPU + ["--benchmark_list_tests", f"--impl=softmax:bwd:byfile={path}:softmax_bwd",
                                  "--benchmark_filter=^softmax/byfile/"])
        self.assertEqual(code, 0)
        self.assertIn("softmax/byfile/bf16/bwd/vocab/rows:128/cols:1024/manual_time", out.split())
        self.assertFalse(any("/fwd/" in n for n in out.split()))  # only the pass it was given for


class OtherFamilies(unittest.TestCase):
    def test_layernorm_loss_attention_in_their_launch_forms(self):
        flags = [f"--impl=layernorm:fwd:nograd={FIXTURE}:layernorm_no_grad",
                 f"--impl=layernorm:fwd_bwd:ag={FIXTURE}:layernorm_autograd",
                 f"--impl=loss:fwd_bwd:ce={FIXTURE}:cross_entropy",
                 f"--impl=attention:fwd:sdpa_py={FIXTURE}:attention",
                 "--benchmark_filter=^(layernorm/(nograd|ag)|loss/ce|attention/sdpa_py)/fp32/"
                 "(causal/fwd/B:2/H:4/L:32/d:16)?"]
        rows, doc = run_json(flags)
        timed = ["layernorm/nograd/fp32/fwd/rows:128/cols:128",
                 "layernorm/ag/fp32/fwd_bwd/rows:128/cols:128/launch:eager",
                 "loss/ce/fp32/fwd_bwd/vocab/rows:128/classes:1024/cols:1024/launch:eager",
                 "attention/sdpa_py/fp32/causal/fwd/B:2/H:4/L:32/d:16"]
        for name in timed:
            self.assertIn(name, rows)
            self.assertNotIn("error_message", rows[name], name)
            self.assertTrue(rows[name]["label"].startswith(impl.USER_LABEL))
        for name in ("layernorm/ag/fp32/fwd_bwd/rows:128/cols:128/launch:graph",
                     "loss/ce/fp32/fwd_bwd/vocab/rows:128/classes:1024/cols:1024/launch:graph"):
            self.assertEqual(rows[name]["error_message"],
                             "skipped: launch:graph needs a CUDA GPU (this run is on the CPU)")
        self.assertEqual(check_peer_run(doc, "eager", expect_skipped=True), [])

    def test_a_forward_only_callable_cannot_time_fwd_bwd(self):
        rows, _ = run_json([f"--impl=layernorm:fwd_bwd:nograd={FIXTURE}:layernorm_no_grad",
                            "--benchmark_filter=^layernorm/nograd/fp32/"])
        self.assertTrue(rows["layernorm/nograd/fp32/fwd_bwd/rows:128/cols:128/launch:eager"]
                        ["error_message"].startswith("error: RuntimeError: element 0 of tensors"))


class BadInput(unittest.TestCase):
    def test_bad_impl_values_exit_2_with_one_line(self):
        for value, says in (
                ("--impl=softmax:fwd", "expected FAMILY:PASS:NAME=MODULE:CALLABLE"),
                ("--impl=softmax:fwd:x=no_such_module_anywhere:f", "cannot import no_such_module_anywhere"),
                (f"--impl=softmax:fwd:x={FIXTURE}:missing", f"{FIXTURE} has no attribute 'missing'"),
                (f"--impl=softmax:fwd:x={FIXTURE}:CALLS", "is not callable"),
                (f"--impl=gemm:fwd:x={FIXTURE}:softmax_fwd", "no family 'gemm'"),
                (f"--impl=softmax:fwd_bwd:x={FIXTURE}:softmax_fwd", "passes: fwd, bwd"),
                (f"--impl=softmax:fwd:fused={FIXTURE}:softmax_fwd", "one of softmax's own"),
                (f"--impl=softmax:fwd:a/b={FIXTURE}:softmax_fwd", "not a name segment"),
                ("--impl_module=json", "declares no implementation"),
                ("--impl_module=no/such/file.py", "no file no/such/file.py"),
                ("--impl_module", "needs a value")):
            with self.subTest(value=value):
                code, out, err = run(CPU + ["--benchmark_list_tests", value])
                self.assertEqual((code, out), (2, ""))
                self.assertEqual(len(err.strip().splitlines()), 1, err)
                self.assertIn(value.partition("=")[0], err)
                self.assertIn(says, err)

    def test_the_same_name_twice_exits_2(self):
        code, _, err = run(CPU + ["--benchmark_list_tests", f"--impl_module={FIXTURE}",
                                  f"--impl=softmax:fwd:plain={FIXTURE}:softmax_off_by_5pct"])
        self.assertEqual(code, 2)
        self.assertIn("softmax/fwd/plain is given twice", err)


class TritonExample(unittest.TestCase):
    def test_without_triton_one_clear_line_and_exit_2(self):
        script = ("import sys; sys.modules['triton'] = None\n"  # as where Triton is not installed
                  "from peers.cli import main\n"
                  f"sys.exit(main(['--gptbench_device=cpu', '--benchmark_list_tests', "
                  f"'--impl_module={TRITON_EXAMPLE}']))")
        p = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True)
        self.assertEqual(p.returncode, 2)
        ours = [l for l in p.stderr.splitlines() if l.startswith("gptbench-peers:")]
        self.assertEqual(len(ours), 1, p.stderr)
        self.assertIn("needs Triton, which comes with PyTorch's CUDA wheels", ours[0])
        self.assertEqual(p.stdout, "")

    def test_with_triton_its_rows_are_named_and_skipped_on_the_cpu(self):
        try:
            import triton  # noqa: F401
        except ImportError:
            self.skipTest("Triton is not installed here (test_without_triton covers that)")
        rows, _ = run_json([f"--impl_module={TRITON_EXAMPLE}",
                            "--benchmark_filter=^softmax/triton/fp32/.*/attn.tiny/rows:128/"])
        self.assertEqual(sorted(rows), ["softmax/triton" + SHAPE.format(p) for p in ("bwd", "fwd")])
        for row in rows.values():
            self.assertEqual(row["error_message"],
                             f"skipped: triton ({TRITON_EXAMPLE}:softmax_{row['name'].split('/')[3]}) "
                             "runs on CUDA only (this run is on the CPU)")


if __name__ == "__main__":
    unittest.main()
