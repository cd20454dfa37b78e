"""scripts/kernel_classes.py: the class of kernel names both sides' traces hold, and its table."""
import contextlib
import importlib.util
import io
import json
import os
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location(
    "kernel_classes", os.path.join(HERE, "..", "..", "scripts", "kernel_classes.py"))
kc = importlib.util.module_from_spec(spec)
spec.loader.exec_module(kc)


def trace(events):
    return {"traceEvents": [dict(cat=c, name=n, dur=d, ph="X", ts=0) for c, n, d in events]}


class KernelClasses(unittest.TestCase):
    def test_names_of_both_sides(self):
        cases = {
            "nvjet_tst_128x256_64x4_1x2_h_bz_coopA_TNT": "GEMM",
            "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64": "GEMM",
            "triton_tem_fused_addmm_0": "GEMM",
            "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_3": "attention",
            "void pytorch_flash::flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<...>": "attention",
            "triton_per_fused_add_native_layer_norm_native_layer_norm_backward_7": "LayerNorm",
            "void gptbench::(anonymous namespace)::ln_backward_kernel<8, __nv_bfloat16>(...)": "LayerNorm",
            "void cudnn::fusion::compute_dot_do_o_specialized<true, 64>(...)": "attention",
            "void gptbench::column_sum_partial_kernel<__nv_bfloat16>(...)": "reduction",
            "void gptbench::(anonymous namespace)::ce_forward_kernel<__nv_bfloat16, 8>(...)": "cross-entropy",
            "triton_red_fused__log_softmax_nll_loss_forward_3": "cross-entropy",
            "void gptbench::cross_entropy_fwd_kernel<...>": "cross-entropy",
            "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<FusedAdamMathFunctor>": "optimizer",
            "triton_poi_fused_gelu_gelu_backward_5": "GELU / bias",
            "triton_poi_fused__to_copy_2": "cast / copy / fill",
            "Memcpy HtoD (Pinned -> Device)": "cast / copy / fill",
            "void at::native::vectorized_elementwise_kernel<4, AddFunctor>": "other elementwise",
            "some_unknown_kernel": "other",
        }
        for name, cls in cases.items():
            with self.subTest(name=name):
                self.assertEqual(kc.kernel_class(name), cls)

    def test_table_per_call_and_exit_codes(self):
        with tempfile.TemporaryDirectory() as d:
            a, b = os.path.join(d, "ours.trace.json"), os.path.join(d, "peer.trace.json")
            with open(a, "w") as f:  # 3 calls: 3 GEMMs of 1 ms, one LayerNorm of 0.6 ms; a CPU op
                json.dump(trace([("kernel", "nvjet_gemm", 1000)] * 3 +
                                [("kernel", "layer_norm_fwd", 600), ("cpu_op", "aten::mm", 9e9)]), f)
            with open(b, "w") as f:
                json.dump(trace([("kernel", "triton_tem_fused_mm_1", 1500)] * 3), f)
            out, js = io.StringIO(), os.path.join(d, "c.json")
            with contextlib.redirect_stdout(out):
                self.assertEqual(kc.main([a, b, "--json", js, "--names", "ours,peer"]), 0)
            text = out.getvalue()
            self.assertIn("| class | `ours` ms | `peer` ms |", text)
            self.assertIn("| GEMM | 1.00 | 1.50 |", text)
            self.assertIn("| LayerNorm | 0.20 | 0.00 |", text)
            self.assertIn("| **GPU total** | **1.20** | **1.50** |", text)
            with open(js) as f:
                ours = json.load(f)[a]
            self.assertEqual(sorted(ours), ["GEMM", "LayerNorm"])
            self.assertAlmostEqual(ours["LayerNorm"], 0.2)
            with open(os.path.join(d, "bad.json"), "w") as f:
                f.write("{")
            with contextlib.redirect_stderr(io.StringIO()):
                self.assertEqual(kc.main([os.path.join(d, "bad.json")]), 2)
                self.assertEqual(kc.main([os.path.join(d, "missing.json")]), 2)
                self.assertEqual(kc.main([a, b, "--names", "one"]), 2)


if __name__ == "__main__":
    unittest.main()
