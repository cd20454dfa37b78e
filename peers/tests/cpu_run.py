"""The peers' JSON path on the CPU (ctest peers_cpu_run): the runner with real Inductor code
generation on two tiny softmax cases, then the training step with backend=eager (fast on two cores),
each file checked (names, counters, a skipped row's reason) and loaded and paired by
gptbench-compare; then gptbench-run --peers=inductor merging gptbench's torch row with the peer's;
then a user's Python softmax (--impl_module, docs/extending-python.md) and gptbench's torch row
run apart, merged by gptbench-compare merge and paired by filters.
  python3 -m peers.tests.cpu_run --work DIR --compare EXE [--runner EXE --binary EXE]"""
import argparse
import json
import os
import subprocess
import sys
import time

from peers.tests.run_checks import check_peer_run

INDUCTOR_FILTER = r"^softmax/inductor(_naive)?/fp32/fwd/attn\.tiny/rows:128/"
EAGER_FILTER = r"^model/train_step"  # every family's cases run in test_runner.Families
MERGE_FILTER = r"^softmax/(torch|inductor)/fp32/fwd/attn\.tiny/rows:128/"
USER_MODULE = "peers.tests.plain_impls"  # its softmax rows are named softmax/plain/...
FLAGS = ["--gptbench_device=cpu", "--benchmark_min_time=0.01"]


def run(argv, env=None):
    t0 = time.perf_counter()
    p = subprocess.run(argv, capture_output=True, text=True, env=env)
    print(f"$ {' '.join(argv)}  [{time.perf_counter() - t0:.1f} s, exit {p.returncode}]", flush=True)
    return p


def peers(work, name, flt, backend, extra=()):
    out = os.path.join(work, name)
    env = dict(os.environ, GPTBENCH_PEERS_BACKEND=backend)
    p = run([sys.executable, "-m", "peers", *FLAGS, f"--benchmark_filter={flt}",
             f"--benchmark_out={out}", *extra], env)
    if p.returncode != 0:
        sys.exit(f"peer runner failed ({p.returncode}):\n{p.stderr[-3000:]}")
    with open(out, encoding="utf-8") as f:
        return out, json.load(f)


def compare_pairs(compare, path, a, b, expect):
    p = run([compare, "filters", path, a, b])
    if p.returncode not in (0, 1) or expect not in p.stdout:
        sys.exit(f"gptbench-compare filters {a} {b} on {path}: exit {p.returncode}, "
                 f"'{expect}' {'missing' if expect not in p.stdout else 'present'}:\n{p.stdout[-2000:]}{p.stderr[-2000:]}")


def user_impl_beside_ours(a):
    """The problems of a user's softmax run beside gptbench's own row, as the Triton example's
    README does it: two files, merged, then paired by filters."""
    path, doc = peers(a.work, "plain.json", MERGE_FILTER.replace("(torch|inductor)", "plain"),
                      "eager", [f"--impl_module={USER_MODULE}"])
    problems = check_peer_run(doc, backend="eager", expect_skipped=False)
    if [r["name"] for r in doc["benchmarks"]] != ["softmax/plain/fp32/fwd/attn.tiny/rows:128/cols:16/manual_time"]:
        problems.append(f"{path}: expected one softmax/plain row")
    ours, merged = os.path.join(a.work, "ours.json"), os.path.join(a.work, "ours_and_plain.json")
    for argv in ([a.binary, *FLAGS, f"--benchmark_filter={MERGE_FILTER.replace('(torch|inductor)', 'torch')}",
                  f"--benchmark_out={ours}"], [a.compare, "merge", merged, ours, path]):
        p = run(argv)
        if p.returncode != 0:
            sys.exit(f"{argv[0]} failed ({p.returncode}):\n{p.stderr[-3000:]}")
    compare_pairs(a.compare, merged, "torch", "plain", "softmax/{torch,plain}/fp32/fwd")
    return problems


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    ap.add_argument("--compare", required=True)
    ap.add_argument("--runner")
    ap.add_argument("--binary")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    path, doc = peers(a.work, "inductor.json", INDUCTOR_FILTER, "inductor")
    problems = check_peer_run(doc, backend="inductor", expect_skipped=False)
    compare_pairs(a.compare, path, "inductor_naive", "inductor", "{inductor_naive,inductor}")
    path, doc = peers(a.work, "eager.json", EAGER_FILTER, "eager", ["--benchmark_repetitions=2"])
    problems += check_peer_run(doc, backend="eager", expect_skipped=True)
    compare_pairs(a.compare, path, "mode:pytorch", "mode:inductor", "{mode:pytorch,mode:inductor}")
    if a.runner and a.binary:
        merged = os.path.join(a.work, "merged.json")
        env = dict(os.environ, GPTBENCH_PEERS_BACKEND="eager")
        p = run([a.runner, "--binary", a.binary, "--peers=inductor", "-o", merged, *FLAGS,
                 f"--benchmark_filter={MERGE_FILTER}", "--quiet-children"], env)
        if p.returncode != 0:
            sys.exit(f"gptbench-run --peers=inductor failed ({p.returncode}):\n{p.stderr[-3000:]}")
        compare_pairs(a.compare, merged, "torch", "inductor", "softmax/{torch,inductor}/fp32/fwd")
    if a.binary:
        problems += user_impl_beside_ours(a)
    if problems:
        sys.exit("\n".join(problems))
    print("peers_cpu_run: ok")


if __name__ == "__main__":
    main()
