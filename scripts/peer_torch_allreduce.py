#!/usr/bin/env python3
"""PyTorch-from-Python peer of gptbench's comm/all_reduce: torch.distributed.all_reduce on N
GPUs (one process each, NCCL, started here with torch.multiprocessing: no torchrun), timed the
way gptbench times it (fixtures/comm_case.h): per timed region max(1, min(50, 64 MiB / size))
all-reduces between two CUDA events, 50 regions after 5 warm-up regions, the median region's
time per all-reduce (as gptbench's rate counters).
Bus bandwidth with nccl-tests' formula, algbw · 2(R−1)/R. Rank 0 writes the JSON.

  python3 scripts/peer_torch_allreduce.py --gpus 2 --out peer-allreduce.json
"""
import argparse
import json
import os
import socket
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

# NVLink multicast stays off, in this process and in every child.
for k, v in (("NCCL_NVLS_ENABLE", "0"), ("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"), ("NVSHMEM_DISABLE_NVLS", "1")):
    os.environ[k] = v

KIB, MIB = 1024, 1024 * 1024
DEFAULT_SIZES = [64 * KIB, MIB, 16 * MIB, 64 * MIB, 256 * MIB, 1024 * MIB]
DTYPES = {"bf16": torch.bfloat16, "fp32": torch.float32}


def calls_per_region(nbytes):
    return max(1, min(50, (64 * MIB) // max(nbytes, 1)))


def worker(rank, world, port, sizes, dtype_name, regions, out):
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                            device_id=torch.device("cuda", rank))
    dtype = DTYPES[dtype_name]
    esize = torch.tensor([], dtype=dtype).element_size()
    rows = []
    for nbytes in sizes:
        n = max(world, (nbytes // esize) // world * world)
        x = torch.ones(n, dtype=dtype, device="cuda") * (rank + 1)
        dist.all_reduce(x)  # check: Σ (k + 1)
        want = world * (world + 1) / 2
        ok = bool(torch.allclose(x.float(), torch.full_like(x, want, dtype=torch.float32)))
        x.zero_()
        k = calls_per_region(nbytes)
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        times = []
        for region in range(regions + 5):
            start.record()
            for _ in range(k):
                dist.all_reduce(x)
            stop.record()
            stop.synchronize()
            if region >= 5:
                times.append(start.elapsed_time(stop) * 1e-3 / k)
        per = sorted(times)[len(times) // 2]
        algbw = n * esize / per / 1e9
        rows.append({"bytes": nbytes, "elements": n, "dtype": dtype_name, "check_ok": ok,
                     "time_us": per * 1e6, "algbw_GBps": algbw,
                     "busbw_GBps": algbw * 2 * (world - 1) / world})
        del x
    if rank == 0:
        doc = {"peer": "torch.distributed.all_reduce", "ranks": world, "torch": torch.__version__,
               "nccl": ".".join(map(str, torch.cuda.nccl.version())),
               "gpu": torch.cuda.get_device_name(0), "rows": rows}
        with open(out, "w") as f:
            json.dump(doc, f, indent=1)
        for r in rows:
            print(f"peer all_reduce {r['dtype']} {r['bytes']:>11} B  {r['time_us']:10.1f} us  "
                  f"busbw {r['busbw_GBps']:7.1f} GB/s  check {'ok' if r['check_ok'] else 'WRONG'}")
    dist.barrier()
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gpus", type=int, default=torch.cuda.device_count())
    ap.add_argument("--sizes", default=",".join(map(str, DEFAULT_SIZES)), help="bytes, comma-separated")
    ap.add_argument("--dtype", default="bf16", choices=sorted(DTYPES))
    ap.add_argument("--regions", type=int, default=50)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    if a.gpus < 1 or a.gpus > torch.cuda.device_count():
        print(f"peer_torch_allreduce: --gpus {a.gpus}: this host shows {torch.cuda.device_count()} GPUs",
              file=sys.stderr)
        sys.exit(2)
    try:
        sizes = [int(s) for s in a.sizes.split(",") if s]
    except ValueError:
        print(f"peer_torch_allreduce: --sizes '{a.sizes}' is not a list of whole numbers", file=sys.stderr)
        sys.exit(2)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    mp.spawn(worker, args=(a.gpus, port, sizes, a.dtype, a.regions, a.out), nprocs=a.gpus, join=True)


if __name__ == "__main__":
    main()
