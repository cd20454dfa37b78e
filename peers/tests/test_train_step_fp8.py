"""The FP8 training-step peer (peers/families/train_step_fp8.py) on the CPU: its names, the
module filter, the reasons it is skipped, and, where torchao is installed, the converted step
built, verified and run with torchao's emulated FP8 GEMMs."""
import builtins
import contextlib
import importlib.util
import sys
import unittest
from unittest import mock

import torch
import torch.nn as nn

from peers import runner
from peers.case import SkipCase, Spec
from peers.families import train_step, train_step_fp8 as fp8
from peers.gpt2 import GPT2
from peers.models import model_config
from peers.tests.test_cli import run
from peers.tests.test_runner import PEAKS, options

HAVE_TORCHAO = importlib.util.find_spec("torchao") is not None
TAIL = "opt:torch_fused/attn:sdpa/head:torch/blocks:torch/accum:1"
BLOCK_LINEARS = [f"h.{i}.{n}" for i in range(2) for n in ("c_attn", "attn_proj", "c_fc", "mlp_proj")]


def listed(*flags):
    code, out, _ = run(["--gptbench_device=cpu", "--benchmark_list_tests",
                        "--benchmark_filter=/fp8/", *flags])
    return out.split() if code == 0 else []


def skip_reason(make):
    return runner.run_spec(Spec("model/train_step/tiny/fp8/x", make), options(), PEAKS, 0)[0]["error_message"]


class Names(unittest.TestCase):
    def test_rows_with_gptbench_fp8(self):
        self.assertEqual(listed("--gptbench_fp8=true"),
                         [f"model/train_step/tiny/fp8/B:2/T:64/{TAIL}/mode:{m}/manual_time"
                          for m in ("torchao", "torchao_cg")])

    def test_full_adds_medium_and_large_at_b16_t1024(self):
        names = listed("--fp8", "--full", "--models=medium")
        self.assertEqual(names, [f"model/train_step/{m}/fp8/B:{b}/T:{t}/{TAIL}/mode:{mode}/manual_time"
                                 for m, b, t in (("medium", 2, 64), ("medium", 16, 1024),
                                                 ("large", 16, 1024))
                                 for mode in ("torchao", "torchao_cg")])
        self.assertEqual(len(listed("--fp8", "--full", "--models=medium", "--batch=16", "--seq=1024")), 4)

    def test_opt_in_and_bf16_only(self):
        self.assertEqual(listed(), [])
        self.assertEqual(listed("--fp8", "--dtypes=fp32"), [])


class ModuleFilter(unittest.TestCase):
    def test_exactly_the_block_linears(self):
        model = GPT2(model_config("tiny"))
        picked = [fqn for fqn, m in model.named_modules() if fp8.block_linear(m, fqn)]
        self.assertEqual(picked, BLOCK_LINEARS)

    def test_nothing_else(self):
        self.assertFalse(fp8.block_linear(nn.Linear(8, 8), "lm_head"))
        self.assertFalse(fp8.block_linear(nn.Linear(8, 8), "h.0.c_attn.inner"))
        self.assertFalse(fp8.block_linear(nn.LayerNorm(8), "h.0.c_fc"))
        self.assertFalse(fp8.block_linear(nn.Embedding(8, 8), "wte"))


class Skipped(unittest.TestCase):
    def test_cpu(self):
        for mode in fp8.MODES:
            why = skip_reason(lambda m=mode: fp8.make("tiny", m, 2, 64, options(), 0.0))
            self.assertEqual(why, "skipped: FP8 training (torchao) runs on CUDA only (this run is on the CPU)")

    def test_gpu_without_fp8(self):
        with mock.patch.object(torch.cuda, "get_device_capability", return_value=(8, 0)), \
                mock.patch.object(torch.cuda, "get_device_name", return_value="NVIDIA A100"):
            with self.assertRaises(SkipCase) as e:
                fp8.require_fp8_gpu(options(cuda=True))
        self.assertEqual(str(e.exception), "skipped: FP8 training needs compute capability 8.9 "
                                           "or later (NVIDIA A100 is 8.0)")

    def test_torchao_not_installed(self):
        missing = ModuleNotFoundError("No module named 'torchao'", name="torchao")  # Python's own
        with failing_import(missing), mock.patch.object(fp8, "require_fp8_gpu"):
            why = skip_reason(lambda: fp8.make("tiny", "torchao", 2, 64, options(), 0.0))
        self.assertTrue(why.startswith("skipped: torchao not installed: ModuleNotFoundError: "
                                       "No module named 'torchao'"), why)
        self.assertIn(f"torchao=={fp8.TORCHAO_PIN}", why)

    def test_torchao_that_does_not_work_with_this_torch(self):
        for e in (AttributeError("module 'torch' has no attribute 'int1'"),
                  ImportError("cannot import name 'foo' from 'torch._inductor'")):
            with failing_import(e), self.assertRaises(SkipCase) as caught:
                fp8.float8_training()
            why = str(caught.exception)
            self.assertTrue(why.startswith("skipped: torchao "), why)
            self.assertIn(f"cannot be imported with torch {torch.__version__}: "
                          f"{type(e).__name__}: {e}", why)


@contextlib.contextmanager
def failing_import(error):
    """import torchao... raises error (torchao's modules forgotten meanwhile)."""
    real = builtins.__import__

    def fake(name, *a, **kw):
        if name.partition(".")[0] == "torchao":
            raise error
        return real(name, *a, **kw)
    with mock.patch.dict(sys.modules), mock.patch.object(builtins, "__import__", fake):
        for name in [n for n in sys.modules if n.partition(".")[0] == "torchao"]:
            del sys.modules[name]
        yield


@unittest.skipUnless(HAVE_TORCHAO, "torchao not installed")
class WithTorchao(unittest.TestCase):
    def test_converts_the_block_linears_only(self):
        from torchao.float8.float8_linear import Float8Linear
        model = fp8.converter(emulate=True)(GPT2(model_config("tiny")))
        self.assertEqual([n for n, m in model.named_modules() if isinstance(m, Float8Linear)],
                         BLOCK_LINEARS)

    def test_step_builds_verifies_and_runs(self):
        o = options(backend="eager")
        case = train_step.make("tiny", "torch", "torchao", o, 0.0, 2, 32, fp8.converter(emulate=True))
        case.run()
        self.assertEqual(case.verify(), "")
        case.run()


if __name__ == "__main__":
    unittest.main()
