"""--gptbench_profile=DIR, as fixtures/trace.h: after a case's warm-up and before its timing,
TRACE_CALLS calls of its timed region under torch.profiler (CPU operators and, on a GPU, every
kernel, copy and memset), written as DIR/<name>.trace.json in the Chrome trace format — the file
gptbench writes for its own cases, so scripts/kernel_classes.py reads both alike."""
import os
import re

TRACE_CALLS = 3


def trace_path(directory, case_name):
    """DIR/<name with every character outside [A-Za-z0-9._-] replaced by '_'>.trace.json"""
    return os.path.join(directory, re.sub(r"[^A-Za-z0-9._-]", "_", case_name) + ".trace.json")


def trace_dir_error(directory):
    """'' when `directory` is a writable directory (created if missing), else why not."""
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError:
        pass
    if not os.path.isdir(directory):
        return f"--gptbench_profile={directory}: not a directory and cannot be created"
    if not os.access(directory, os.W_OK):
        return f"--gptbench_profile={directory}: cannot write there"
    return ""


def write_trace(fn, calls, device, path):
    import torch  # here: the options import this module, and --help should not wait for torch

    activities = [torch.profiler.ProfilerActivity.CPU]
    if device.type == "cuda":
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    with torch.profiler.profile(activities=activities) as prof:
        for _ in range(calls):
            fn()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
    prof.export_chrome_trace(path)
