"""layernorm/inductor/<dtype>/<fwd|fwd_bwd>/rows:R/cols:C, as bench/layernorm.cpp: the pre-LN
step h = x + branch, y = LayerNorm(h) (x, h fp32; branch, y and y's gradient in the dtype),
compiled; forward+backward takes upstream gradients for h and y. Default bf16; --full adds fp32.
Forward+backward is host-launched (autograd): its rows end in launch:graph and launch:eager."""
import torch
import torch.nn.functional as F

from peers.case import COPY, Case, bench_name, compiled, register
from peers.models import model_config
from peers.tensors import TORCH_DTYPE, device_of, peer_dtypes, elem_bytes, passes
from peers.verify import check_close, first_error, sample_rows

EPS = 1e-5


def add_layernorm(x, branch, gamma, beta):
    h = x + branch
    return h, F.layer_norm(h, (h.shape[-1],), gamma, beta, EPS).to(branch.dtype)


def make(dtype, backward, rows, cols, o):
    dev, low = device_of(o), TORCH_DTYPE[dtype]
    x = (3 + 2 * torch.randn(rows, cols, device=dev)).requires_grad_(True)
    branch = torch.randn(rows, cols, device=dev).to(low).requires_grad_(True)
    gamma = (1 + 0.2 * torch.randn(cols, device=dev)).requires_grad_(True)
    beta = (0.2 * torch.randn(cols, device=dev)).requires_grad_(True)
    gh, gy = torch.randn(rows, cols, device=dev), torch.randn(rows, cols, device=dev).to(low)
    leaves = (x, branch, gamma, beta)
    fn, label = compiled(add_layernorm, o)
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
        call(True)
        idx = sample_rows(rows, dev)
        pick = lambda t: t.detach().index_select(0, idx).double()  # noqa: E731
        xr = pick(x).requires_grad_(True)
        h, y = add_layernorm(xr, pick(branch), gamma.detach().double(), beta.detach().double())
        torch.autograd.backward([h, y], [pick(gh), pick(gy)])
        tol = 1e-2 if dtype == "bf16" else 1e-4
        return first_error(lambda: check_close(st["y"].index_select(0, idx), y, tol, "y"),
                           lambda: check_close(x.grad.index_select(0, idx), xr.grad, 1e-4, "dx"))

    b, n = float(elem_bytes(dtype)), float(rows) * cols
    return Case(run=lambda: call(backward), verify=verify, outputs=outputs if backward else None,
                bytes=n * (20 + 4 * b if backward else 8 + 2 * b), peak=COPY, label=label)


def register_cases(o):
    widths = sorted({model_config(m).d_model for m in o.models})
    for dtype in peer_dtypes(o):
        for backward, pass_name in passes("fwd_bwd"):
            for cols in widths:
                register(bench_name("layernorm", "inductor", dtype, pass_name, f"rows:{o.tokens}",
                                    f"cols:{cols}"),
                         lambda d=dtype, b=backward, c=cols: make(d, b, o.tokens, c, o),
                         host_launched=backward)
