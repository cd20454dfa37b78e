"""The README's first headline table from one merged run of ours and the peers
(scripts/gpu-peers.sh's merged.json), device time against device time: every fwd+bwd and
optimizer cell is its `launch:graph` row, the training steps are CUDA-graph replays on every
side (LibTorch's `mode:graph`, ours, `torch.compile`'s `mode:inductor_cg`). A cell whose row is
missing or did not run reads "—"; an eager row never stands in for a graph one.

    python3 scripts/headline_table.py merged.json
"""
import json
import sys

SOFTMAX_ATTN = "bf16/{p}/attn.small.B64/rows:786432/cols:1024"
SOFTMAX_VOCAB = "bf16/{p}/vocab/rows:8192/cols:50304"
LAYERNORM = ("bf16/fwd/rows:8192/cols:768", "bf16/fwd_bwd/rows:8192/cols:768/launch:graph")
LOSS = ("bf16/fwd/vocab/rows:8192/classes:50257/cols:50304",
        "bf16/fwd_bwd/vocab/rows:8192/classes:50257/cols:50304/launch:graph")
ATTENTION = ("bf16/causal/fwd/B:8/H:12/L:4096/d:64", "bf16/causal/fwd_bwd/B:8/H:12/L:4096/d:64/launch:graph")
STEP = "model/train_step/small/bf16/B:8/T:1024/opt:{opt}/attn:sdpa/head:{head}/blocks:{blocks}/accum:1/mode:{mode}"

# (op, [LibTorch, ours, torch.compile]): each cell a list of names joined by " / ".
ROWS = [
    ("softmax fwd / bwd 786,432×1,024",
     [[f"softmax/{i}/" + SOFTMAX_ATTN.format(p=p) for p in ("fwd", "bwd")] for i in ("torch", "fused", "inductor")]),
    ("softmax fwd / bwd 8,192×50,304",
     [[f"softmax/{i}/" + SOFTMAX_VOCAB.format(p=p) for p in ("fwd", "bwd")] for i in ("torch", "fused", "inductor")]),
    ("LayerNorm 8192×768 fwd / fwd+bwd", [[f"layernorm/{i}/{s}" for s in LAYERNORM] for i in ("torch", "fused", "inductor")]),
    ("cross-entropy 8192×50304 fwd / fwd+bwd", [[f"loss/{i}/{s}" for s in LOSS] for i in ("torch", "fused", "inductor")]),
    ("attention L=4096 d=64 fwd / fwd+bwd (SDPA flash; ours portable; FlexAttention)",
     [[f"attention/{i}/{s}" for s in ATTENTION] for i in ("sdpa_flash", "flash", "inductor_flex")]),
    ("AdamW step, GPT-2 small fp32 params (LibTorch fused)",
     [["optim/torch_fused_adamw/fp32/model:small/launch:graph"], ["optim/adamw/fp32/model:small"],
      ["optim/inductor_adamw/fp32/model:small/launch:graph"]]),
]
STEPS = ("training step B=8 T=1024, tokens/s (CUDA graphs on every side)",
         [STEP.format(opt="torch_fused", head="torch", blocks="torch", mode="graph"),
          STEP.format(opt="adamw", head="fused", blocks="fused", mode="graph"),
          STEP.format(opt="torch_fused", head="torch", blocks="torch", mode="inductor_cg")])

TO_US = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}


def rows_by_name(run):
    """Name (without /manual_time) -> its first iteration row that ran."""
    out = {}
    for r in run.get("benchmarks", []):
        if r.get("run_type", "iteration") != "iteration" or r.get("error_occurred"):
            continue
        out.setdefault(r["name"].removesuffix("/manual_time"), r)
    return out


def time_text(row):
    if row is None:
        return "—"
    us = row["real_time"] * TO_US[row.get("time_unit", "ns")]
    return f"{us / 1e3:.2f} ms" if us >= 1000 else f"{us:.1f} µs"


def tokens_text(row):
    return "—" if row is None or "tokens/s" not in row else f"{row['tokens/s'] / 1e3:.1f}k"


def table(run):
    rows = rows_by_name(run)
    lines = ["| op | LibTorch | ours | `torch.compile` |", "|---|---:|---:|---:|"]
    for op, cells in ROWS:
        lines.append(f"| {op} | " + " | ".join(" / ".join(time_text(rows.get(n)) for n in cell)
                                             for cell in cells) + " |")
    op, names = STEPS
    lines.append(f"| {op} | " + " | ".join(tokens_text(rows.get(n)) for n in names) + " |")
    return "\n".join(lines)


def main(argv):
    if len(argv) != 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    try:
        run = json.load(open(argv[1]))
    except (OSError, ValueError) as e:
        print(f"headline_table: cannot read {argv[1]}: {e}", file=sys.stderr)
        return 2
    ctx = run.get("context", {})
    print(f"{ctx.get('gpu_name', '?')}, {ctx.get('date', '?')[:10]}, LibTorch {ctx.get('libtorch', '?')}, "
          f"peers' torch {ctx.get('peers_torch', '?')}")
    print(table(run))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
