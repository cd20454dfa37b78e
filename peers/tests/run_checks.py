"""What a peer run's JSON must hold (used by cpu_run and the unit tests): the context keys,
and per row the suite's name shape, its counters (host_overhead_pct on a timed launch:graph
row), a label saying how it was compiled (or whose Python callable ran), and for skipped rows a
reason."""
from peers.impl import USER_LABEL

CONTEXT_KEYS = ("device", "torch", "peer", "compile_backend", "peak_copy_bytes_per_s",
                "peak_gemm_bf16_flops", "datasheet_bf16_flops")
FAMILY_COUNTERS = {"softmax": ("bytes/s", "%peak"), "layernorm": ("bytes/s", "%peak"),
                   "loss": ("bytes/s", "%peak"), "attention": ("FLOP/s", "%peak"),
                   "optim": ("bytes/s", "params", "bytes/param"),
                   "model": ("tokens/s", "step_ms", "mfu_pct", "FLOP/s")}
SKIP_PREFIXES = ("skipped:", "unsupported:")


def check_row(row, backend):
    name, problems = row["name"], []
    if not row.get("run_name", "").endswith("/manual_time"):
        problems.append(f"{name}: no /manual_time suffix")
    if row.get("error_occurred"):
        if not row.get("error_message", "").startswith(SKIP_PREFIXES):
            problems.append(f"{name}: failed: {row.get('error_message')}")
        return problems
    family = name.split("/")[0]
    wanted = FAMILY_COUNTERS.get(family)
    if wanted is None:
        return [f"{name}: unknown family {family}"]
    if row.get("run_type") == "iteration":
        wanted += ("compile_s",) + (("host_overhead_pct",) if "/launch:graph/" in name else ())
        label = row.get("label", "")
        if backend not in label and "pytorch" not in label and not label.startswith(USER_LABEL):
            problems.append(f"{name}: label '{row.get('label')}' does not name the backend")
    problems += [f"{name}: counter {c} missing" for c in wanted if c not in row]
    if not row.get("real_time", 0) > 0:
        problems.append(f"{name}: real_time {row.get('real_time')}")
    return problems


def check_peer_run(doc, backend, expect_skipped):
    """The problems of a peer run's document, [] when there are none."""
    problems = [f"context: {k} missing" for k in CONTEXT_KEYS if k not in doc["context"]]
    rows = doc["benchmarks"]
    if not rows:
        problems.append("no rows")
    for row in rows:
        problems += check_row(row, backend)
    skipped = [r for r in rows if r.get("error_occurred")]
    if expect_skipped and not skipped:
        problems.append("no skipped row (expected CUDA-only cases skipped with their reason)")
    return problems
