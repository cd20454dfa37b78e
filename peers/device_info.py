"""What the run measured on, as fixtures/device_info.*: device identity, the measured peaks that
%peak divides by (a large copy and large matmuls, best of five) and the datasheet bf16 peak."""
import os
import re

import torch

from peers.case import COPY, GEMM_BF16, GEMM_FP32
from peers.timer import RegionTimer

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATASHEET_TABLE = os.path.join(ROOT, "fixtures", "datasheet_peaks.inc")


def datasheet_table(path=DATASHEET_TABLE):
    """[(pattern, FLOP/s)] from fixtures/datasheet_peaks.inc, in order."""
    with open(path, encoding="utf-8") as f:
        return [(m.group(1), float(m.group(2)))
                for m in re.finditer(r'^\{"([^"]+)",\s*([0-9.eE+]+)\},', f.read(), re.M)]


def datasheet_bf16_flops(gpu_name, table=None):
    """The dense bf16 peak of the GPU's datasheet, 0 when the name is not in the table."""
    for pattern, flops in table if table is not None else datasheet_table():
        if re.search(pattern, gpu_name):
            return flops
    return 0.0


def _best(timer, fn, reps=5):
    fn()
    return min(timer.time(fn) for _ in range(reps))


def measure_peaks(device):
    """{COPY: bytes/s, GEMM_FP32: FLOP/s, GEMM_BF16: FLOP/s} measured on device."""
    timer, gpu = RegionTimer(device), device.type == "cuda"
    n = 1 << (28 if gpu else 24)
    src = torch.randn(n, device=device)
    dst = torch.empty_like(src)
    peaks = {COPY: 2.0 * n * 4 / _best(timer, lambda: dst.copy_(src))}
    del src, dst
    tf32 = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        for kind, dtype, size in ((GEMM_BF16, torch.bfloat16, 8192 if gpu else 512),
                                  (GEMM_FP32, torch.float32, 4096 if gpu else 1024)):
            a, b = (torch.randn(size, size, device=device, dtype=dtype) for _ in range(2))
            c = torch.empty_like(a)
            peaks[kind] = 2.0 * size ** 3 / _best(timer, lambda: torch.matmul(a, b, out=c))
    finally:
        torch.backends.cuda.matmul.allow_tf32 = tf32
    return peaks


def fmt(v):
    return f"{v:.4g}"


def run_context(options, peaks):
    """The suite's context keys (run_context in fixtures/device_info.cpp) for this process."""
    ctx = {"device": "cuda" if options.cuda else "cpu", "torch": torch.__version__,
           "gpu_name": "none", "gpu_sm_count": "0", "cuda_runtime": "none",
           "peer": "inductor", "compile_backend": options.backend}
    if options.cuda:
        props = torch.cuda.get_device_properties(0)
        ctx.update(gpu_name=props.name, gpu_sm_count=str(props.multi_processor_count),
                   gpu_memory_bytes=str(props.total_memory),
                   cuda_runtime=str(torch.version.cuda), timer_hold_ns="50000")
        try:
            import triton
            ctx["triton"] = triton.__version__
        except ImportError:
            ctx["triton"] = "none"
    else:
        ctx["cpu_threads"] = str(torch.get_num_threads())
    if options.impls:  # users' implementations (peers/impl.py): which callable each token names
        ctx["python_impls"] = "; ".join(f"{u.family}/{u.name}/{u.pass_name}={u.origin}"
                                        for u in options.impls)
    ctx["peak_copy_bytes_per_s"] = fmt(peaks[COPY])
    ctx["peak_gemm_fp32_flops"] = fmt(peaks[GEMM_FP32])
    ctx["peak_gemm_bf16_flops"] = fmt(peaks[GEMM_BF16])
    ds = datasheet_bf16_flops(ctx["gpu_name"]) if options.cuda else 0.0
    ctx["datasheet_bf16_flops"] = fmt(ds) if ds > 0 else "n/a"
    return ctx
