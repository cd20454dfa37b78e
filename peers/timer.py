"""Times a region the way fixtures/timer.* does: CUDA events on the current stream, the stream
held busy for HOLD_NS before the start event (ops/gpu_hold.h: launch latency in front of the
region is not counted), short regions batched; a host clock on the CPU."""
import math
import time

import torch

HOLD_NS = 50_000            # kTimerHoldNs
SHORT_REGION_S = 20e-6      # kShortRegionSeconds: shorter calls are batched
BATCH_TARGET_S = 200e-6     # kBatchTargetSeconds: a batch aims at this length
MAX_INNER = 1000            # kMaxInner

_cycles_per_ns = None


def inner_calls_for(seconds_per_call):
    """How many calls to batch per timed region, given one call's time (inner_calls_for)."""
    if not seconds_per_call > 0 or seconds_per_call >= SHORT_REGION_S:
        return 1
    return max(1, min(MAX_INNER, math.ceil(BATCH_TARGET_S / seconds_per_call)))


def _hold_cycles(ns):
    """GPU clock cycles of torch.cuda._sleep that last `ns` (measured once: the spin counts SM
    clock cycles, where ops/gpu_hold.cu reads the global timer)."""
    global _cycles_per_ns
    if _cycles_per_ns is None:
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        probe = 2_000_000
        torch.cuda._sleep(probe)  # warm-up
        best = float("inf")
        for _ in range(3):
            start.record()
            torch.cuda._sleep(probe)
            stop.record()
            stop.synchronize()
            best = min(best, start.elapsed_time(stop) * 1e6)
        _cycles_per_ns = probe / best
    return max(1, int(ns * _cycles_per_ns))


class RegionTimer:
    def __init__(self, device):
        self.cuda = device.type == "cuda"
        if self.cuda:
            self.start = torch.cuda.Event(enable_timing=True)
            self.stop = torch.cuda.Event(enable_timing=True)
            self.hold = _hold_cycles(HOLD_NS)

    def time(self, fn, inner=1):
        """Seconds taken by `inner` back-to-back calls of fn (the whole batch)."""
        if self.cuda:
            torch.cuda._sleep(self.hold)
            self.start.record()
            for _ in range(inner):
                fn()
            self.stop.record()
            self.stop.synchronize()
            return self.start.elapsed_time(self.stop) * 1e-3
        t0 = time.perf_counter()
        for _ in range(inner):
            fn()
        return time.perf_counter() - t0


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)
