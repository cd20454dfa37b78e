#!/usr/bin/env python3
"""Writes data/sample_made_up.json: a Google Benchmark 1.7.1-shaped run of the training
families with MADE-UP numbers (plausible shapes, not measurements), for the report's render
tests and for checking the page in a browser. Real results live under docs/results/."""
import json
import math
import os

ctx = {"date": "2000-01-01T00:00:00+00:00", "host_name": "made-up", "executable": "gptbench",
       "num_cpus": 16, "mhz_per_cpu": 2000, "cpu_scaling_enabled": False, "caches": [],
       "load_avg": [0, 0, 0], "library_build_type": "debug", "device": "cuda",
       "gpu_name": "MADE-UP GPU (sample data)", "libtorch": "2.14.1",
       "peak_gemm_bf16_flops": "7.0e+14"}
rows = []
PH = ["data", "h2d", "forward", "loss", "backward", "optimizer", "zero_grad", "graph", "sync"]


def add(name, step_ms, counters, skipped=None):
    row = {"name": name + "/manual_time", "run_name": name + "/manual_time", "run_type": "iteration",
           "repetitions": 1, "repetition_index": 0, "threads": 1, "iterations": 10,
           "real_time": step_ms, "cpu_time": step_ms, "time_unit": "ms"}
    if skipped:
        row["error_occurred"] = True
        row["error_message"] = skipped
    else:
        row.update(counters)
    rows.append(row)


def train(b, mode="eager", opt="torch_fused", prec="bf16"):
    tokens = b * 1024
    base = 0.004 * tokens ** 0.93 * (2.6 if prec == "fp32" else 1.5 if prec == "tf32" else 1.0)
    if opt == "torch":
        base += 6
    step = base * (0.9 if mode == "graph" else 1.0)
    name = f"model/train_step/small/{prec}/B:{b}/T:1024/opt:{opt}/attn:sdpa/accum:1/mode:{mode}"
    if b >= 64:
        return add(name, 0, {}, "out of memory (needs ≈ 12.3 GiB more)")
    c = {"tokens/s": tokens / step * 1e3, "step_ms": step, "step_cv": 0.004 + 0.02 / b,
         "step_p99_over_p50": 1.01 + 0.05 / b, "mfu_pct": 0.8e9 * tokens / (step * 1e-3) / 7e14 * 100,
         "peak_mem_bytes": (2.2 + 0.55 * b) * 2**30, "steps_measured": 20,
         "warmup_first_over_steady": 4.5}
    for i, f in enumerate([4.5, 1.4, 1.05, 1.0, 1.0, 1.0]):
        c[f"step{i+1}_ms"] = f * step
    split = {"data": 0.01, "h2d": 0.002, "forward": 0.3, "loss": 0.03, "backward": 0.55,
             "optimizer": 0.1 if opt != "torch" else 0.25, "zero_grad": 0.005, "graph": 0, "sync": 0.003}
    if mode == "graph":
        split = {k: 0 for k in split} | {"data": 0.01, "h2d": 0.002, "graph": 0.985, "sync": 0.003}
        c.update({"eager_step_ms": base, "graph_warmup_ms": 3.1 * base, "capture_ms": 180.0,
                  "first_replay_ms": step * 1.3, "graph_overhead_ms": 180 + 0.3 * step,
                  "graph_speedup": base / step,
                  "break_even_steps": math.ceil((180 + 0.3 * step) / (base - step))})
    for k in PH:
        c[k + "_ms"] = split[k] * step
    add(name, step, c)


for b in [1, 2, 4, 8, 16, 32, 64]:
    train(b)
    train(b, "graph")
train(8, opt="torch")
train(8, prec="fp32")
train(8, prec="tf32")
for mode, over, mem, mb in [("none", 0, 1.0, 88), ("all", 31, 0.42, 176), ("every2", 16, 0.7, 120), ("attn", 9, 0.8, 104)]:
    step = 60 * (1 + over / 100)
    c = {"tokens/s": 8192 / step * 1e3, "step_ms": step, "peak_mem_bytes": 6.6e9 * mem,
         "max_batch": mb, "step_cv": 0.006, "step_p99_over_p50": 1.02}
    if mode != "none":
        c.update({"overhead_pct": over, "mem_ratio_vs_none": mem, "ref_step_ms": 60, "ref_peak_mem_bytes": 6.6e9})
    for k in PH:
        c[k + "_ms"] = {"forward": 0.3, "backward": 0.6, "optimizer": 0.1}.get(k, 0) * step
    add(f"model/checkpointing/small/bf16/B:8/T:1024/opt:torch_fused/ckpt:{mode}", step, c)
for w, stall in [(0, 90), (1, 30), (2, 0.1)]:
    add(f"overheads/data_loader/small/bf16/B:8/T:1024/prep:1.5x/workers:{w}", 60 + stall,
        {"stall_ms": stall, "stall_pct": 100 * stall / (60 + stall), "tokens/s": 8192 / (60 + stall) * 1e3,
         "data_ms": stall, "forward_ms": 18, "backward_ms": 36, "optimizer_ms": 6})
add("overheads/launch/eager/kernels:1000/numel:1024", 5.0, {"us_per_kernel": 5.0, "kernels": 1000})
add("overheads/launch/graph/kernels:1000/numel:1024", 1.5, {"us_per_kernel": 1.5, "kernels": 1000})
add("model/train_step/small/bf16/B:8/T:1024/opt:torch/attn:sdpa/accum:1/mode:graph", 0, {},
    "skipped: optimizer 'torch' cannot be captured in a CUDA graph (host-side step state)")

out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "sample_made_up.json")
with open(out, "w") as f:
    json.dump({"context": ctx, "benchmarks": rows}, f, indent=1, ensure_ascii=False)
print(out)
