"""loss/inductor/<dtype>/<fwd|fwd_bwd>/vocab/rows:R/classes:V/cols:C, as bench/cross_entropy.cpp:
the mean cross-entropy of the LM head's logits (the padded vocabulary in columns, the first V
counted, converted to fp32: the torch impl's composition), compiled. Default bf16.
Forward+backward is host-launched (autograd): its rows end in launch:graph and launch:eager.
A user's Python callable (--impl, @implements: peers/impl.py) takes cross_entropy's place, as
USER_PASSES says."""
import torch
import torch.nn.functional as F

from peers.case import COPY, Case, bench_name, compiled_or_user, register
from peers.impl import with_users
from peers.models import model_config
from peers.tensors import TORCH_DTYPE, device_of, peer_dtypes, elem_bytes, passes
from peers.verify import check_close, first_error, sample_rows


# What a user's callable takes and returns: logits (rows, cols) in the dtype, the first `classes`
# columns counted; targets (rows,) int64; the mean loss, a 0-dimensional fp32 tensor; for
# fwd_bwd autograd must reach logits. Names it cannot take: bench/loss.cpp's and ours.
USER_PASSES = {"fwd": "fn(logits, targets, classes) -> loss",
               "fwd_bwd": "fn(logits, targets, classes) -> loss, differentiable"}
RESERVED_IMPLS = ("torch", "fused", "inductor")


def cross_entropy(logits, targets, classes):
    return F.cross_entropy(logits[:, :classes].float(), targets)


def reference_loss(logits, targets, classes, chunk=1024):
    """The mean loss in float64, a chunk of rows at a time."""
    total = torch.zeros((), dtype=torch.float64, device=logits.device)
    for s in range(0, logits.shape[0], chunk):
        x = logits[s:s + chunk, :classes].double()
        t = targets[s:s + chunk]
        total += (torch.logsumexp(x, -1) - x.gather(1, t[:, None])[:, 0]).sum()
    return total / logits.shape[0]


def make(dtype, backward, rows, classes, cols, o, user=None):
    dev = device_of(o)
    fn, label = compiled_or_user(lambda x, t: cross_entropy(x, t, classes), o, user, classes)
    logits = (torch.randn(rows, cols, device=dev) * 3).to(TORCH_DTYPE[dtype])
    targets = torch.randint(classes, (rows,), device=dev)
    logits.requires_grad_(backward)
    st = {}

    def run():
        logits.grad = None  # cleared first, so the last call's gradient is its output
        loss = fn(logits, targets)
        if backward:
            loss.backward()
        st["loss"] = loss.detach()  # no autograd graph outlives the call

    def outputs():
        return {"loss": st["loss"], **({"grad": logits.grad} if backward else {})}

    def verify():
        run()
        x = logits.detach()
        checks = [lambda: check_close(st["loss"].detach().reshape(1),
                                      reference_loss(x, targets, classes).reshape(1), 1e-4, "loss")]
        if backward:
            idx = sample_rows(rows, dev)
            xs = x.index_select(0, idx).double()
            ref = torch.zeros_like(xs)
            ref[:, :classes] = torch.softmax(xs[:, :classes], -1)
            ref[torch.arange(len(idx), device=dev), targets.index_select(0, idx)] -= 1
            grad = logits.grad.index_select(0, idx)
            checks.append(lambda: check_close(grad, ref / rows, 1e-4 if dtype == "fp32" else 1e-2, "grad"))
        return first_error(*checks)

    b = float(elem_bytes(dtype))
    counted = float(rows) * classes * b
    return Case(run=run, verify=verify, outputs=outputs, peak=COPY, label=label,
                bytes=2 * counted + float(rows) * cols * b if backward else counted)


def register_cases(o):
    shapes = sorted({(model_config(m).vocab, model_config(m).padded_vocab) for m in o.models})
    for dtype in peer_dtypes(o):
        for backward, pass_name in passes("fwd_bwd"):
            for classes, cols in shapes:
                for impl, user in with_users(o, "loss", pass_name, ("inductor",)):
                    register(bench_name("loss", impl, dtype, pass_name, "vocab", f"rows:{o.tokens}",
                                        f"classes:{classes}", f"cols:{cols}"),
                             lambda d=dtype, b=backward, v=classes, c=cols, u=user:
                             make(d, b, o.tokens, v, c, o, u),
                             host_launched=backward)
