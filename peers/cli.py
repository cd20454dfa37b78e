"""gptbench-peers: the compiler peers of gptbench's families, written as Google Benchmark JSON
with the suite's names and counters (docs/peers.md).

  python3 -m peers [--benchmark_filter=REGEX] [--benchmark_out=FILE] [--benchmark_repetitions=N]
                   [--benchmark_min_time=S] [--benchmark_list_tests] [--gptbench_device=auto|cpu|cuda]
                   [--gptbench_models=small,...] [--gptbench_dtypes=fp32,bf16]
                   [--gptbench_batch=B] [--gptbench_seq=T] [--gptbench_full] [--gptbench_fp8]
                   [--gptbench_compile_backend=inductor|eager] [--gptbench_profile=DIR]
                   [--impl=FAMILY:PASS:NAME=MODULE:CALLABLE]... [--impl_module=MODULE]...
Short forms: --device, --min_time, --full, --fp8, --models, --dtypes, --batch, --seq, --backend.
--gptbench_fp8: also the training step with torchao's FP8 linears (precision fp8, modes torchao and
torchao_cg; skipped with the reason without torchao or a GPU of compute capability 8.9+).
--impl / --impl_module: a user's Python callable timed as an implementation of a family, its rows
named FAMILY/NAME/... (MODULE: dotted, or a .py file; @implements from peers declares them in
a module): softmax fwd, bwd; layernorm, loss, attention fwd, fwd_bwd (docs/extending-python.md).
Exit codes: 0 every benchmark reported (skipped ones with their reason), 1 no benchmark matches
the filter, 2 usage error.
"""
import re
import sys
from dataclasses import replace

from peers import gb_json, options as opts
from peers.case import REGISTRY
from peers.families import FAMILIES

SUFFIX = "/manual_time"  # Google Benchmark's suffix of manual-time benchmarks, as gptbench's


def selected(specs, pattern):
    """Google Benchmark's filter: a regex searched in each full name (a host-launched spec has
    one per launch); a leading '-' negates. The specs with a name kept, narrowed to those."""
    if pattern in ("", ".", "all", ".*"):
        return list(specs)
    negate = pattern.startswith("-")
    rx = re.compile(pattern[1:] if negate else pattern)
    out = []
    for s in specs:
        kept = tuple(launch for launch, name in s.names() if bool(rx.search(name + SUFFIX)) != negate)
        if kept:
            out.append(replace(s, picked=kept))
    return out


def register_all(o):
    REGISTRY.clear()
    for family in FAMILIES:
        family.register_cases(o)
    return list(REGISTRY)


def parse_argv(argv, doc, prog, more=None):
    """The runner's flags: (options, more's value, None), or (None, None, exit code) after --help
    (doc printed, 0) or a usage error (one line on stderr, 2). `more` (no arguments) adds what else
    must be read at start-up; its ValueError is a usage error too. Imports torch after --help:
    that takes seconds."""
    if any(a in ("-h", "--help", "--gptbench_help") for a in argv):
        print(doc.strip())
        return None, None, 0
    import torch

    try:
        return opts.parse(argv, torch.cuda.is_available()), (more() if more else None), None
    except (opts.UsageError, ValueError) as e:
        print(f"{prog}: {e}", file=sys.stderr)
        return None, None, 2


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    o, _, code = parse_argv(argv, __doc__, "gptbench-peers")
    if o is None:
        return code
    import torch

    torch._dynamo.config.cache_size_limit = 64  # one compiled graph per shape, never eager fallback
    specs = selected(register_all(o), o.filter)
    if o.list_only:
        for s in specs:
            for _, name in s.names():
                print(name + SUFFIX)
        return 0 if specs else 1
    if not specs:
        print(f"gptbench-peers: no benchmark matches the filter '{o.filter}'", file=sys.stderr)
        return 1
    from peers.device_info import measure_peaks, run_context
    from peers.runner import run_spec

    device = torch.device("cuda" if o.cuda else "cpu")
    peaks = o.peaks = measure_peaks(device)
    writer = gb_json.Writer(o.out, gb_json.context(run_context(o, peaks)))
    index = 0  # Google Benchmark's family_index: one per name
    for spec in specs:
        rows = run_spec(spec, o, peaks, index)
        index += len(spec.names())
        writer.add(rows)
        for r in rows:
            if r.get("run_type") == "iteration":
                what = r.get("error_message") or f"{r['real_time']:.3f} {r['time_unit']}"
                print(f"{r['name']:<100} {what}", flush=True)
    writer.close()
    return 0
