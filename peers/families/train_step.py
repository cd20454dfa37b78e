"""model/train_step/<size>/<precision>/B:b/T:t/opt:torch_fused/attn:sdpa/head:torch/blocks:torch/
accum:1/mode:<mode>: one GPT-2 training step of peers/gpt2.py (the architecture of
model/gpt2.cpp, vocabulary 50,257 as head:torch) as bench/train_step.cpp times it: a synthetic
batch drawn on the CPU and copied from pinned memory, forward (bf16 autocast over fp32 weights
on a GPU, fp32 on the CPU), fp32 cross-entropy, backward, AdamW(fused=True) (lr 3e-4, betas
0.9/0.999, eps 1e-8, weight decay 0.01), gradients cleared. Modes (the name's last segment):
  pytorch            eager PyTorch from Python (pairs with mode:eager)
  inductor           the model under torch.compile, default mode (pairs with mode:eager)
  inductor_cg        torch.compile(mode="reduce-overhead"): CUDA graphs (pairs with mode:graph)
  inductor_autotune  torch.compile(mode="max-autotune-no-cudagraphs") (--full)
Precision fp8, modes torchao and torchao_cg (--gptbench_fp8): peers/families/train_step_fp8.py.
--full also runs every mode with head:padded (the vocabulary padded to 50,304, as nanoGPT).
Counters: tokens/s, step_ms, mfu_pct (model FLOPs over the measured bf16 GEMM rate) and
mfu_datasheet_pct (over the GPU's datasheet dense bf16 peak, when known); verified: the
compiled model's loss against the eager model's on the same weights and batch."""
import itertools

import torch

from peers.case import GEMM_BF16, Case, SkipCase, bench_name, compiled, cuda_only, register
from peers.device_info import datasheet_bf16_flops
from peers.gpt2 import GPT2, model_flops_per_token
from peers.models import model_config
from peers.tensors import autocast, device_of
from peers.verify import check_close

COMPILE_MODES = {"inductor": None, "inductor_cg": "reduce-overhead",
                 "inductor_autotune": "max-autotune-no-cudagraphs",
                 "torchao": None, "torchao_cg": "reduce-overhead"}  # train_step_fp8.py's


def cuda_graphs(mode):
    return mode.endswith("_cg")


def modes(o):
    return ("pytorch", "inductor", "inductor_cg") + (("inductor_autotune",) if o.full else ())


def compile_model(model, mode, o):
    if mode == "pytorch":
        return model, "pytorch eager"
    return compiled(model, o, COMPILE_MODES[mode])


def make(model_name, head, mode, o, peak_bf16, B=None, T=None, convert=None):
    """B, T: the options' unless given. convert(model): a module swap applied before compiling
    (train_step_fp8.py's FP8 linears); the check is then against the unconverted model, eager,
    on the same weights (a GPT2 loaded from the converted model's state dict)."""
    dev, cfg, bf16 = device_of(o), model_config(model_name), o.cuda
    B, T = B or o.batch, T or o.seq
    if cuda_graphs(mode):
        cuda_only(o, "CUDA graphs (mode=reduce-overhead)")
    if T > cfg.n_ctx:
        raise SkipCase(f"skipped: T = {T} exceeds the model's context of {cfg.n_ctx}")
    torch.manual_seed(1234)
    model = GPT2(cfg, pad_vocab=head == "padded").to(dev).train()
    if convert is not None:
        model = convert(model)
    fused = dict(fused=True) if dev.type == "cuda" else {}
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, betas=(0.9, 0.999), eps=1e-8,
                            weight_decay=0.01, **fused)
    net, label = compile_model(model, mode, o)
    gen = torch.Generator().manual_seed(1235)
    pin = dev.type == "cuda"
    idx_h = torch.empty(B, T, dtype=torch.long, pin_memory=pin)
    tgt_h = torch.empty_like(idx_h, pin_memory=pin)

    def batch():
        tokens = torch.randint(cfg.vocab, (B, T + 1), generator=gen)
        idx_h.copy_(tokens[:, :-1])
        tgt_h.copy_(tokens[:, 1:])
        return idx_h.to(dev, non_blocking=True), tgt_h.to(dev, non_blocking=True)

    def loss_of(fn, idx, tgt):
        with autocast(bf16, dev):
            return fn(idx, tgt)

    def reference(idx, tgt):
        if convert is None:
            return loss_of(model, idx, tgt).detach()
        ref = GPT2(cfg, pad_vocab=head == "padded").to(dev)
        ref.load_state_dict(model.state_dict())
        with torch.no_grad():
            return loss_of(ref, idx, tgt)

    def step():
        if cuda_graphs(mode):
            torch.compiler.cudagraph_mark_step_begin()
        loss = loss_of(net, *batch())
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    def verify():
        idx, tgt = batch()
        if cuda_graphs(mode):
            torch.compiler.cudagraph_mark_step_begin()
        mine = loss_of(net, idx, tgt).detach().clone()  # with grad: no second (inference) graph
        ref = reference(idx, tgt)
        tol = 2e-2 if bf16 or convert else 1e-4  # bf16 autocast; FP8 GEMMs (not in the reference)
        return check_close(mine.reshape(1), ref.reshape(1), tol, "loss")

    params = sum(p.numel() for p in model.parameters())
    flops = model_flops_per_token(params, cfg, T) * B * T
    ds = datasheet_bf16_flops(torch.cuda.get_device_name(dev)) if dev.type == "cuda" else 0.0
    counters = {"tokens/s": lambda s: B * T / s, "step_ms": lambda s: 1e3 * s,
                "mfu_pct": lambda s: 100.0 * flops / s / peak_bf16 if peak_bf16 > 0 else 0.0}
    if ds > 0:
        counters["mfu_datasheet_pct"] = lambda s: 100.0 * flops / s / ds
    return Case(run=step, verify=verify, flops=flops, peak=GEMM_BF16, label=label,
                counters=counters)


def precision(o):
    return "bf16" if o.cuda else "fp32"


def heads(o):
    """torch: vocabulary 50,257 (head:torch's); padded (--full): the embedding padded to 50,304
    rows as nanoGPT's, the loss over the real tokens (the LM-head GEMMs of head:fused, with
    PyTorch's cross-entropy compiled instead of ours)."""
    return ("torch", "padded") if o.full else ("torch",)


def register_cases(o):
    for model_name, head, mode in itertools.product(o.models, heads(o), modes(o)):
        register(bench_name("model", "train_step", model_name, precision(o), f"B:{o.batch}",
                            f"T:{o.seq}", "opt:torch_fused", "attn:sdpa", f"head:{head}",
                            "blocks:torch", "accum:1", f"mode:{mode}"),
                 lambda a=(model_name, head, mode): make(*a, o, o.peaks.get(GEMM_BF16, 0.0)))
