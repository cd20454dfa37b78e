"""model/train_step/<size>/fp8/B:b/T:t/opt:torch_fused/attn:sdpa/head:torch/blocks:torch/accum:1/
mode:<torchao|torchao_cg> (--gptbench_fp8, with bf16 among the dtypes): the training step of
train_step.py with every block linear (c_attn, attn_proj, c_fc, mlp_proj) swapped by torchao's
convert_to_float8_training for a Float8Linear of the "tensorwise" recipe (dynamic per-tensor
scales: e4m3 inputs and weights, e5m2 output gradients; the output GEMM with fast accumulation,
the two backward GEMMs without), under bf16 autocast over fp32 weights, then torch.compile:
  torchao     default mode (pairs with mode:eager)
  torchao_cg  mode="reduce-overhead": CUDA graphs (pairs with mode:graph)
The embeddings, LayerNorms, attention and the tied LM head (a matmul with the embedding, not an
nn.Linear) stay bf16. Sizes: the train-step peer's (each --gptbench_models size at B x T), and
with --full also medium and large at B = 16, T = 1024. Counters as train_step.py's (mfu_pct over
the measured bf16 GEMM rate); verified: the loss against the unconverted model's in bf16, eager,
on the same weights and batch. Skipped with the reason: off CUDA, on a GPU of compute capability
below 8.9, without torchao or with one that does not work with this torch."""
import dataclasses
import importlib.metadata
import itertools
import re

import torch
import torch.nn as nn

from peers.case import GEMM_BF16, SkipCase, bench_name, cuda_only, register
from peers.families import train_step
from peers.impl import first_line

TORCHAO_PIN = "0.18.0"  # scripts/bundle-deps.sh bundles this wheel for hosts without network
RECIPE = "tensorwise"
MODES = ("torchao", "torchao_cg")
FULL_SHAPES = (("medium", 16, 1024), ("large", 16, 1024))
BLOCK_LINEAR = re.compile(r"h\.[0-9]+\.(c_attn|attn_proj|c_fc|mlp_proj)")


def block_linear(module, fqn):
    """module_filter_fn: True for the four linears of each block (peers/gpt2.py's names)."""
    return isinstance(module, nn.Linear) and BLOCK_LINEAR.fullmatch(fqn) is not None


def float8_training():
    """torchao.float8's (convert_to_float8_training, Float8LinearConfig), or SkipCase with why."""
    try:
        from torchao.float8 import Float8LinearConfig, convert_to_float8_training
    except Exception as e:  # noqa: BLE001 - also an ImportError/AttributeError of another torch
        why = f"{type(e).__name__}: {first_line(e)}"
        if isinstance(e, ModuleNotFoundError) and e.name == "torchao":
            raise SkipCase(f"skipped: torchao not installed: {why} (pip install torchao=="
                           f"{TORCHAO_PIN}; offline: scripts/bundle-deps.sh, scripts/gpu-env.sh)"
                           ) from None
        raise SkipCase(f"skipped: torchao {installed_version()} cannot be imported with torch "
                       f"{torch.__version__}: {why}") from None
    return convert_to_float8_training, Float8LinearConfig


def installed_version():
    try:
        return importlib.metadata.version("torchao")
    except importlib.metadata.PackageNotFoundError:
        return "(version unknown)"


def require_fp8_gpu(o):
    """SkipCase off CUDA and on a GPU without FP8 tensor cores (compute capability < 8.9)."""
    cuda_only(o, "FP8 training (torchao)")
    cc = torch.cuda.get_device_capability()
    if cc < (8, 9):
        raise SkipCase(f"skipped: FP8 training needs compute capability 8.9 or later "
                       f"({torch.cuda.get_device_name()} is {cc[0]}.{cc[1]})")


def converter(emulate=False):
    """model -> model with its block linears converted (emulate: torchao's fp32 emulation of
    the FP8 GEMMs, which runs on the CPU; the rows never use it)."""
    convert, config_class = float8_training()
    config = config_class.from_recipe_name(RECIPE)
    if emulate:
        config = dataclasses.replace(config, emulate=True)
    return lambda model: convert(model, config=config, module_filter_fn=block_linear)


def make(model_name, mode, B, T, o, peak_bf16):
    require_fp8_gpu(o)
    case = train_step.make(model_name, "torch", mode, o, peak_bf16, B, T, converter())
    case.label = f"torchao {installed_version()} float8 {RECIPE}; {case.label}"
    return case


def shapes(o):
    """(model, B, T): the train-step peer's, then --full's medium and large at B = 16."""
    out = [(m, o.batch, o.seq) for m in o.models]
    return out + [s for s in FULL_SHAPES if o.full and s not in out]


def register_cases(o):
    if not o.fp8 or "bf16" not in o.dtypes:
        return
    for (model_name, B, T), mode in itertools.product(shapes(o), MODES):
        register(bench_name("model", "train_step", model_name, "fp8", f"B:{B}", f"T:{T}",
                            "opt:torch_fused", "attn:sdpa", "head:torch", "blocks:torch",
                            "accum:1", f"mode:{mode}"),
                 lambda a=(model_name, mode, B, T): make(*a, o, o.peaks.get(GEMM_BF16, 0.0)))
