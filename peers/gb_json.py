"""Google Benchmark's JSON: iteration rows (manual time, microseconds), aggregates over
repetitions (mean, median, stddev, cv), rows of skipped cases, the context."""
import json
import os
import platform
import statistics
import sys
import time

UNIT = "us"
SCALE = 1e6  # seconds -> UNIT


def _base(name, family_index, rep, reps):
    return {"name": name + "/manual_time", "family_index": family_index,
            "per_family_instance_index": 0, "run_name": name + "/manual_time",
            "run_type": "iteration", "repetitions": reps, "repetition_index": rep, "threads": 1}


def iteration_row(name, family_index, rep, reps, iterations, seconds, cpu_seconds, counters, label=""):
    row = _base(name, family_index, rep, reps)
    row.update(iterations=iterations, real_time=seconds * SCALE, cpu_time=cpu_seconds * SCALE,
               time_unit=UNIT)
    row.update(counters)
    if label:
        row["label"] = label
    return row


def errored_row(name, family_index, message):
    row = _base(name, family_index, 0, 1)
    row.update(error_occurred=True, error_message=message, iterations=0, real_time=0.0,
               cpu_time=0.0, time_unit=UNIT)
    return row


AGGREGATES = (("mean", statistics.fmean), ("median", statistics.median),
              ("stddev", statistics.stdev))
FIXED = set(_base("", 0, 0, 1)) | {"iterations", "real_time", "cpu_time", "time_unit", "label"}


def aggregate_rows(rows):
    """Google Benchmark's aggregates of repetition rows (numbers only; cv as a percentage)."""
    keys = ["real_time", "cpu_time"] + [k for k in rows[0] if k not in FIXED]
    out = []
    for agg, fn in AGGREGATES + (("cv", None),):
        row = {k: rows[0][k] for k in ("name", "family_index", "per_family_instance_index",
                                       "run_name", "repetitions", "threads", "time_unit")}
        row.update(name=row["name"] + "_" + agg, run_type="aggregate", aggregate_name=agg,
                   iterations=len(rows))
        for k in keys:
            vals = [r[k] for r in rows]
            if agg == "cv":
                mean = statistics.fmean(vals)
                row[k] = statistics.stdev(vals) / mean if mean else 0.0
            else:
                row[k] = fn(vals)
        if agg == "cv":
            row["aggregate_unit"] = "percentage"
        out.append(row)
    return out


def context(extra):
    ctx = {"date": time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime()),
           "host_name": platform.node(), "executable": " ".join([sys.executable] + sys.argv[:1]),
           "num_cpus": os.cpu_count() or 1, "mhz_per_cpu": 0, "cpu_scaling_enabled": False,
           "caches": [], "load_avg": list(os.getloadavg()), "library_build_type": "release"}
    ctx.update(extra)
    return ctx


class Writer:
    """Streams the document as Google Benchmark does: the context first, then each benchmark's
    rows appended and flushed as it finishes, so that gptbench-run reads the rows of finished
    benchmarks while the file grows, and keeps them if this process dies."""

    def __init__(self, path, ctx):
        self.rows = []
        self.f = open(path, "w", encoding="utf-8") if path else None
        if self.f:
            self.f.write('{\n  "context": ' + json.dumps(ctx, indent=2).replace("\n", "\n  ")
                         + ',\n  "benchmarks": [')
            self.f.flush()

    def add(self, rows):
        for row in rows:
            if self.f:
                self.f.write(("\n    " if not self.rows else ",\n    ")
                             + json.dumps(row))
            self.rows.append(row)
        if self.f:
            self.f.flush()

    def close(self):
        if self.f:
            self.f.write("\n  ]\n}\n")
            self.f.close()
            self.f = None
