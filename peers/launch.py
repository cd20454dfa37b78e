"""The launch:graph form of a host-launched region (docs/peers.md): the case's call captured once
in a CUDA graph after warm-up (PyTorch's whole-network capture: warm-up calls on a side stream,
then torch.cuda.graph on that stream), then graph replays timed on the timing stream as any
region. Before it is timed, one replay is checked against an eager call on the same inputs: every
output poisoned with NaN before the replay (an element the graph does not write fails), the
in-place state restored from a snapshot before each, so both start from the same state."""
import math
import statistics

import torch

from peers.case import SkipCase
from peers.timer import inner_calls_for
from peers.verify import check_close, first_error

WARMUP_CALLS = 3      # on the side stream, before the capture (Dynamo, autotuning, lazy init)
GRAPH_LABEL = "replayed from a CUDA graph"


def replay_tolerance(dtype):
    """Relative Frobenius error allowed between a replay's output and an eager call's (the same
    kernels on the same inputs: they differ only where a kernel accumulates in a run-dependent
    order), as fixtures/graph_form.h: one bf16 unit (2^-8) for 16-bit floats, 1e-5 for fp32,
    1e-12 for float64."""
    if dtype.is_floating_point and dtype.itemsize <= 2:
        return 2.0 ** -8
    return 1e-12 if dtype == torch.float64 else 1e-5


class CudaGraphs:
    """torch.cuda's capture; the tests put a fake in GRAPHS."""

    def available(self, device):
        return device.type == "cuda"

    def capture(self, run, device):
        index = device.index if device.index is not None else torch.cuda.current_device()
        timing, side = torch.cuda.current_stream(index), torch.cuda.Stream(index)
        generator = torch.cuda.default_generators[index]
        rng, pool = generator.clone_state(), torch.cuda.graph_pool_handle()
        side.wait_stream(timing)
        with torch.cuda.stream(side):
            for _ in range(WARMUP_CALLS):
                run()
        timing.wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        try:
            with torch.cuda.graph(graph, pool=pool, stream=side):
                run()
        except Exception:
            # A capture that fails leaves the side stream current, the generator in capture mode
            # and the graph's memory pool held: undone here, so the rows after it run as usual.
            torch.cuda.set_stream(timing)
            generator.graphsafe_set_state(rng)
            _release_pool(index, pool)
            raise
        return graph


def _release_pool(index, pool):
    try:
        torch._C._cuda_endAllocateToPool(index, pool)
        torch._C._cuda_releasePool(index, pool)
    except (AttributeError, RuntimeError, TypeError):  # PyTorch without them: the pool stays held
        pass


GRAPHS = CudaGraphs()


def first_cause(e):
    """The exception that started a chain (a failed capture raises again when it ends)."""
    while (e.__cause__ or e.__context__) is not None:
        e = e.__cause__ or e.__context__
    return e


def capture(run, device):
    """run() captured: an object whose replay() repeats its work; SkipCase with why it cannot be."""
    if not GRAPHS.available(device):
        raise SkipCase("skipped: launch:graph needs a CUDA GPU "
                       f"(this run is on the {device.type.upper()})")
    try:
        return GRAPHS.capture(run, device)
    except Exception as e:  # noqa: BLE001 - a host sync, a CPU-side step, ... : the row's reason
        cause = first_cause(e)
        if isinstance(cause, torch.OutOfMemoryError):
            raise cause
        first = (str(cause).strip().splitlines() or [""])[0]
        raise SkipCase(f"skipped: cannot be captured in a CUDA graph "
                       f"({type(cause).__name__}: {first})"[:400]) from e


def _poison(tensors):
    with torch.no_grad():
        for t in tensors:
            if t.is_floating_point():
                t.fill_(math.nan)


def _restore(state, start):
    with torch.no_grad():
        for k, t in state.items():
            t.copy_(start[k])


def check_replay(case, graph):
    """'' when one replay writes what an eager call writes from the same state, else why not."""
    state = case.state() if case.state else {}
    start = {k: t.detach().clone() for k, t in state.items()}
    outs = dict(case.outputs()) if case.outputs else {}  # the graph's own tensors, from the capture
    if not outs and not state:
        return "the case names no outputs to compare"
    _poison(outs.values())
    _restore(state, start)
    graph.replay()
    got = {k: t.detach().clone() for k, t in {**outs, **state}.items()}
    _restore(state, start)
    case.run()
    want = {**(case.outputs() if case.outputs else {}), **state}
    return first_error(*(lambda k=k: check_close(got[k], want[k], replay_tolerance(got[k].dtype), k)
                         for k in got))


def graph_form(case, device, timer, verify=True):
    """(replay, calls per timed region) of the captured form, checked; raises SkipCase."""
    graph = capture(case.run, device)
    if verify:
        wrong = check_replay(case, graph)
        if wrong:
            raise SkipCase("wrong result: launch:graph replay against an eager call: " + wrong)
    timer.time(graph.replay, 2)
    one = min(timer.time(graph.replay) for _ in range(3))
    return graph.replay, inner_calls_for(one)


def host_overhead_pct(graph_times, eager_times):
    """100·(1 − t_graph/t_eager) of the medians: the share of the eager form's time that the
    graph's replay does not need (host work the GPU waited for)."""
    eager = statistics.median(eager_times)
    return 100.0 * (1.0 - statistics.median(graph_times) / eager) if eager > 0 else 0.0
