"""PyTorch's own data-parallel stacks around the GPT-2 of peers/gpt2.py, each as its documentation
sets it up, on a given process group (the run's, or a rank's own group for the one-GPU
reference):

  torch_ddp    DistributedDataParallel (25 MiB buckets, its default), then torch.compile of the
               wrapped model (DDP's documented order: wrap, then compile; Dynamo's DDPOptimizer
               splits the graph at the bucket boundaries so the all-reduces overlap the backward);
               bf16 autocast over fp32 weights, AdamW(fused=True).
  torch_zero1  the same DDP model, with torch.distributed.optim.ZeroRedundancyOptimizer wrapping
               AdamW(fused=True): DDP all-reduces every gradient, each rank steps the parameters
               it owns (state 1/R), then broadcasts them to the others.
  torch_fsdp   FSDP2: each block recomputed in its backward (torch.utils.checkpoint, as ours'
               fsdp with ckpt:all), compiled on its own, then fully_shard on each block
               (reshard_after_forward=True) and on the root (embeddings, final LayerNorm, the tied
               LM head) — the order of PyTorch's torchtitan: checkpointing, per-block compile,
               then sharding bottom-up; MixedPrecisionPolicy(param_dtype=bf16,
               reduce_dtype=fp32) instead of autocast; AdamW(fused=True) on the sharded
               (DTensor) parameters.
On the CPU: fp32 (no autocast, no mixed-precision policy), AdamW's default (foreach) kernels."""
from dataclasses import dataclass
from typing import Callable

import torch
import torch.nn as nn
from torch.utils.checkpoint import checkpoint

from peers.case import compiled

NAMES = ("torch_ddp", "torch_zero1", "torch_fsdp")
OPTIMIZER = dict(lr=3e-4, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01)  # train/optim.h
BUCKET_MB = 25  # DDP's default bucket_cap_mb, ours' bucket size


@dataclass
class Stack:
    net: Callable            # (idx, tgt) -> loss, through the wrappers
    model: nn.Module         # whose parameters train (DTensor shards under FSDP2)
    optimizer: torch.optim.Optimizer
    autocast: bool           # bf16 autocast around the forward (ddp, zero1 on a GPU)
    label: str


def _adamw_options(device):
    return dict(OPTIMIZER, **({"fused": True} if device.type == "cuda" else {}))


def _local(t):
    return t.to_local() if hasattr(t, "to_local") else t


def _unique(tensors):
    seen = {}
    for t in tensors:
        seen.setdefault(id(t), t)
    return list(seen.values())


def parameter_bytes(stack):
    """Bytes of the parameters this rank holds between steps (its shards under FSDP2)."""
    return sum(_local(p).numel() * _local(p).element_size() for p in _unique(stack.model.parameters()))


def state_bytes(stack):
    """Bytes of the optimizer state on this rank (ZeRO: its local optimizer's)."""
    opt = getattr(stack.optimizer, "optim", stack.optimizer)
    return sum(_local(v).numel() * _local(v).element_size()
               for s in opt.state.values() for v in s.values() if isinstance(v, torch.Tensor))


def full_parameters(stack):
    """Every parameter whole, in model order (collective under FSDP2: every rank calls it)."""
    return [p.full_tensor() if hasattr(p, "full_tensor") else p.detach()
            for p in _unique(stack.model.parameters())]


def _ddp(model, group, device):
    from torch.nn.parallel import DistributedDataParallel as DDP
    ids = [device.index] if device.type == "cuda" else None
    return DDP(model, device_ids=ids, process_group=group, bucket_cap_mb=BUCKET_MB)


def torch_ddp(model, group, device, o, ckpt):
    net, label = compiled(_ddp(model, group, device), o)
    opt = torch.optim.AdamW(model.parameters(), **_adamw_options(device))
    return Stack(net, model, opt, o.cuda, f"DistributedDataParallel, then torch.compile: {label}")


def torch_zero1(model, group, device, o, ckpt):
    from torch.distributed.optim import ZeroRedundancyOptimizer
    net, label = compiled(_ddp(model, group, device), o)
    opt = ZeroRedundancyOptimizer(model.parameters(), optimizer_class=torch.optim.AdamW,
                                  process_group=group, **_adamw_options(device))
    return Stack(net, model, opt, o.cuda,
                 f"DistributedDataParallel + ZeroRedundancyOptimizer, torch.compile: {label}")


class Recomputed(nn.Module):
    """A block whose activations are recomputed in the backward (ckpt:all)."""

    def __init__(self, block):
        super().__init__()
        self.block = block

    def forward(self, x):
        return checkpoint(self.block, x, use_reentrant=False, preserve_rng_state=False)


def torch_fsdp(model, group, device, o, ckpt):
    from torch.distributed.device_mesh import DeviceMesh
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
    mesh = DeviceMesh.from_group(group, device.type)
    mp = (MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
          if o.cuda else MixedPrecisionPolicy())
    label = ""
    for i, block in enumerate(model.h):
        block, label = compiled(Recomputed(block) if ckpt else block, o)
        fully_shard(block, mesh=mesh, mp_policy=mp, reshard_after_forward=True)
        model.h[i] = block
    fully_shard(model, mesh=mesh, mp_policy=mp)
    opt = torch.optim.AdamW(model.parameters(), **_adamw_options(device))
    return Stack(model, model, opt, False, f"FSDP2 fully_shard, torch.compile per block: {label}")


BUILDERS = {"torch_ddp": torch_ddp, "torch_zero1": torch_zero1, "torch_fsdp": torch_fsdp}
RECOMPUTES = {"torch_fsdp"}  # ckpt:all, as ours' fsdp


def build(name, model, group, device, o):
    """Stack `name` around `model` (on `device`) over `group`."""
    return BUILDERS[name](model, group, device, o, name in RECOMPUTES)
