#!/usr/bin/env python3
"""How much a kernel that holds some SMs delays the kernels launched beside it, on one GPU.

A stand-in for a collective (NCCL's ring all-reduce holds one SM per channel, 24 on an H200 of
4 ranks) is started on a side stream: CTAS blocks of 512 threads with 120 KiB of shared memory
each, so no GEMM or attention block fits on their SMs. `hold` spins on the global timer for
SPIN µs; `copy` also streams a 256 MiB buffer through memory for that long (a collective's reads
and writes). About 10 µs later, once those blocks are resident, the measured kernel is launched
on the current stream and timed with CUDA events. Each row: the median time alone and beside
each stand-in, and the time added per µs of stand-in. A kernel that shares the GPU in proportion
adds about CTAS / SMs of the stand-in's time; one whose later blocks wait for the held SMs adds
up to all of it.

  scripts/sm_contention.py [--ctas 24] [--spin-us 100,300] [--reps 30] OUT.json
"""
import argparse
import json
import sys

SRC = r'''
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>
__device__ unsigned long long now_ns() {
  unsigned long long t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); return t;
}
// Holds its SM for `ns`; with `buf`, copies one half of it into the other meanwhile.
__global__ void stand_in(long long ns, float4* buf, long long n4) {
  extern __shared__ char smem[];
  const unsigned long long t0 = now_ns();
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  const long long step = (long long)gridDim.x * blockDim.x, half = n4 / 2;
  while (now_ns() - t0 < (unsigned long long)ns) {
    if (buf) { buf[half + i] = buf[i]; i += step; if (i >= half) i -= half; }
    if (threadIdx.x == 1023) smem[0] = 1;  // never: keeps the shared memory allocated
  }
}
void launch_stand_in(int64_t ctas, int64_t ns, int64_t smem, torch::Tensor buf) {
  static bool set = false;
  if (!set) {
    TORCH_CHECK(cudaFuncSetAttribute(stand_in, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem) == cudaSuccess);
    set = true;
  }
  float4* p = buf.numel() ? reinterpret_cast<float4*>(buf.data_ptr()) : nullptr;
  stand_in<<<(int)ctas, 512, (size_t)smem, c10::cuda::getCurrentCUDAStream()>>>(ns, p, buf.numel() / 4);
  TORCH_CHECK(cudaGetLastError() == cudaSuccess, "stand_in launch");
}
'''
SMEM = 120 << 10


def summarize(alone_us, beside_us, spin_us):
    """Time added per µs of stand-in, beside a stand-in of spin_us."""
    if not (alone_us > 0 and spin_us > 0):
        raise ValueError("times must be positive")
    return (beside_us - alone_us) / spin_us


def parse_spins(text):
    spins = [int(s) for s in text.split(",") if s]
    if not spins or any(s <= 0 for s in spins):
        raise argparse.ArgumentTypeError("--spin-us: positive integers, comma-separated")
    return spins


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("--ctas", type=int, default=24)
    ap.add_argument("--spin-us", type=parse_spins, default=[100, 300])
    ap.add_argument("--reps", type=int, default=30)
    a = ap.parse_args(argv)
    import torch
    if not torch.cuda.is_available():
        print("sm_contention.py: needs a CUDA GPU", file=sys.stderr)
        return 2
    from torch.utils.cpp_extension import load_inline
    from torch.nn.attention import sdpa_kernel, SDPBackend
    ext = load_inline("gptbench_stand_in", cpp_sources="void launch_stand_in(int64_t, int64_t, int64_t, torch::Tensor);",
                      cuda_sources=SRC, functions=["launch_stand_in"])
    dev = torch.device("cuda")
    side = torch.cuda.Stream()
    buf = torch.empty(64 << 20, device=dev)  # 256 MiB
    none = torch.empty(0, device=dev)

    def timed(fn, spin_ns, copy):
        ts = []
        for _ in range(a.reps):
            torch.cuda._sleep(2_000_000)  # both launches queued before either starts
            if spin_ns:
                side.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(side):
                    ext.launch_stand_in(a.ctas, spin_ns, SMEM, buf if copy else none)
            torch.cuda._sleep(20_000)  # the stand-in's blocks resident first
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record(); fn(); e1.record()
            torch.cuda.current_stream().wait_stream(side)
            torch.cuda.synchronize()
            ts.append(e0.elapsed_time(e1) * 1e3)
        ts.sort()
        return ts[len(ts) // 2]

    def kernels(fn):
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as p:
            fn(); torch.cuda.synchronize()
        return sorted({e.name for e in p.events() if e.device_type == torch.autograd.DeviceType.CUDA})

    bf = dict(device=dev, dtype=torch.bfloat16)
    # GPT-2 medium, 16 × 1,024 tokens: the MLP's GEMMs forward and backward.
    x, h = torch.randn(16384, 1024, **bf), torch.randn(16384, 4096, **bf)
    w = torch.randn(4096, 1024, **bf)
    cases = {
        "gemm fwd 16384x4096x1024 (x @ W^T)": lambda: x @ w.t(),
        "gemm dgrad 16384x1024x4096 (dh @ W)": lambda: h @ w,
        "gemm wgrad 4096x1024x16384 (dh^T @ x)": lambda: h.t() @ x,
    }
    q = torch.randn(16, 16, 1024, 64, **bf, requires_grad=True)
    k, v = torch.randn_like(q, requires_grad=True), torch.randn_like(q, requires_grad=True)
    for backend in (SDPBackend.CUDNN_ATTENTION, SDPBackend.FLASH_ATTENTION):
        with sdpa_kernel([backend]):
            o = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        g = torch.randn_like(o)
        cases[f"attention backward ({backend.name})"] = (
            lambda o=o, g=g: torch.autograd.grad(o, (q, k, v), g, retain_graph=True))
    rows = {}
    for name, fn in cases.items():
        fn(); torch.cuda.synchronize()
        row = {"kernels": kernels(fn), "alone_us": timed(fn, 0, False)}
        for copy in (False, True):
            mode = "copy" if copy else "hold"
            for spin in a.spin_us:
                beside = timed(fn, spin * 1000, copy)
                row[f"beside_{mode}_{spin}us_us"] = beside
                row[f"added_per_us_{mode}_{spin}"] = summarize(row["alone_us"], beside, spin)
        rows[name] = row
        print(name, {k: round(v, 3) for k, v in row.items() if k != "kernels"}, flush=True)
    meta = {"gpu": torch.cuda.get_device_name(), "sms": torch.cuda.get_device_properties(0).multi_processor_count,
            "ctas": a.ctas, "torch": torch.__version__}
    with open(a.out, "w") as f:
        json.dump({"meta": meta, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
