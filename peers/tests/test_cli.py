import contextlib
import io
import json
import os
import tempfile
import unittest

from peers import cli


def run(argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(argv)
    return code, out.getvalue(), err.getvalue()


class Cli(unittest.TestCase):
    def test_bad_flag_is_one_line_and_exit_2(self):
        code, out, err = run(["--gptbench_device=tpu"])
        self.assertEqual(code, 2)
        self.assertEqual(len(err.strip().splitlines()), 1)
        self.assertIn("--gptbench_device=tpu", err)

    def test_names_are_the_cpp_families_with_the_peer_impl(self):
        code, out, _ = run(["--gptbench_device=cpu", "--benchmark_list_tests"])
        self.assertEqual(code, 0)
        names = out.split()
        for expected in (
                "softmax/inductor/bf16/fwd/attn.tiny/rows:128/cols:16/manual_time",
                "softmax/inductor_naive/fp32/bwd/vocab/rows:128/cols:1024/manual_time",
                "layernorm/inductor/bf16/fwd/rows:128/cols:128/manual_time",
                "layernorm/inductor/bf16/fwd_bwd/rows:128/cols:128/launch:graph/manual_time",
                "layernorm/inductor/bf16/fwd_bwd/rows:128/cols:128/launch:eager/manual_time",
                "loss/inductor/fp32/fwd_bwd/vocab/rows:128/classes:1024/cols:1024/launch:eager/manual_time",
                "loss/inductor/fp32/fwd/vocab/rows:128/classes:1024/cols:1024/manual_time",
                "attention/inductor_flex/bf16/causal/fwd_bwd/B:2/H:4/L:64/d:32/launch:graph/manual_time",
                "attention/inductor/bf16/causal/fwd/B:2/H:4/L:64/d:32/manual_time",
                "optim/inductor_adamw/fp32/model:tiny/launch:graph/manual_time",
                "optim/inductor_adamw/fp32/model:tiny/launch:eager/manual_time",
                "model/train_step/tiny/fp32/B:2/T:64/opt:torch_fused/attn:sdpa/head:torch/"
                "blocks:torch/accum:1/mode:inductor_cg/manual_time"):
            self.assertIn(expected, names)
        self.assertEqual(len(names), len(set(names)))
        graph = [n for n in names if "/launch:graph/" in n]
        self.assertEqual([n.replace("/launch:graph/", "/launch:eager/") for n in graph],
                         [n for n in names if "/launch:eager/" in n])  # two rows per case
        self.assertTrue(all("/fwd_bwd/" in n or n.startswith("optim/") for n in graph))

    def test_filter_as_google_benchmark(self):
        _, out, _ = run(["--gptbench_device=cpu", "--benchmark_list_tests",
                         "--benchmark_filter=^optim/"])
        self.assertEqual(len(out.split()), 8)  # four steps, each launch:graph and launch:eager
        _, out, _ = run(["--gptbench_device=cpu", "--benchmark_list_tests",
                         "--benchmark_filter=^optim/.*launch:eager"])
        self.assertEqual(len(out.split()), 4)
        self.assertTrue(all(n.endswith("/launch:eager/manual_time") for n in out.split()))
        _, out, _ = run(["--gptbench_device=cpu", "--benchmark_list_tests",
                         "--benchmark_filter=-^(softmax|attention)/"])
        self.assertFalse(any(n.startswith(("softmax/", "attention/")) for n in out.split()))
        self.assertTrue(any(n.startswith("optim/") for n in out.split()))

    def test_nothing_matched_exits_1(self):
        code, out, _ = run(["--gptbench_device=cpu", "--benchmark_list_tests",
                            "--benchmark_filter=^nothing/"])
        self.assertEqual((code, out), (1, ""))
        code, _, err = run(["--gptbench_device=cpu", "--benchmark_filter=^nothing/"])
        self.assertEqual(code, 1)
        self.assertIn("no benchmark matches", err)

    def test_run_writes_google_benchmark_json_with_a_skipped_row(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "out.json")
            code, _, _ = run(["--gptbench_device=cpu", "--benchmark_min_time=0.001",
                              "--gptbench_compile_backend=eager", f"--benchmark_out={path}",
                              "--benchmark_filter=mode:(pytorch|inductor_cg)/"])
            self.assertEqual(code, 0)
            with open(path, encoding="utf-8") as f:
                doc = json.load(f)
        rows = {r["name"].split("mode:")[1]: r for r in doc["benchmarks"]}
        self.assertEqual(sorted(rows), ["inductor_cg/manual_time", "pytorch/manual_time"])
        cg = rows["inductor_cg/manual_time"]
        self.assertTrue(cg["error_occurred"])
        self.assertIn("skipped: CUDA graphs", cg["error_message"])
        eager = rows["pytorch/manual_time"]
        self.assertGreater(eager["tokens/s"], 0)
        self.assertEqual(eager["label"], "pytorch eager")
        self.assertEqual(doc["context"]["datasheet_bf16_flops"], "n/a")


if __name__ == "__main__":
    unittest.main()
