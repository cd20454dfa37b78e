"""Small shared pieces of the families: dtypes and their sizes, autocast where the step has it."""
import contextlib

import torch

TORCH_DTYPE = {"fp32": torch.float32, "bf16": torch.bfloat16}


def elem_bytes(dtype):
    return torch.empty((), dtype=TORCH_DTYPE[dtype]).element_size()


def device_of(options):
    return torch.device("cuda" if options.cuda else "cpu")


def autocast(bf16, device):
    """bf16 autocast on CUDA (the training step's precision), nothing on the CPU (as the C++
    families: LibTorch's CPU autocast is not what they time)."""
    if bf16 and device.type == "cuda":
        return torch.autocast("cuda", dtype=torch.bfloat16)
    return contextlib.nullcontext()


def passes(backward_name):
    """(False, "fwd"), (True, backward_name): the two passes a family registers."""
    return ((False, "fwd"), (True, backward_name))


def peer_dtypes(o):
    """The dtypes a family registers: bf16 by default on a GPU (the default grid stays a few
    minutes with compilation), fp32 and bf16 with --full and on the CPU, of those selected."""
    return o.dtypes_among(("fp32", "bf16") if o.full or not o.cuda else ("bf16",))
