"""One data-parallel case: a PyTorch stack (peers/dp/stacks.py) training GPT-2 on every rank,
named, checked and timed as bench/train_step_dp.cpp and train/dp_case.* do ours:

  model/train_step_dp/<size>/<precision>/B:<b>/T:<t>/opt:adamw/attn:sdpa/head:<h>/blocks:<k>
    [/ckpt:all]/ranks:<R>/mode:<torch_ddp|torch_zero1|torch_fsdp>/iterations:<n>

The segments before ranks are those of ours' row it pairs with (a GPU: head:fused, blocks:fused;
the CPU: head:torch, blocks:torch; fsdp: ckpt:all), so `gptbench-compare filters RUN mode:ddp
mode:torch_ddp` pairs them: the peer's whole implementation is its mode token.

Order, as ours: every rank at once times the same stack on a process group of its own (the
one-GPU step: the same model, batch, optimizer, precision, compilation and wrappers, without
another rank), mean of `ref_steps` steps after `warmup` and the settling (`settle_s` of untimed
steps), and the mean over the ranks of each one's is the reference; then the stack on every
rank: `warmup` steps (the first compiles: compile_s), the check (the first loss ≈ ln V; after
the warm-up, every rank holds the same parameters), the settling, then per repetition `steps`
timed steps, each after a barrier, with CUDA events on every rank. A rank's failure is every
rank's skipped row."""
import gc
import math
import statistics
import time
from dataclasses import dataclass

import torch

from peers import gb_json
from peers.case import SkipCase, Spec, bench_name
from peers.dp import stacks
from peers.gpt2 import GPT2, model_flops_per_token, param_shapes
from peers.models import model_config
from peers.runner import failure_message, release
from peers.tensors import autocast
from peers.timer import RegionTimer

FAMILY = ("model", "train_step_dp")
LOSS_TOLERANCE = 0.5     # |first loss - ln V|, as train/dp_case.cpp
CHECKSUM_TOLERANCE = 1e-9
SETTLE_S = 1.0           # kDpSettleSeconds, bench/train_step_dp.cpp


@dataclass(frozen=True)
class Plan:
    """Fixed step counts (bench/train_step_dp.cpp, train/dp_case.h), so every rank makes the
    same collectives."""
    steps: int       # timed per repetition
    warmup: int
    ref_steps: int
    settle_s: float = 0.0  # then untimed steps adding up to this long, before each side is timed


def plan_for(o):
    return Plan(10, 3, 10, SETTLE_S) if o.cuda else Plan(3, 2, 1)


def settle(step_s, seconds, agreed_max=None):
    """Untimed steps (`step_s()` makes one and returns its seconds) until their times add up to
    `seconds`, as ours' settle (train/dp_case.cpp): each side timed at the clock a power-capped
    GPU holds under sustained load, and the stack's first-use costs (the collection of what the
    compilation left) behind it. With `agreed_max` (the max over the ranks), every rank makes the
    same number of steps."""
    if not seconds > 0:
        return
    done = 0.0
    while (agreed_max(done) if agreed_max else done) < seconds:
        done += step_s()


def precision(o):
    return "bf16" if o.cuda else "fp32"


def case_name(o, model_name, stack, world):
    kernels = "fused" if o.cuda else "torch"  # ours' head and blocks on this device
    ckpt = ("ckpt:all",) if stack in stacks.RECOMPUTES else ()
    return bench_name(*FAMILY, model_name, precision(o), f"B:{o.batch}", f"T:{o.seq}", "opt:adamw",
                      "attn:sdpa", f"head:{kernels}", f"blocks:{kernels}", *ckpt, f"ranks:{world}",
                      f"mode:{stack}", f"iterations:{plan_for(o).steps}")


@dataclass
class DpSpec(Spec):
    model_name: str = ""
    stack: str = ""


def specs(o, world):
    """Every case, in ours' order (models, then ddp, zero1, fsdp)."""
    return [DpSpec(case_name(o, m, s, world), None, model_name=m, stack=s)
            for m in o.models for s in stacks.NAMES]


class Batches:
    """Each rank's synthetic batches: B×(T+1) tokens drawn on the CPU from a generator of its
    own (rank-dependent seed, as ours), copied from pinned memory on a GPU."""

    def __init__(self, cfg, o, rank, device):
        self.cfg, self.B, self.T, self.device = cfg, o.batch, o.seq, device
        self.gen = torch.Generator().manual_seed(1235 + 7919 * rank)
        pin = device.type == "cuda"
        self.idx = torch.empty(o.batch, o.seq, dtype=torch.long, pin_memory=pin)
        self.tgt = torch.empty_like(self.idx, pin_memory=pin)

    def __call__(self):
        tokens = torch.randint(self.cfg.vocab, (self.B, self.T + 1), generator=self.gen)
        self.idx.copy_(tokens[:, :-1])
        self.tgt.copy_(tokens[:, 1:])
        return (self.idx.to(self.device, non_blocking=True),
                self.tgt.to(self.device, non_blocking=True))


def new_model(cfg, device):
    """GPT-2 with the same initial parameters on every rank (drawn on the CPU), the vocabulary
    padded to 50,304 rows as ours' head:fused (the loss over the real tokens)."""
    torch.manual_seed(1234)
    return GPT2(cfg, pad_vocab=True).train().to(device)


class Trainer:
    """A stack stepping on its batches. The model is built first (no collective), then wrapped
    (collectives: DDP's broadcast, FSDP2's mesh), each agreed on when `ranks` share a group."""

    def __init__(self, stack_name, cfg, group, ranks, o, agree=None):
        agree = agree or (lambda fn: fn())
        model = agree(lambda: new_model(cfg, ranks.device))
        self.stack = agree(lambda: stacks.build(stack_name, model, group, ranks.device, o))
        self.batches = Batches(cfg, o, ranks.rank, ranks.device)
        self.device = ranks.device

    def step(self):
        s = self.stack
        idx, tgt = self.batches()
        with autocast(s.autocast, self.device):
            loss = s.net(idx, tgt)
        loss.backward()
        s.optimizer.step()
        s.optimizer.zero_grad(set_to_none=True)
        return loss.detach()


def param_count(cfg):
    """Parameters of the unpadded model (ours' param_count, the FLOPs' N)."""
    return sum(math.prod(s) for s in param_shapes(cfg))


def _free(device):
    gc.collect()
    release(device)


def reference(spec, cfg, ranks, o, plan):
    """(seconds, state bytes, parameter bytes) of the stack on this rank's own group."""
    t = Trainer(spec.stack, cfg, ranks.own, ranks, o)
    timer = RegionTimer(ranks.device)
    for _ in range(plan.warmup):
        timer.time(t.step)
    settle(lambda: timer.time(t.step), plan.settle_s)  # no collectives: each rank on its own
    seconds = statistics.fmean(timer.time(t.step) for _ in range(plan.ref_steps))
    return seconds, stacks.state_bytes(t.stack), stacks.parameter_bytes(t.stack)


def checksums(stack):
    ps = [p.detach().to(torch.float64) for p in stacks.full_parameters(stack)]
    return sum(p.sum().item() for p in ps), sum(p.square().sum().item() for p in ps)


def check(first_loss, stack, cfg, ranks):
    """"" when the step looks right on every rank, else what is wrong (agreed)."""
    wrong, expected = "", math.log(cfg.vocab)
    if not abs(first_loss - expected) < LOSS_TOLERANCE:
        wrong = f"first-step loss {first_loss:.4f}, expected ≈ ln(V) = {expected:.4f}"
    for v in checksums(stack):
        hi, lo = ranks.max(v), ranks.min(v)
        if not wrong and hi - lo > CHECKSUM_TOLERANCE * max(1.0, abs(hi)):
            wrong = f"the ranks' parameters differ after the warm-up (checksums {lo:.9g} … {hi:.9g})"
    return ranks.agree_error(wrong)


def _agreed(ranks, fn):
    """fn()'s result, or raises SkipCase with the first failing rank's reason on every rank."""
    result, error = None, ""
    try:
        result = fn()
    except Exception as e:  # noqa: BLE001 - every failure becomes the row's reason
        error = failure_message(e)
    error = ranks.agree_error(error)
    if error:
        raise SkipCase(error)
    return result


def _repetition(t, ranks, plan, timer):
    """The group's step (the slowest rank's mean, as train/dp_case.cpp's), the mean of each
    step's slowest rank, CPU seconds per step, the allocator peak of rank 0 and of the fullest
    rank (-1 on the CPU), the fastest rank's mean step."""
    cuda = ranks.device.type == "cuda"
    if cuda:
        torch.cuda.reset_peak_memory_stats(ranks.device)
    own, slowest, cpu0 = [], [], time.process_time()
    for _ in range(plan.steps):
        ranks.barrier()
        s = timer.time(t.step)
        own.append(s)
        slowest.append(ranks.max(s))
    cpu = (time.process_time() - cpu0) / plan.steps
    peak = torch.cuda.max_memory_allocated(ranks.device) if cuda else -1
    mean = statistics.fmean(own)
    return ranks.max(mean), statistics.fmean(slowest), cpu, peak, ranks.max(peak), ranks.min(mean)


def run_case(spec, ranks, o, peak_bf16, family_index):
    """The rows of one case (rank 0's are the ones written)."""
    cfg, plan, dev = model_config(spec.model_name), plan_for(o), ranks.device
    base = spec.name
    try:
        if o.seq > cfg.n_ctx:
            raise SkipCase(f"skipped: T = {o.seq} exceeds the model's context of {cfg.n_ctx}")
        _free(dev)
        own_ref_s, ref_state, ref_params = _agreed(ranks, lambda: reference(spec, cfg, ranks, o, plan))
        ref_s = ranks.mean(own_ref_s)
        ref_range = {"ref_step_min_rank_ms": 1e3 * ranks.min(own_ref_s),
                     "ref_step_max_rank_ms": 1e3 * ranks.max(own_ref_s)}
        _free(dev)
        t = Trainer(spec.stack, cfg, ranks.group, ranks, o, agree=lambda fn: _agreed(ranks, fn))
        timer = RegionTimer(dev)

        def warm_up():
            t0 = time.perf_counter()
            first = t.step().item()  # compiles; the host waits for it
            compile_s = time.perf_counter() - t0
            for _ in range(plan.warmup - 1):
                timer.time(t.step)
            return first, compile_s

        first_loss, compile_s = _agreed(ranks, warm_up)
        if o.verify:
            wrong = check(first_loss, t.stack, cfg, ranks)
            if wrong:
                raise SkipCase("wrong result: " + wrong)
        settle(lambda: timer.time(t.step), plan.settle_s, ranks.max)
        reps = [_repetition(t, ranks, plan, timer) for _ in range(o.repetitions)]
        fixed = dict(_fixed_counters(t, ranks, cfg, o, ref_s, ref_state, ref_params, compile_s), **ref_range)
        rows = []
        for rep, (step_s, slowest_s, cpu, peak, peak_max, fastest_s) in enumerate(reps):
            k = dict(fixed, **_rate_counters(step_s, slowest_s, ref_s, ranks.world, cfg, o, peak_bf16),
                     steps_measured=float(plan.steps), step_max_rank_ms=1e3 * step_s,
                     step_min_rank_ms=1e3 * fastest_s)
            if peak >= 0:
                k.update(peak_mem_bytes=float(peak), peak_mem_max_rank_bytes=float(peak_max))
            rows.append(gb_json.iteration_row(base, family_index, rep, o.repetitions, plan.steps,
                                              step_s, cpu, k, t.stack.label))
        return rows + (gb_json.aggregate_rows(rows) if o.repetitions > 1 else [])
    except Exception as e:  # noqa: BLE001 - agreed SkipCase, or a check before any collective
        return [gb_json.errored_row(base, family_index, failure_message(e))]
    finally:
        t = None
        _free(dev)


def _fixed_counters(t, ranks, cfg, o, ref_s, ref_state, ref_params, compile_s):
    state, params = stacks.state_bytes(t.stack), stacks.parameter_bytes(t.stack)
    k = {"ranks": float(ranks.world), "ref_step_ms": 1e3 * ref_s, "compile_s": compile_s,
         "state_bytes": float(state), "ref_state_bytes": float(ref_state),
         "param_bytes": float(params), "ref_param_bytes": float(ref_params),
         "params": float(param_count(cfg))}
    if ref_state > 0:
        k["state_ratio"] = state / ref_state
    if ref_params > 0:
        k["param_ratio"] = params / ref_params
    return k


def _rate_counters(step_s, slowest_s, ref_s, world, cfg, o, peak_bf16):
    """As train/dp_case.cpp's: from the group's step, with the mean of each step's slowest rank
    beside it."""
    tokens = o.batch * o.seq
    flops = model_flops_per_token(param_count(cfg), cfg, o.seq) * tokens  # per GPU and step
    return {"step_ms": 1e3 * step_s, "slowest_rank_step_ms": 1e3 * slowest_s,
            "tokens/s": world * tokens / step_s, "tokens_per_s_per_gpu": tokens / step_s,
            "scaling_efficiency": ref_s / step_s, "FLOP/s": flops / step_s,
            "mfu_pct": 100.0 * flops / step_s / peak_bf16 if peak_bf16 > 0 else 0.0}
