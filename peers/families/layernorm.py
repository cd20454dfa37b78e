"""layernorm/inductor/<dtype>/<fwd|fwd_bwd>/rows:R/cols:C, as bench/layernorm.cpp: the pre-LN
step h = x + branch, y = LayerNorm(h) (x, h fp32; branch, y and y's gradient in the dtype),
compiled; forward+backward takes upstream gradients for h and y. Default bf16; --full adds fp32.
Forward+backward is host-launched (autograd): its rows end in launch:graph and launch:eager.
A user's Python callable (--impl, @implements: peers/impl.py) takes add_layernorm's place, as
USER_PASSES says."""
import torch
import torch.nn.functional as F

from peers.case import COPY, Case, bench_name, compiled_or_user, register
from peers.impl import with_users
from peers.models import model_config
from peers.tensors import TORCH_DTYPE, device_of, peer_dtypes, elem_bytes, passes
from peers.verify import check_close, check_returned, first_error, sample_rows

EPS = 1e-5
# What a user's callable takes and returns (x, h: (rows, cols) fp32; branch, y: the dtype; gamma,
# beta: (cols,) fp32; eps 1e-5); for fwd_bwd autograd must reach x, branch, gamma and beta
# (a torch.autograd.Function). Names it cannot take: bench/layernorm.cpp's and ours.
USER_PASSES = {"fwd": "fn(x, branch, gamma, beta) -> (h, y)",
               "fwd_bwd": "fn(x, branch, gamma, beta) -> (h, y), differentiable"}
RESERVED_IMPLS = ("torch", "fused", "inductor")


def add_layernorm(x, branch, gamma, beta):
    h = x + branch
    return h, F.layer_norm(h, (h.shape[-1],), gamma, beta, EPS).to(branch.dtype)


def make(dtype, backward, rows, cols, o, user=None):
    dev, low = device_of(o), TORCH_DTYPE[dtype]
    fn, label = compiled_or_user(add_layernorm, o, user)
    x = (3 + 2 * torch.randn(rows, cols, device=dev)).requires_grad_(True)
    branch = torch.randn(rows, cols, device=dev).to(low).requires_grad_(True)
    gamma = (1 + 0.2 * torch.randn(cols, device=dev)).requires_grad_(True)
    beta = (0.2 * torch.randn(cols, device=dev)).requires_grad_(True)
    gh, gy = torch.randn(rows, cols, device=dev), torch.randn(rows, cols, device=dev).to(low)
    leaves = (x, branch, gamma, beta)
    # The peer's forward row checks dx too (its forward is differentiable); a user's forward
    # need not be.
    graded = backward or user is None
    st = {}

    def call(with_backward):
        st.clear()  # the last call's outputs and gradients are dropped first, then rewritten
        for t in leaves:
            t.grad = None
        h, y = fn(*leaves) if with_backward else fn(*(t.detach() for t in leaves))
        if with_backward:
            torch.autograd.backward([h, y], [gh, gy])
        st["h"], st["y"] = h.detach(), y.detach()  # no autograd graph outlives the call

    def outputs():
        grads = {"d" + k: t.grad for k, t in zip(("x", "branch", "gamma", "beta"), leaves)}
        return {"h": st["h"], "y": st["y"], **grads}

    def verify():
        call(graded)
        idx = sample_rows(rows, dev)
        pick = lambda t: t.detach().index_select(0, idx).double()  # noqa: E731
        xr = pick(x).requires_grad_(True)
        h, y = add_layernorm(xr, pick(branch), gamma.detach().double(), beta.detach().double())
        torch.autograd.backward([h, y], [pick(gh), pick(gy)])
        tol = 1e-2 if dtype == "bf16" else 1e-4
        checks = [lambda: check_returned(st["h"], (rows, cols), "h"),
                  lambda: check_returned(st["y"], (rows, cols), "y"),
                  lambda: check_close(st["y"].index_select(0, idx), y, tol, "y")]
        if graded:
            checks.append(lambda: check_close(x.grad.index_select(0, idx), xr.grad, 1e-4, "dx"))
        return first_error(*checks)

    b, n = float(elem_bytes(dtype)), float(rows) * cols
    return Case(run=lambda: call(backward), verify=verify, outputs=outputs if backward else None,
                bytes=n * (20 + 4 * b if backward else 8 + 2 * b), peak=COPY, label=label)


def register_cases(o):
    widths = sorted({model_config(m).d_model for m in o.models})
    for dtype in peer_dtypes(o):
        for backward, pass_name in passes("fwd_bwd"):
            for cols in widths:
                for impl, user in with_users(o, "layernorm", pass_name, ("inductor",)):
                    register(bench_name("layernorm", impl, dtype, pass_name, f"rows:{o.tokens}",
                                        f"cols:{cols}"),
                             lambda d=dtype, b=backward, c=cols, u=user: make(d, b, o.tokens, c, o, u),
                             host_launched=backward)
