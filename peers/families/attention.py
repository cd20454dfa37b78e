"""attention/<impl>/<dtype>/<causal|noncausal>/<fwd|fwd_bwd>/B:b/H:h/L:l/d:d, as
bench/attention.cpp, over the same grid:
  inductor:      the naive attention (matmul -> mask -> softmax -> matmul), compiled: pairs
                 with `naive` (and, by its name, with every SDPA backend and `flash`)
  inductor_flex: FlexAttention (torch.nn.attention.flex_attention) with a causal block mask,
                 compiled: Inductor's generated flash-style kernel; pairs with `flash`
Default on a GPU: bf16, causal, L = 4096, d = 64 (a point of the C++ default grid); --full:
the C++ full sweep (L 128..16384 x d 16..128, causal and not, fp32 and bf16).
Forward+backward is host-launched (autograd): its rows end in launch:graph and launch:eager.
A user's Python callable (--impl, @implements: peers/impl.py) takes the attention's place, as
USER_PASSES says."""
import itertools
import math

import torch

from peers.case import GEMM_BF16, GEMM_FP32, Case, SkipCase, bench_name, compiled_or_user, register
from peers.impl import with_users
from peers.models import model_config
from peers.tensors import TORCH_DTYPE, device_of, peer_dtypes, passes
from peers.verify import check_close, check_returned, first_error


# What a user's callable takes and returns: q, k, v (B, H, L, d) in the dtype, causal a bool;
# out (B, H, L, d), softmax(q·kᵀ/√d)·v; for fwd_bwd autograd must reach q, k and v. Names it
# cannot take: bench/attention.cpp's (ops/attention_ref.cpp) and ours.
USER_PASSES = {"fwd": "fn(q, k, v, causal) -> out", "fwd_bwd": "fn(q, k, v, causal) -> out, differentiable"}
PEER_IMPLS = ("inductor", "inductor_flex")
RESERVED_IMPLS = ("naive", "sdpa_math", "sdpa_efficient", "sdpa_flash", "sdpa_cudnn", "flash",
                  "flash_sm90", "flash_sm90_fp8", *PEER_IMPLS)


def attention_flops(b, h, l, d, causal, backward):  # fixtures/cost.cpp
    f = 4.0 * b * h * l * l * d * (0.5 if causal else 1.0)
    return f * 2.5 if backward else f


def tolerance(dtype, grad):  # attention_tolerance() of bench/attention.cpp
    return 1e-4 if dtype == "fp32" else (5e-2 if grad else 2e-2)


def naive(q, k, v, causal):
    s = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(q.shape[-1]))
    if causal:
        l = q.shape[-2]
        mask = torch.ones(l, l, dtype=torch.bool, device=q.device).triu(1)
        s = s.masked_fill(mask, float("-inf"))
    return torch.softmax(s.float(), -1).to(q.dtype) @ v


def flex_fn(b, h, l, causal, device):
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention
    if not causal:
        return lambda q, k, v: flex_attention(q, k, v)
    mask = create_block_mask(lambda b_, h_, qi, ki: qi >= ki, None, None, l, l, device=str(device))
    return lambda q, k, v: flex_attention(q, k, v, block_mask=mask)


def grid(o):
    if o.cuda and o.full:
        return [128, 256, 512, 1024, 2048, 4096, 8192, 16384], [16, 32, 64, 128], [True, False]
    if o.cuda:
        return [4096], [64], [True]
    return [l for l in (32, 64) if l <= o.seq], [16, 32], [True]


def make(impl, dtype, causal, backward, b, h, l, d, o, user=None):
    dev, t = device_of(o), TORCH_DTYPE[dtype]
    try:
        body = flex_fn(b, h, l, causal, dev) if impl == "inductor_flex" else \
            (lambda q, k, v: naive(q, k, v, causal))
    except (ImportError, RuntimeError) as e:
        raise SkipCase(f"unsupported: {str(e).splitlines()[0]}")
    fn, label = compiled_or_user(body, o, user, causal)
    q, k, v = (torch.randn(b, h, l, d, device=dev, dtype=t).requires_grad_(backward) for _ in range(3))
    dout = torch.randn(b, h, l, d, device=dev, dtype=t)
    st = {}

    def run():
        st.clear()  # the last call's output and gradients are dropped first, then rewritten
        for x in (q, k, v):
            x.grad = None
        out = fn(q, k, v)
        if backward:
            out.backward(dout)
        st["out"] = out.detach()

    def outputs():
        grads = {"dq": q.grad, "dk": k.grad, "dv": v.grad} if backward else {}
        return {"out": st["out"], **grads}

    def verify():
        run()
        heads = min(h, 2)
        piece = lambda x: x.detach()[:1, :heads]  # noqa: E731 - heads are independent
        ref_t = torch.float32 if dev.type == "cuda" else torch.float64
        tf32 = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = False
        try:
            qr, kr, vr = (piece(x).to(ref_t).requires_grad_(backward) for x in (q, k, v))
            ref = naive(qr, kr, vr, causal)
            checks = [lambda: check_returned(st["out"], (b, h, l, d)),
                      lambda: check_close(piece(st["out"]), ref, tolerance(dtype, False), "output")]
            if backward:
                ref.backward(piece(dout).to(ref_t))
                for name, mine, theirs in (("dq", q, qr), ("dk", k, kr), ("dv", v, vr)):
                    checks.append(lambda n=name, m=mine, r=theirs:
                                  check_close(piece(m.grad), r.grad, tolerance(dtype, True), n))
            return first_error(*checks)
        finally:
            torch.backends.cuda.matmul.allow_tf32 = tf32

    flops = attention_flops(b, h, l, d, causal, False) + \
        (attention_flops(b, h, l, d, causal, True) if backward else 0.0)
    return Case(run=run, verify=verify, outputs=outputs, flops=flops, label=label,
                peak=GEMM_BF16 if dtype == "bf16" else GEMM_FP32)


def register_cases(o):
    ls, ds, masks = grid(o)
    heads = sorted({model_config(m).n_head for m in o.models})
    dtypes = peer_dtypes(o)
    for h, dtype, causal, (backward, pass_name), l, d in itertools.product(
            heads, dtypes, masks, passes("fwd_bwd"), ls, ds):
        for impl, user in with_users(o, "attention", pass_name, PEER_IMPLS):
            register(bench_name("attention", impl, dtype, "causal" if causal else "noncausal",
                                pass_name, f"B:{o.batch}", f"H:{h}", f"L:{l}", f"d:{d}"),
                     lambda a=(impl, dtype, causal, backward, o.batch, h, l, d), u=user: make(*a, o, u),
                     host_launched=backward)
