#!/usr/bin/env python3
"""Our training steps beside torch.compile's, from the JSON of gptbench and the peer runner
(scripts/gpu-train-vs-compile.sh): per size and batch, our best row's tokens/s with its MFU over
the measured GEMM peak and over the datasheet peak, each peer mode's, and ours over each.

  scripts/train_vs_compile.py RUN.json [RUN.json ...]   (exit 2: a file that is not such JSON)"""
import json
import re
import sys
from collections import defaultdict

NAME = re.compile(r"^model/train_step/(?P<size>[^/]+)/bf16/B:(?P<b>\d+)/T:(?P<t>\d+)/.*"
                  r"attn:(?P<attn>[^/]+)/head:(?P<head>[^/]+)/.*mode:(?P<mode>[^/]+)/")
PEER_MODES = ("inductor", "inductor_cg", "inductor_autotune")


def rows(paths):
    for p in paths:
        try:
            with open(p) as f:
                doc = json.load(f)
        except (OSError, ValueError) as e:
            print(f"train_vs_compile: {p}: {e}", file=sys.stderr)
            sys.exit(2)
        for r in doc.get("benchmarks", []):
            m = NAME.match(r.get("name", ""))
            if m and r.get("run_type", "iteration") == "iteration" and "tokens/s" in r:
                yield m, r


def main(paths):
    best = {}                      # (size, b) -> our best row
    peers = defaultdict(dict)      # (size, b) -> mode -> row
    for m, r in rows(paths):
        key = (m["size"], int(m["b"]))
        if m["mode"] in PEER_MODES:  # the padded vocabulary (ours') over the unpadded one
            if m["head"] == "padded" or m["mode"] not in peers[key]:
                peers[key][m["mode"]] = r
        elif m["head"] == "fused" and r["tokens/s"] > best.get(key, {}).get("tokens/s", 0):
            best[key] = dict(r, attn=m["attn"])
    modes = [md for md in PEER_MODES if any(md in v for v in peers.values())]
    head = ["size", "B", "ours tokens/s (attn)", "MFU % (GEMM peak / datasheet)"]
    for md in modes:
        head += [f"{md} tokens/s", f"MFU %", f"ours / {md}"]
    print("| " + " | ".join(head) + " |")
    print("|---|---:|" + "---:|" * (len(head) - 2))
    for key in sorted(set(best) | set(peers), key=lambda k: (k[0], k[1])):
        o = best.get(key)
        cells = [key[0], str(key[1])]
        cells += ([f"{o['tokens/s'] / 1e3:.1f}k ({o['attn']})",
                   f"{o.get('mfu_pct', 0):.1f} / {o.get('mfu_datasheet_pct', 0):.1f}"] if o else ["—", "—"])
        for md in modes:
            p = peers[key].get(md)
            if p is None:
                cells += ["—", "—", "—"]
                continue
            cells += [f"{p['tokens/s'] / 1e3:.1f}k",
                      f"{p.get('mfu_pct', 0):.1f} / {p.get('mfu_datasheet_pct', 0):.1f}",
                      f"{o['tokens/s'] / p['tokens/s']:.3f}×" if o else "—"]
        print("| " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1:]))
