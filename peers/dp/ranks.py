"""The ranks of a run, as fixtures/dist.* has them: torchrun's variables (RANK, WORLD_SIZE,
LOCAL_RANK, MASTER_ADDR, MASTER_PORT; also what gptbench-run --ranks sets), else rank 0 of 1 on
a store of its own. One c10d process group: NCCL on GPUs (rank r on GPU LOCAL_RANK), Gloo on
the CPU; the collectives every rank makes to stay in step (barrier, max, min and mean over
ranks, an error agreed on)."""
import os
from dataclasses import dataclass
from datetime import timedelta

import torch
import torch.distributed as dist

# NVLink multicast off, as gptbench keeps it for every rank (docs/multigpu.md).
MULTICAST_OFF = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
                 "NVSHMEM_DISABLE_NVLS": "1"}
MESSAGE_BYTES = 1024  # an agreed error message, at most


@dataclass(frozen=True)
class RankEnv:
    rank: int = 0
    world: int = 1
    local_rank: int = 0
    launched: bool = False  # by torchrun (or gptbench-run): a rendezvous through MASTER_ADDR


def _whole(env, name):
    v = env.get(name, "")
    if not v.isdigit():
        raise ValueError(f"{name}={v!r}: expected a whole number")
    return int(v)


def rank_env(env=None):
    """The launcher's variables; a run without RANK and WORLD_SIZE is rank 0 of 1."""
    env = os.environ if env is None else env
    if "RANK" not in env and "WORLD_SIZE" not in env:
        return RankEnv()
    rank, world = _whole(env, "RANK"), _whole(env, "WORLD_SIZE")
    local = _whole(env, "LOCAL_RANK") if "LOCAL_RANK" in env else rank
    if world < 1 or rank >= world:
        raise ValueError(f"RANK={rank} is not a rank of WORLD_SIZE={world}")
    return RankEnv(rank, world, local, launched=True)


def comm_timeout():
    """c10d's timeout: GPTBENCH_COMM_TIMEOUT_S (gptbench's), default 300 s."""
    return timedelta(seconds=float(os.environ.get("GPTBENCH_COMM_TIMEOUT_S", "300")))


class Ranks:
    """The process group of the run and a group per rank holding that rank alone (the one-GPU
    reference of every stack runs on it, all ranks at once)."""

    def __init__(self, env, cuda):
        self.env, self.rank, self.world = env, env.rank, env.world
        if cuda:
            for k, v in MULTICAST_OFF.items():
                os.environ.setdefault(k, v)
            torch.cuda.set_device(env.local_rank)
            self.device = torch.device("cuda", env.local_rank)
            kw = {"backend": "nccl", "device_id": self.device}
        else:
            self.device = torch.device("cpu")
            kw = {"backend": "gloo"}
        if env.launched:
            dist.init_process_group(init_method="env://", rank=env.rank, world_size=env.world,
                                    timeout=comm_timeout(), **kw)
        else:
            dist.init_process_group(store=dist.HashStore(), rank=0, world_size=1,
                                    timeout=comm_timeout(), **kw)
        self.group = dist.group.WORLD
        # new_group is collective: every rank creates every rank's group, in order.
        own = [dist.new_group([r]) for r in range(self.world)] if self.world > 1 else [self.group]
        self.own = own[self.rank]

    def close(self):
        dist.destroy_process_group()

    def _scalar(self, v):
        return torch.tensor([float(v)], dtype=torch.float64, device=self.device)

    def barrier(self):
        """An all-reduce of one element, waited for on the host (gptbench's barrier)."""
        t = self._scalar(0.0)
        dist.all_reduce(t)
        t.item()

    def max(self, v):
        t = self._scalar(v)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        return t.item()

    def min(self, v):
        return -self.max(-v)

    def mean(self, v):
        t = self._scalar(v)
        dist.all_reduce(t)
        return t.item() / self.world

    def agree_error(self, error):
        """Every rank's error message ("" for none) -> the first failing rank's, on every rank,
        so that no rank waits in a collective the others skipped."""
        first = int(self.min(self.rank if error else self.world))
        if first == self.world:
            return ""
        # The message travels as bytes from that rank (all_gather_object would need NumPy).
        buf = torch.zeros(MESSAGE_BYTES, dtype=torch.uint8, device=self.device)
        if self.rank == first:
            raw = error.encode()[:MESSAGE_BYTES]
            buf[:len(raw)] = torch.tensor(list(raw), dtype=torch.uint8)
        dist.broadcast(buf, src=first)
        m = bytes(buf.tolist()).rstrip(b"\0").decode(errors="replace")
        return m if self.world == 1 else f"{m} (rank {first} of {self.world})"
