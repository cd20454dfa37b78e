"""scripts/trace_overlap.py: kernels paired across a one-rank and a several-rank trace, grouped
by how much of their time a collective ran beside them."""
import contextlib
import importlib.util
import io
import json
import os
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location(
    "trace_overlap", os.path.join(HERE, "..", "..", "scripts", "trace_overlap.py"))
to = importlib.util.module_from_spec(spec)
spec.loader.exec_module(to)

GEMM = "nvjet_tst_128x256_64x4_1x2_h_bz_coopA_TNT"
LN = "void gptbench::(anonymous namespace)::ln_backward_kernel<8, __nv_bfloat16>(...)"
NCCL = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"


def kernel(name, ts, dur, grid=(132, 1, 1)):
    return dict(cat="kernel", name=name, ts=ts, dur=dur, ph="X", args={"grid": list(grid)})


class TraceOverlap(unittest.TestCase):
    def write(self, d, name, events):
        path = os.path.join(d, name)
        with open(path, "w") as f:
            json.dump({"traceEvents": events}, f)
        return path

    def test_groups_and_collectives(self):
        # One rank: GEMM 100 µs, LayerNorm 50, GEMM 100. Several: the first GEMM runs beside a
        # collective of 24 CTAs for all its 160 µs, the LayerNorm alone, the second GEMM with a
        # quarter of its time beside the second collective; a kernel of another stream runs
        # first there, which the pairing by order of each name does not mind.
        one = [kernel(GEMM, 0, 100), kernel(LN, 100, 50), kernel(GEMM, 150, 100)]
        many = [kernel(LN, -50, 40), kernel(GEMM, 0, 160), kernel(NCCL, 0, 200, (24, 1, 1)),
                kernel(LN, 300, 50), kernel(GEMM, 400, 100), kernel(NCCL, 475, 100, (24, 1, 1))]
        groups, paired, counts, coll = to.compare(one, many, calls=1)
        self.assertEqual(paired, 3)
        self.assertEqual(counts, (3, 4))
        self.assertEqual(groups[("GEMM", "mostly")], [1, 100.0, 160.0])
        self.assertEqual(groups[("GEMM", "partly")], [1, 100.0, 100.0])
        self.assertEqual(groups[("LayerNorm", "alone")], [1, 50.0, 40.0])  # the first LayerNorm run
        self.assertEqual(coll["kernels_per_call"], 2)
        self.assertAlmostEqual(coll["ms_per_call"], 0.3)
        self.assertEqual(coll["ctas"], {24: 2})
        self.assertAlmostEqual(coll["compute_busy_ms_per_call"][0], 0.25)
        self.assertAlmostEqual(coll["compute_busy_ms_per_call"][1], 0.35)  # 40 + 160 + 50 + 100 µs
        self.assertAlmostEqual(coll["span_ms_per_call"][1], 0.625)  # -50 to 575 µs

    def test_overlap_counts_each_moment_once(self):
        spans = to.merged([(0, 10), (5, 20), (30, 40)])
        self.assertEqual(spans, [[0, 20], [30, 40]])
        self.assertAlmostEqual(to.overlapped_fraction(kernel(GEMM, 10, 20), spans), 0.5)  # [10, 30): 10 of 20 µs
        self.assertEqual(to.group_of(0.0), "alone")
        self.assertEqual(to.group_of(0.5), "partly")
        self.assertEqual(to.group_of(0.51), "mostly")

    def test_main_prints_the_table_and_rejects_bad_input(self):
        with tempfile.TemporaryDirectory() as d:
            one = self.write(d, "one.trace.json", [kernel(GEMM, 0, 100)])
            many = self.write(d, "many.trace.json", [kernel(GEMM, 0, 150), kernel(NCCL, 0, 150, (24, 1, 1))])
            other = self.write(d, "other.trace.json", [kernel(LN, 0, 10)])
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                self.assertEqual(to.main([one, many, "--calls", "1", "--json", os.path.join(d, "o.json")]), 0)
            self.assertIn("| GEMM | mostly | 1 | 0.10 | 0.15 | 1.500 | +0.05 |", out.getvalue())
            with open(os.path.join(d, "o.json")) as f:
                self.assertEqual(json.load(f)["paired"], 1)
            err = io.StringIO()
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
                self.assertEqual(to.main([one, os.path.join(d, "missing.json")]), 2)
                self.assertEqual(to.main([one, other]), 2)
                self.assertEqual(to.main([one, many, "--calls", "0"]), 2)
            self.assertIn("no kernel of the two traces pairs up", err.getvalue())


if __name__ == "__main__":
    unittest.main()
