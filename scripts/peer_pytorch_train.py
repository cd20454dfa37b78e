#!/usr/bin/env python3
"""The PyTorch-from-Python peer of model/train_step (docs/train_step.md).

GPT-2 small (the same architecture as model/gpt2.cpp: pre-LayerNorm blocks, fused QKV, SDPA
causal attention, tanh-GELU MLP, LM head tied to the token embedding, vocabulary 50257),
eager mode, torch.optim.AdamW(fused=True) with the suite's hyper-parameters (lr 3e-4, betas
0.9/0.999, eps 1e-8, weight decay 0.01), bf16 autocast over fp32 weights, B=8, T=1024,
synthetic tokens drawn on the CPU and copied from pinned memory each step — the step that
`model/train_step/small/bf16/B:8/T:1024/opt:torch_fused/attn:sdpa/head:torch/blocks:torch/accum:1/mode:eager` times.

Prints one JSON object: tokens/s (mean over the measured steps), step times, peak memory,
versions and device. Run it in the same run on the GPU host as gptbench so the two share a GPU:

    python3 scripts/peer_pytorch_train.py --steps 50 --warmup 10 > results/peer.json
"""
import argparse
import contextlib
import json
import math
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

SIZES = {  # (layers, heads, d_model), as model/ defines them
    "small": (12, 12, 768),
    "medium": (24, 16, 1024),
    "large": (36, 20, 1280),
    "xl": (48, 25, 1600),
}


class Block(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.h = h
        self.ln_1 = nn.LayerNorm(d)
        self.c_attn = nn.Linear(d, 3 * d)
        self.attn_proj = nn.Linear(d, d)
        self.ln_2 = nn.LayerNorm(d)
        self.c_fc = nn.Linear(d, 4 * d)
        self.mlp_proj = nn.Linear(4 * d, d)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, self.h, C // self.h).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.attn_proj(y.transpose(1, 2).contiguous().view(B, T, C))
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


class GPT2(nn.Module):
    def __init__(self, n_layer, n_head, d, vocab=50257, n_ctx=1024, pad_vocab=False):
        super().__init__()
        self.vocab = vocab
        rows = (vocab + 63) // 64 * 64 if pad_vocab else vocab  # as GPT2Config::pad_vocab
        self.wte = nn.Embedding(rows, d)
        self.wpe = nn.Embedding(n_ctx, d)
        self.h = nn.ModuleList(Block(d, n_head) for _ in range(n_layer))
        self.ln_f = nn.LayerNorm(d)
        std, proj_std = 0.02, 0.02 / math.sqrt(2 * n_layer)
        for name, p in self.named_parameters():
            if name.endswith("bias"):
                nn.init.zeros_(p)
            elif name.endswith("proj.weight"):
                nn.init.normal_(p, 0.0, proj_std)
            elif p.dim() == 2:
                nn.init.normal_(p, 0.0, std)
        with torch.no_grad():
            self.wte.weight[vocab:].zero_()  # padding rows (none unless pad_vocab)

    def forward(self, idx, targets):
        T = idx.size(1)
        x = self.wte(idx) + self.wpe(torch.arange(T, device=idx.device))
        for b in self.h:
            x = b(x)
        logits = (self.ln_f(x) @ self.wte.weight.t())[..., : self.vocab]  # tied LM head
        return F.cross_entropy(logits.reshape(-1, self.vocab).float(), targets.view(-1))


def kernel_profile(step, steps, top=40):
    """GPU time per step of each kernel (by name) over `steps` traced steps, largest first."""
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(steps):
            step()
    rows = [(e.key, e.self_device_time_total / 1e3 / steps, e.count / steps)
            for e in prof.key_averages() if e.self_device_time_total > 0]
    rows.sort(key=lambda r: -r[1])
    total = sum(r[1] for r in rows)
    return {"kernel_ms_per_step": total,
            "top": [{"kernel": k[:160], "ms": round(ms, 4), "calls": round(c, 2),
                     "share": round(ms / total, 4)} for k, ms, c in rows[:top]]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="small", choices=sorted(SIZES))
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--pad-vocab", action="store_true",
                    help="pad the vocabulary to a multiple of 64 (50304) as nanoGPT does; the "
                         "loss still covers the 50257 real tokens")
    ap.add_argument("--cudnn-attention", action="store_true",
                    help="SDPA with only its cuDNN backend (the suite's attn:cudnn) instead of "
                         "PyTorch's default choice (FlashAttention-2 first)")
    ap.add_argument("--profile", type=int, default=0, metavar="STEPS",
                    help="after the measured steps, trace STEPS more with torch.profiler and "
                         "add the GPU kernels' time per step (largest first) as 'profile'")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print(json.dumps({"error": "no CUDA GPU"}))
        return 2

    def sdpa_backends():
        if not args.cudnn_attention:
            return contextlib.nullcontext()
        from torch.nn.attention import SDPBackend, sdpa_kernel
        return sdpa_kernel([SDPBackend.CUDNN_ATTENTION])

    dev = torch.device("cuda")
    torch.manual_seed(args.seed)
    n_layer, n_head, d = SIZES[args.model]
    model = GPT2(n_layer, n_head, d, pad_vocab=args.pad_vocab).to(dev)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, betas=(0.9, 0.999), eps=1e-8,
                            weight_decay=0.01, fused=True)
    gen = torch.Generator().manual_seed(args.seed + 1)
    vocab = model.vocab
    idx_h = torch.empty(args.batch, args.seq, dtype=torch.long).pin_memory()
    tgt_h = torch.empty_like(idx_h).pin_memory()

    def step():
        tokens = torch.randint(vocab, (args.batch, args.seq + 1), generator=gen)
        idx_h.copy_(tokens[:, :-1])
        tgt_h.copy_(tokens[:, 1:])
        idx = idx_h.to(dev, non_blocking=True)
        tgt = tgt_h.to(dev, non_blocking=True)
        with torch.autocast("cuda", dtype=torch.bfloat16), sdpa_backends():
            loss = model(idx, tgt)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        return loss

    first_loss = None
    warm = []
    for i in range(args.warmup):
        t0 = time.perf_counter()
        loss = step()
        warm.append(time.perf_counter() - t0)
        if i == 0:
            first_loss = loss.item()
    torch.cuda.reset_peak_memory_stats()
    times = []
    for _ in range(args.steps):
        t0 = time.perf_counter()
        loss = step()
        times.append(time.perf_counter() - t0)
    mean = statistics.fmean(times)
    profile = kernel_profile(step, args.profile) if args.profile > 0 else None
    tokens = args.batch * args.seq
    print(json.dumps({
        "peer": "pytorch-python eager sdpa AdamW(fused=True) bf16-autocast"
                + (" padded-vocab" if args.pad_vocab else "")
                + (" cudnn-attention" if args.cudnn_attention else ""),
        "model": args.model, "batch": args.batch, "seq": args.seq,
        "tokens_per_s": tokens / mean,
        "step_ms_mean": 1e3 * mean,
        "step_ms_median": 1e3 * statistics.median(times),
        "step_cv": statistics.stdev(times) / mean if len(times) > 1 else 0.0,
        "warmup_step_ms": [1e3 * t for t in warm],
        "peak_mem_bytes": torch.cuda.max_memory_allocated(),
        "first_loss": first_loss, "last_loss": loss.item(),
        "steps": args.steps, "warmup": args.warmup,
        **({"profile": profile} if profile is not None else {}),
        "torch": torch.__version__, "cuda": torch.version.cuda,
        "gpu": torch.cuda.get_device_name(0),
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
