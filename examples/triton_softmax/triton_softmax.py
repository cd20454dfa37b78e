"""A row softmax in Triton, forward and backward, declared as the peer runner's `triton`
implementation of the softmax family (docs/extending-python.md):

  python -m peers --impl_module=examples/triton_softmax/triton_softmax.py --benchmark_filter=^softmax/triton/

Rows softmax/triton/<dtype>/<fwd|bwd>/... are checked against float64 and timed as the peers'
are, beside softmax/fused (ours, C++) and softmax/inductor. One program per row, in fp32:
  - a row of up to MAX_TILE columns is one tile held in registers: read once, written once;
  - a longer row (the LM head's 50,304) is walked in MAX_TILE tiles twice: an online max and
    sum (each lane rescales its running sum when its max grows), then the writing pass.
Backward: dx = y · (dy − Σ y·dy), one tile or the same two passes.
Needs Triton (it comes with PyTorch's CUDA wheels) and a CUDA GPU: on the CPU the rows are
skipped with the reason."""
import torch

from peers import implements

try:
    import triton
    import triton.language as tl
except ImportError as e:  # one line, as the peer runner reports a module it cannot import
    raise ImportError(f"examples/triton_softmax needs Triton, which comes with PyTorch's CUDA "
                      f"wheels on a GPU host ({e})") from None

MAX_TILE = 8192  # columns held in registers at once: 16 fp32 values a thread at 16 warps


@triton.jit
def _softmax_fwd(x_ptr, y_ptr, cols, BLOCK: tl.constexpr, ONE_TILE: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row, y_row = x_ptr + row * cols, y_ptr + row * cols  # contiguous rows
    offs = tl.arange(0, BLOCK)
    if ONE_TILE:
        mask = offs < cols
        x = tl.load(x_row + offs, mask=mask, other=-float("inf")).to(tl.float32)
        e = tl.exp(x - tl.max(x, 0))
        tl.store(y_row + offs, (e / tl.sum(e, 0)).to(y_ptr.dtype.element_ty), mask=mask)
    else:
        # cols > BLOCK: the first tile is full, so every lane's running max is finite after it
        # and a masked element (-inf) adds exp(-inf) = 0.
        m = tl.full([BLOCK], -float("inf"), tl.float32)
        s = tl.zeros([BLOCK], tl.float32)
        for start in range(0, cols, BLOCK):
            mask = start + offs < cols
            x = tl.load(x_row + start + offs, mask=mask, other=-float("inf")).to(tl.float32)
            grown = tl.maximum(m, x)
            s = s * tl.exp(m - grown) + tl.exp(x - grown)
            m = grown
        row_max = tl.max(m, 0)
        inv_sum = 1.0 / tl.sum(s * tl.exp(m - row_max), 0)
        for start in range(0, cols, BLOCK):
            mask = start + offs < cols
            x = tl.load(x_row + start + offs, mask=mask, other=-float("inf")).to(tl.float32)
            y = tl.exp(x - row_max) * inv_sum
            tl.store(y_row + start + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _softmax_bwd(y_ptr, dy_ptr, dx_ptr, cols, BLOCK: tl.constexpr, ONE_TILE: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    y_row, dy_row, dx_row = y_ptr + row * cols, dy_ptr + row * cols, dx_ptr + row * cols
    offs = tl.arange(0, BLOCK)
    if ONE_TILE:
        mask = offs < cols
        y = tl.load(y_row + offs, mask=mask, other=0.0).to(tl.float32)
        dy = tl.load(dy_row + offs, mask=mask, other=0.0).to(tl.float32)
        dx = y * (dy - tl.sum(y * dy, 0))
        tl.store(dx_row + offs, dx.to(dx_ptr.dtype.element_ty), mask=mask)
    else:
        acc = tl.zeros([BLOCK], tl.float32)
        for start in range(0, cols, BLOCK):
            mask = start + offs < cols
            y = tl.load(y_row + start + offs, mask=mask, other=0.0).to(tl.float32)
            dy = tl.load(dy_row + start + offs, mask=mask, other=0.0).to(tl.float32)
            acc += y * dy
        dot = tl.sum(acc, 0)
        for start in range(0, cols, BLOCK):
            mask = start + offs < cols
            y = tl.load(y_row + start + offs, mask=mask, other=0.0).to(tl.float32)
            dy = tl.load(dy_row + start + offs, mask=mask, other=0.0).to(tl.float32)
            tl.store(dx_row + start + offs, (y * (dy - dot)).to(dx_ptr.dtype.element_ty), mask=mask)


def launch_config(cols):
    """(BLOCK, ONE_TILE, num_warps) for rows of `cols` columns."""
    block = min(triton.next_power_of_2(cols), MAX_TILE)
    warps = 4 if block <= 1024 else 8 if block <= 4096 else 16
    return block, block >= cols, warps


def _rows(*tensors):
    """(rows, cols) of contiguous 2-D CUDA tensors of one shape."""
    shape = tensors[0].shape
    for t in tensors:
        if t.dim() != 2 or t.shape != shape or not t.is_contiguous():
            raise ValueError("the Triton softmax takes contiguous 2-D tensors of one shape")
        if not t.is_cuda:
            raise ValueError("the Triton softmax runs on CUDA tensors")
    return shape[0], shape[1]


@implements("softmax", "fwd", name="triton", cuda_only=True)
def softmax_fwd(x):
    """softmax over the last dimension of x (rows, cols)."""
    rows, cols = _rows(x)
    y = torch.empty_like(x)
    block, one_tile, warps = launch_config(cols)
    _softmax_fwd[(rows,)](x, y, cols, BLOCK=block, ONE_TILE=one_tile, num_warps=warps)
    return y


@implements("softmax", "bwd", name="triton", cuda_only=True)
def softmax_bwd(y, dy):
    """The gradient of softmax's input, from its output y and the output's gradient dy."""
    rows, cols = _rows(y, dy)
    dx = torch.empty_like(dy)
    block, one_tile, warps = launch_config(cols)
    _softmax_bwd[(rows,)](y, dy, dx, cols, BLOCK=block, ONE_TILE=one_tile, num_warps=warps)
    return dx
