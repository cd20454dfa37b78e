"""Runs one registered case the way fixtures/case_slot.cpp and fixtures/runner.cpp do: build,
compile (the first call, timed as compile_s), verify against the reference, warm up, calibrate
the batching of short calls, then repetitions of timed regions until each has spent min_time
in them. Returns the rows of gb_json."""
import re
import time

import torch

from peers import gb_json
from peers.case import NONE, SkipCase
from peers.gpu_power import PowerSampler, cuda_pci_bus_id, power_counters
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


def run_spec(spec, options, peaks, family_index):
    """The rows of one benchmark: one per repetition, plus aggregates when repetitions > 1."""
    device = torch.device("cuda" if options.cuda else "cpu")
    release(device)
    timer = RegionTimer(device)
    try:
        case, compile_s, inner = prepare(spec, options, timer)
        rows, bus_id = [], cuda_pci_bus_id(device)
        for rep in range(options.repetitions):
            if device.type == "cuda":
                torch.cuda.reset_peak_memory_stats()
            timed, iterations, cpu0 = 0.0, 0, time.process_time()
            with PowerSampler(bus_id) as power:
                while (timed < options.min_time or iterations == 0) and iterations < MAX_ITERATIONS:
                    timed += timer.time(case.run, inner)
                    iterations += inner
            per_call = timed / iterations
            peak_mem = torch.cuda.max_memory_allocated() if device.type == "cuda" else -1
            k = counters_for(case, per_call, peaks, peak_mem)
            k["compile_s"] = compile_s
            k.update(power_counters(power.samples))
            cpu = (time.process_time() - cpu0) / iterations
            rows.append(gb_json.iteration_row(spec.name, family_index, rep, options.repetitions,
                                              iterations, per_call, cpu, k, case.label))
        if options.repetitions > 1:
            rows += gb_json.aggregate_rows(rows)
        return rows
    except Exception as e:  # noqa: BLE001 - every failure becomes the row's reason
        return [gb_json.errored_row(spec.name, family_index, failure_message(e))]
    finally:
        release(device)
