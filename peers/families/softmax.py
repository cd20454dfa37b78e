"""softmax/<impl>/<dtype>/<fwd|bwd>/<shape>/rows:R/cols:C, as bench/softmax.cpp.
  inductor:       torch.softmax (forward) and torch._softmax_backward_data, compiled
  inductor_naive: the five-op softmax (amax, subtract, exp, sum, divide; backward: multiply,
                  sum, subtract, multiply), compiled: pairs with `naive`
  a user's:       a Python callable (--impl, @implements: peers/impl.py), as USER_PASSES says
Default: bf16, the peers' shape attn.small.B64 (GPU) and the LM-head logits (vocab); --full:
every shape and dtype of bench/softmax.cpp."""
import torch

from peers.case import COPY, Case, bench_name, compiled_or_user, register
from peers.impl import with_users
from peers.models import model_config
from peers.tensors import TORCH_DTYPE, device_of, peer_dtypes, elem_bytes, passes
from peers.verify import check_close, check_returned, sample_rows


def naive_fwd(x):
    m = x.amax(-1, keepdim=True)
    e = (x - m).exp()
    return e / e.sum(-1, keepdim=True)


def naive_bwd(y, dy):
    return y * (dy - (y * dy).sum(-1, keepdim=True))


def torch_fwd(x):
    return torch.softmax(x, -1)


def torch_bwd(y, dy):
    return torch._softmax_backward_data(dy, y, -1, y.dtype)


FNS = {"inductor": (torch_fwd, torch_bwd), "inductor_naive": (naive_fwd, naive_bwd)}
# What a user's callable takes and returns, per pass (x, y, dy: (rows, cols), the row's dtype,
# contiguous; softmax over the last dimension), and the names it cannot take: bench/softmax.cpp's
# and ours.
USER_PASSES = {"fwd": "fn(x) -> y", "bwd": "fn(y, dy) -> dx = y * (dy - sum(y * dy, -1))"}
RESERVED_IMPLS = ("naive", "torch", "fused", *FNS)


def tolerance(impl, dtype):  # softmax_tolerance() of bench/softmax.cpp (a user's: torch's)
    if dtype == "fp32":
        return 2e-5
    return 3e-2 if impl == "inductor_naive" else 1e-2


def shapes(o):
    """[(label, rows, cols)] as softmax_shapes() of bench/softmax.cpp."""
    out = []
    if o.full or not o.cuda:
        seqs = (128, 256, 512, 1024) if o.cuda else (16, 32, 64)
        for m in o.models:
            cfg = model_config(m)
            out += [("attn." + m, o.batch * cfg.n_head * t, t) for t in seqs if t <= o.seq]
    for cols in sorted({model_config(m).padded_vocab for m in o.models}):
        out.append(("vocab", o.tokens, cols))
    if o.cuda:
        peer = ("attn.small.B64", 64 * 12 * 1024, 1024)
        if not any(s[1:] == peer[1:] for s in out):
            out.append(peer)
    if o.full:
        sweep = [2 ** k for k in range(5, 17)] if o.cuda else [32, 128, 1024, 4096]
        elements = 1 << (28 if o.cuda else 15)
        out += [("sweep", max(1, elements // c), c) for c in sweep]
    return out


def make(impl, dtype, backward, rows, cols, o, user=None):
    dev, t = device_of(o), TORCH_DTYPE[dtype]
    fn, label = compiled_or_user(None if user else FNS[impl][backward], o, user)
    x = (torch.randn(rows, cols, device=dev) * 3).to(t)
    st = {}
    if backward:
        y, dy = torch.softmax(x, -1), torch.randn(rows, cols, device=dev, dtype=t)
        run = lambda: st.__setitem__("out", fn(y, dy))  # noqa: E731
    else:
        run = lambda: st.__setitem__("out", fn(x))  # noqa: E731

    def verify():
        run()
        idx = sample_rows(rows, dev)
        xs = x.index_select(0, idx).double()
        ref = torch.softmax(xs, -1)
        if backward:
            ys, dys = y.index_select(0, idx).double(), dy.index_select(0, idx).double()
            ref = ys * (dys - (ys * dys).sum(-1, keepdim=True))
        return check_returned(st["out"], (rows, cols)) or \
            check_close(st["out"].index_select(0, idx), ref, tolerance(impl, dtype))

    nbytes = 2.0 * rows * cols * elem_bytes(dtype) * (1.5 if backward else 1.0)
    return Case(run=run, verify=verify, bytes=nbytes, peak=COPY, label=label)


def register_cases(o):
    dtypes = peer_dtypes(o)
    for dtype in dtypes:
        for backward, pass_name in passes("bwd"):
            for label, rows, cols in shapes(o):
                for impl, user in with_users(o, "softmax", pass_name, FNS):
                    register(bench_name("softmax", impl, dtype, pass_name, label, f"rows:{rows}",
                                        f"cols:{cols}"),
                             lambda i=impl, d=dtype, b=backward, r=rows, c=cols, u=user:
                             make(i, d, b, r, c, o, u))
