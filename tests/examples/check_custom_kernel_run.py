#!/usr/bin/env python3
"""Checks a Google Benchmark JSON run of examples/custom_kernel (tests/examples/custom_kernel_cpu.sh).

Every softmax/torch/... row has a softmax/mine/... twin (the same name but the implementation
segment) that ran and passed the family's check: a time, the family's counters, no error. With
the wrong variant, every softmax/torch/... row also has a softmax/mine_wrong/... twin that the
family's check rejected: error_message "wrong result: relative error ... exceeds ...". Exits 1
with the reasons otherwise.

    check_custom_kernel_run.py [--no-wrong] RUN.json
"""
import json
import sys

WRONG = "wrong result: relative error "


def twins(rows, impl):
    """name with `impl` in place of torch -> row, for every softmax/torch/ row."""
    out = {}
    for name in rows:
        parts = name.split("/")
        if parts[:2] == ["softmax", "torch"]:
            parts[1] = impl
            out[name] = rows.get("/".join(parts))
    return out


def check(path, want_wrong):
    with open(path) as f:
        run = json.load(f)
    rows = {b["name"]: b for b in run["benchmarks"] if b.get("run_type", "iteration") == "iteration"}
    problems = []
    torch_rows = [n for n in rows if n.startswith("softmax/torch/")]
    if not torch_rows:
        problems.append("no softmax/torch/ row")
    for name in torch_rows:
        if rows[name].get("error_occurred"):
            problems.append(f"{name}: {rows[name].get('error_message')}")
    for name, mine in twins(rows, "mine").items():
        if mine is None:
            problems.append(f"{name}: no softmax/mine/ twin")
        elif mine.get("error_occurred"):
            problems.append(f"{mine['name']}: {mine.get('error_message')}")
        elif not (mine.get("real_time", 0) > 0 and mine.get("iterations", 0) > 0 and "bytes/s" in mine):
            problems.append(f"{mine['name']}: no time or no bytes/s counter")
    if want_wrong:
        for name, wrong in twins(rows, "mine_wrong").items():
            if wrong is None:
                problems.append(f"{name}: no softmax/mine_wrong/ twin")
            elif not wrong.get("error_occurred") or WRONG not in wrong.get("error_message", ""):
                problems.append(f"{wrong['name']}: not reported as a wrong result "
                                f"({wrong.get('error_message', 'no error')})")
    for p in problems:
        print(f"{path}: {p}")
    mine = sum(1 for n in rows if n.startswith("softmax/mine/"))
    wrong = sum(1 for n in rows if n.startswith("softmax/mine_wrong/"))
    print(f"{path}: {len(torch_rows)} torch, {mine} mine, {wrong} mine_wrong rows; "
          f"{'OK' if not problems else 'FAILED'}")
    return not problems


def main(argv):
    want_wrong = "--no-wrong" not in argv
    paths = [a for a in argv if a != "--no-wrong"]
    if len(paths) != 1:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    return 0 if check(paths[0], want_wrong) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
