"""Checks against a reference, as fixtures/verify.*: relative Frobenius error in float64."""
import torch


def relative_error(out, ref):
    if tuple(out.shape) != tuple(ref.shape):
        return float("nan")
    dev = out.device if out.device == ref.device else torch.device("cpu")
    o = out.detach().reshape(-1).to(dev, torch.float64)
    r = ref.detach().reshape(-1).to(dev, torch.float64)
    num, den = torch.linalg.vector_norm(o - r).item(), torch.linalg.vector_norm(r).item()
    if den == 0:
        return 0.0 if num == 0 else float("inf")
    return num / den


def check_close(out, ref, tol, what=""):
    """"" when out is within tol of ref (relative Frobenius), else the reason."""
    prefix = f"{what}: " if what else ""
    if tuple(out.shape) != tuple(ref.shape):
        return f"{prefix}shape {tuple(out.shape)} differs from the reference {tuple(ref.shape)}"
    err = relative_error(out, ref)
    if err <= tol:
        return ""
    return f"{prefix}relative error {err:.3g} exceeds {tol:.3g}"


def check_returned(out, shape, what="output"):
    """"" when a callable returned a tensor of the expected shape, else what it returned (a
    user's callable can return anything: peers/impl.py)."""
    if not torch.is_tensor(out):
        return f"{what}: the callable returned {type(out).__name__}, not a tensor"
    if tuple(out.shape) != tuple(shape):
        return f"{what}: shape {tuple(out.shape)}, expected {tuple(shape)}"
    return ""


def sample_rows(rows, device, n=64):
    """Up to n evenly spaced row indices and the last (bench/softmax.cpp sample_rows)."""
    n = min(rows, n)
    picked = {rows - 1} | {i * (rows - 1) // max(n - 1, 1) for i in range(n)}
    return torch.tensor(sorted(picked), dtype=torch.long, device=device)


def first_error(*checks):
    """The first non-empty reason of a sequence of lazily evaluated checks."""
    for c in checks:
        why = c()
        if why:
            return why
    return ""
