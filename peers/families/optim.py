"""optim/inductor_<algorithm>/fp32/model:<size>: one optimizer step over the parameter shapes
of each selected GPT-2 size (fp32 parameters N(0, 0.02), fp32 gradients N(0, 1e-3)), the step
under torch.compile, with the hyper-parameters of ops/optim/: AdamW (lr 1e-3, weight decay
0.01) and Adam (torch.optim, foreach), Lion (lr 1e-4, betas 0.9/0.99; written with foreach ops:
PyTorch has no Lion), Adafactor (torch.optim.Adafactor, lr 1e-2). `inductor_adamw` pairs with
`adamw` (filters inductor_adamw adamw), and so on. Default: AdamW; --full: all four.
Bytes as ops/optim/optim_cost.h: AdamW/Adam 28 B/param, Lion 20, Adafactor 24 (matrices) /
32 (vectors). Verified: one compiled step against one eager step on a copy. The step launches
from the host (Dynamo's guards, the foreach kernels over ~150 tensors): rows end in launch:graph
and launch:eager."""
import torch

from peers.case import COPY, Case, bench_name, compiled, register
from peers.gpt2 import param_shapes
from peers.models import model_config
from peers.tensors import device_of
from peers.verify import check_close, first_error

LION = dict(lr=1e-4, beta1=0.9, beta2=0.99, weight_decay=0.0)


class Lion:
    """Lion with foreach ops: update = sign(b1·m + (1 − b1)·g); p −= lr·(update + wd·p);
    m = b2·m + (1 − b2)·g."""

    def __init__(self, params, grads):
        self.params, self.grads = params, grads
        self.m = [torch.zeros_like(p) for p in params]

    def step(self):
        c = LION
        upd = torch._foreach_lerp(self.m, self.grads, 1 - c["beta1"])
        torch._foreach_sign_(upd)
        if c["weight_decay"]:
            torch._foreach_mul_(self.params, 1 - c["lr"] * c["weight_decay"])
        torch._foreach_add_(self.params, upd, alpha=-c["lr"])
        torch._foreach_lerp_(self.m, self.grads, 1 - c["beta2"])


def make_optimizer(algo, params, grads):
    for p, g in zip(params, grads):
        p.grad = g
    if algo == "adamw":
        return torch.optim.AdamW(params, lr=1e-3, weight_decay=1e-2, foreach=True)
    if algo == "adam":
        return torch.optim.Adam(params, lr=1e-3, foreach=True)
    if algo == "adafactor":
        return torch.optim.Adafactor(params, lr=1e-2, foreach=True)
    return Lion(params, grads)


def step_state(opt, params):
    """What one step updates in place: the parameters and the optimizer's tensors (moments, step
    counts), by name."""
    per_param = [{"m": m} for m in opt.m] if isinstance(opt, Lion) else \
        [opt.state.get(p, {}) for p in params]
    out = {f"parameter {i}": p for i, p in enumerate(params)}
    for i, st in enumerate(per_param):
        out.update({f"{k} {i}": t for k, t in st.items() if torch.is_tensor(t)})
    return out


def step_bytes(algo, shapes, numel):
    if algo == "lion":
        return 20.0 * numel
    if algo == "adafactor":
        return sum((24.0 if len(s) == 2 else 32.0) * torch.Size(s).numel() for s in shapes)
    return 28.0 * numel


def make(algo, model, o):
    dev, shapes = device_of(o), param_shapes(model_config(model))
    gen = torch.Generator(device=dev).manual_seed(99)
    params = [(torch.randn(s, device=dev, generator=gen) * 0.02) for s in shapes]
    grads = [(torch.randn(s, device=dev, generator=gen) * 1e-3) for s in shapes]
    start = [p.clone() for p in params]
    opt = make_optimizer(algo, params, grads)
    step, label = compiled(opt.step, o)
    calls = [0]

    def run():
        step()
        calls[0] += 1

    def verify():  # as many eager steps from the start as the compiled step has taken
        run()
        ref = [p.clone() for p in start]
        eager = make_optimizer(algo, ref, [g.clone() for g in grads])
        for _ in range(calls[0]):
            eager.step()
        return first_error(*(lambda i=i: check_close(params[i], ref[i], 1e-5, f"parameter {i}")
                             for i in range(len(params))))

    numel = sum(p.numel() for p in params)
    nbytes = step_bytes(algo, shapes, numel)
    return Case(run=run, verify=verify, state=lambda: step_state(opt, params), bytes=nbytes,
                peak=COPY, label=label,
                counters={"params": float(numel), "bytes/param": nbytes / numel})


def register_cases(o):
    algos = ("adamw", "adam", "lion", "adafactor") if o.full or not o.cuda else ("adamw",)
    for model in o.models:
        for algo in algos:
            register(bench_name("optim", "inductor_" + algo, "fp32", f"model:{model}"),
                     lambda a=algo, m=model: make(a, m, o), host_launched=True)
