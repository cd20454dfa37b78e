"""A user's implementations in plain PyTorch (the CPU tests' stand-in for a Triton kernel):
softmax fwd and bwd declared with @implements as `plain` (rows softmax/plain/...), counting
their calls so a test sees that they ran; and callables for --impl: a softmax 5% off, one that
returns nothing, a LayerNorm forward without autograd and one with it, a cross-entropy, an
attention."""
import torch
import torch.nn.functional as F

from peers import implements

CALLS = {"fwd": 0, "bwd": 0}


@implements("softmax", "fwd", name="plain")
def softmax_fwd(x):
    CALLS["fwd"] += 1
    x32 = x.float()
    e = (x32 - x32.amax(-1, keepdim=True)).exp()
    return (e / e.sum(-1, keepdim=True)).to(x.dtype)


@implements("softmax", "bwd", name="plain")
def softmax_bwd(y, dy):
    CALLS["bwd"] += 1
    y32, dy32 = y.float(), dy.float()
    return (y32 * (dy32 - (y32 * dy32).sum(-1, keepdim=True))).to(dy.dtype)


def softmax_off_by_5pct(x):
    return torch.softmax(x, -1) * 1.05


def returns_none(x):
    return None


def layernorm_autograd(x, branch, gamma, beta):
    h = x + branch
    return h, F.layer_norm(h, (h.shape[-1],), gamma, beta, 1e-5).to(branch.dtype)


def layernorm_no_grad(x, branch, gamma, beta):
    with torch.no_grad():  # a forward-only kernel: nothing for autograd to follow
        return layernorm_autograd(x, branch, gamma, beta)


def cross_entropy(logits, targets, classes):
    return F.cross_entropy(logits[:, :classes].float(), targets)


def attention(q, k, v, causal):
    return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
