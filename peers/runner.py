"""Runs one registered case the way fixtures/case_slot.cpp and fixtures/runner.cpp do: build,
compile (the first call, timed as compile_s), verify against the reference, warm up, calibrate
the batching of short calls, capture and check the launch:graph form where the case has one, then
repetitions of timed regions until each has spent min_time in them. Returns the rows of gb_json."""
import re
import time

import torch

from peers import gb_json
from peers.case import NONE, SkipCase
from peers.gpu_power import PowerSampler, cuda_pci_bus_id, power_counters
from peers.launch import GRAPH_LABEL, graph_form, host_overhead_pct
from peers.timer import RegionTimer, inner_calls_for, sync
from peers.trace import TRACE_CALLS, trace_path, write_trace

MAX_ITERATIONS = 1_000_000_000


def oom_message(what):
    m = re.search(r"Tried to allocate ([0-9.]+ [KMGT]?i?B)", what)
    return f"out of memory (needs ≈ {m.group(1)} more)" if m else "out of memory"


def failure_message(e):
    if isinstance(e, SkipCase):
        return str(e)
    if isinstance(e, torch.OutOfMemoryError):
        return "skipped: " + oom_message(str(e))
    first = (str(e).strip().splitlines() or [""])[0]
    if isinstance(e, NotImplementedError):
        return f"unsupported: {first}"[:400]
    return f"error: {type(e).__name__}: {first}"[:400]


def release(device):
    torch._dynamo.reset()
    if device.type == "cuda":
        torch.cuda.empty_cache()


def counters_for(case, seconds_per_call, peaks, peak_mem):
    """case_counters() of fixtures/case_slot.cpp: FLOP/s, bytes/s, %peak, peak_mem_bytes and the
    case's own counters."""
    k, rate = {}, 0.0
    if case.flops > 0:
        k["FLOP/s"] = case.flops / seconds_per_call
        rate = k["FLOP/s"] if case.peak != "copy" else rate
    if case.bytes > 0:
        k["bytes/s"] = case.bytes / seconds_per_call
        rate = k["bytes/s"] if case.peak == "copy" else rate
    peak = peaks.get(case.peak, 0) if case.peak != NONE else 0
    if peak > 0 and rate > 0:
        k["%peak"] = 100.0 * rate / peak
    if peak_mem >= 0:
        k["peak_mem_bytes"] = float(peak_mem)
    for name, value in case.counters.items():
        k[name] = value(seconds_per_call) if callable(value) else value
    return k


def prepare(spec, options, timer):
    """(case, compile_s, inner) or raises."""
    case = spec.make()
    sync_dev = torch.device("cuda" if options.cuda else "cpu")
    t0 = time.perf_counter()
    case.run()  # compilation happens here (and CUDA graphs start recording)
    sync(sync_dev)
    compile_s = time.perf_counter() - t0
    if case.verify and options.verify:
        wrong = case.verify()
        if wrong:
            raise SkipCase("wrong result: " + wrong)
    timer.time(case.run, 2)  # warm-up: CUDA-graph trees record on the first calls
    one = min(timer.time(case.run) for _ in range(3))
    if options.profile_dir:
        write_trace(case.run, TRACE_CALLS, sync_dev, trace_path(options.profile_dir, spec.name))
    return case, compile_s, inner_calls_for(one)


def measure(fn, inner, options, timer, device, bus_id):
    """One repetition of a form: timed regions of `inner` calls until min_time was spent in them.
    (seconds per call, iterations, CPU seconds per call, peak memory, clock counters)"""
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats()
    timed, iterations, cpu0 = 0.0, 0, time.process_time()
    with PowerSampler(bus_id) as power:
        while (timed < options.min_time or iterations == 0) and iterations < MAX_ITERATIONS:
            timed += timer.time(fn, inner)
            iterations += inner
    peak_mem = torch.cuda.max_memory_allocated() if device.type == "cuda" else -1
    cpu = (time.process_time() - cpu0) / iterations
    return timed / iterations, iterations, cpu, peak_mem, power_counters(power.samples)


def forms_of(spec, case, inner, options, device, timer):
    """{launch: (callable, inner)} of the forms to time, {launch: reason} of those that cannot
    run: launch:graph first where the spec has it (peers/launch.py), then the eager call."""
    forms, reasons = {}, {}
    if spec.launches:
        try:
            forms["graph"] = graph_form(case, device, timer, options.verify)
        except Exception as e:  # noqa: BLE001 - the graph row's reason; the eager row still runs
            reasons["graph"] = failure_message(e)
    forms["eager" if spec.launches else None] = (case.run, inner)
    return forms, reasons


def run_spec(spec, options, peaks, family_index):
    """The rows of one benchmark, per form of spec.names() (family indices from family_index on):
    one per repetition, plus aggregates when repetitions > 1. Both forms of a host-launched
    region come from one preparation, their repetitions interleaved, and carry
    host_overhead_pct."""
    device = torch.device("cuda" if options.cuda else "cpu")
    release(device)
    timer = RegionTimer(device)
    names = spec.names()
    index = {launch: family_index + i for i, (launch, _) in enumerate(names)}
    try:
        case, compile_s, inner = prepare(spec, options, timer)
        forms, reasons = forms_of(spec, case, inner, options, device, timer)
        bus_id, reps = cuda_pci_bus_id(device), {launch: [] for launch in forms}
        for _ in range(options.repetitions):
            for launch, (fn, n) in forms.items():
                reps[launch].append(measure(fn, n, options, timer, device, bus_id))
        shared = {"compile_s": compile_s}
        if "graph" in reps:
            shared["host_overhead_pct"] = host_overhead_pct([r[0] for r in reps["graph"]],
                                                            [r[0] for r in reps["eager"]])
        rows = []
        for launch, name in names:
            if launch in reasons:
                rows.append(gb_json.errored_row(name, index[launch], reasons[launch]))
                continue
            label = "; ".join(filter(None, (case.label, GRAPH_LABEL if launch == "graph" else "")))
            form = [gb_json.iteration_row(name, index[launch], rep, options.repetitions, iterations,
                                          per_call, cpu, {**counters_for(case, per_call, peaks, mem),
                                                          **shared, **clocks}, label)
                    for rep, (per_call, iterations, cpu, mem, clocks) in enumerate(reps[launch])]
            rows += form + (gb_json.aggregate_rows(form) if options.repetitions > 1 else [])
        return rows
    except Exception as e:  # noqa: BLE001 - every failure becomes the row's reason
        return [gb_json.errored_row(name, index[launch], failure_message(e)) for launch, name in names]
    finally:
        release(device)
