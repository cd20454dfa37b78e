"""The data-parallel training steps of one or more JSON files (ours' model/train_step_dp rows and
the peers'), one line each, medians over repetitions:
  python3 -m peers.dp.table RUN.json [MORE.json ...]
tokens/s is R·B·T over rank 0's step (the family's counter); `slowest` the same over the mean
of each step's slowest rank."""
import json
import statistics
import sys

PREFIX = "model/train_step_dp/"
MODES = ("ddp", "zero1", "fsdp")  # ours' modes; a peer's is torch_<mode>
COLUMNS = ("mode", "ranks", "tokens/s", "slowest", "per GPU", "step ms", "scaling", "state GB/GPU",
           "params GB/GPU", "peak GB/GPU")


def medians(docs):
    """{name without /manual_time: {counter: median}} of the iteration rows that ran, and
    {name: error_message} of those that did not."""
    samples, errors = {}, {}
    for doc in docs:
        for r in doc.get("benchmarks", []):
            name = r.get("run_name", r["name"]).removesuffix("/manual_time")
            if not name.startswith(PREFIX) or r.get("run_type", "iteration") != "iteration":
                continue
            if r.get("error_occurred"):
                errors[name] = r.get("error_message", "")
                continue
            for k, v in r.items():
                if isinstance(v, (int, float)) and not isinstance(v, bool):
                    samples.setdefault(name, {}).setdefault(k, []).append(v)
    return {n: {k: statistics.median(v) for k, v in c.items()} for n, c in samples.items()}, errors


def segment(name, key):
    return next((s.split(":", 1)[1] for s in name.split("/") if s.startswith(key + ":")), "?")


def mode_order(name):
    """Ours, then the peer of the same mode."""
    mode = segment(name, "mode")
    base = mode.removeprefix("torch_")
    return (MODES.index(base) if base in MODES else len(MODES), mode != base, mode)


def shape(name):
    """The problem: the name without its ranks and mode."""
    return name.split("/ranks:")[0]


def line(name, c):
    def gb(k):
        return f"{c[k] / 1e9:.2f}" if k in c else "—"
    slowest = c["tokens/s"] * c["step_ms"] / c.get("slowest_rank_step_ms", c["step_ms"])
    return (segment(name, "mode"), segment(name, "ranks"), f"{c['tokens/s'] / 1e3:.1f}k",
            f"{slowest / 1e3:.1f}k", f"{c['tokens_per_s_per_gpu'] / 1e3:.1f}k", f"{c['step_ms']:.1f}",
            f"{c.get('scaling_efficiency', 0):.3f}", gb("state_bytes"), gb("param_bytes"),
            gb("peak_mem_max_rank_bytes"))


def table(docs):
    rows, errors = medians(docs)
    out = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for name in sorted(rows, key=lambda n: (shape(n), int(segment(n, "ranks")), mode_order(n))):
        out.append("| " + " | ".join(line(name, rows[name])) + " |")
    out += [f"{segment(n, 'mode')} (ranks {segment(n, 'ranks')}): {e}"
            for n, e in sorted(errors.items())]
    shapes = sorted({shape(n) for n in list(rows) + list(errors)})
    return "\n".join([f"{s}/..." for s in shapes] + out)


def main(argv=None):
    paths = sys.argv[1:] if argv is None else argv
    if not paths:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    docs = []
    for p in paths:
        try:
            with open(p, encoding="utf-8") as f:
                docs.append(json.load(f))
        except (OSError, ValueError) as e:
            print(f"peers.dp.table: {p}: {e}", file=sys.stderr)
            return 2
    print(table(docs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
