"""The runner's flags, spelt as gptbench's (--gptbench_*, --benchmark_*) so that gptbench-run
passes the same flags to both; short forms (--device, --min_time, --full, ...) are accepted too.
Other --gptbench_* / --benchmark_* flags are gptbench's own: ignored with a note on stderr.
--impl and --impl_module (the runner's own) add users' Python implementations (peers/impl.py)."""
import os
import re
import sys
from dataclasses import dataclass, field

from peers.impl import ImplError, resolve
from peers.models import PRESETS
from peers.trace import trace_dir_error

DTYPES = ("fp32", "bf16")
BACKENDS = ("inductor", "eager")


class UsageError(Exception):
    """Bad command line: printed as one line, exit code 2."""


@dataclass
class Options:
    filter: str = ""
    out: str = ""
    repetitions: int = 1
    min_time: float = 0.5            # seconds of timed regions per repetition (Google Benchmark's)
    list_only: bool = False
    device: str = "auto"             # auto | cpu | cuda
    models: list = field(default_factory=list)
    dtypes: list = field(default_factory=list)
    batch: int = 0                   # 0: 8 on a GPU, 2 on the CPU
    seq: int = 0                     # 0: 1024 on a GPU, 64 on the CPU
    full: bool = False
    fp8: bool = False                # --gptbench_fp8: the FP8 training-step rows (train_step_fp8.py)
    verify: bool = True
    profile_dir: str = ""            # --gptbench_profile: a trace of each case there (peers/trace.py)
    # torch.compile's backend: inductor, or eager (no code generation: the CPU test of the JSON
    # path); default from GPTBENCH_PEERS_BACKEND, which reaches the runner through gptbench-run.
    backend: str = field(default_factory=lambda: os.environ.get("GPTBENCH_PEERS_BACKEND", "inductor"))
    impl_flags: list = field(default_factory=list)  # [(--impl | --impl_module, value)], in order
    impls: list = field(default_factory=list)       # their callables (peers/impl.py UserImpl)
    cuda: bool = False               # resolved device
    peaks: dict = field(default_factory=dict)  # measured at start-up (device_info.measure_peaks)

    @property
    def tokens(self):
        return self.batch * self.seq

    def dtypes_among(self, supported):
        return [d for d in self.dtypes if d in supported]


ALIASES = {"--device": "--gptbench_device", "--min_time": "--benchmark_min_time",
           "--full": "--gptbench_full", "--fp8": "--gptbench_fp8", "--models": "--gptbench_models",
           "--dtypes": "--gptbench_dtypes", "--batch": "--gptbench_batch",
           "--seq": "--gptbench_seq", "--backend": "--gptbench_compile_backend",
           "--benchmark_format": None}


def _bool(flag, v):
    if v in ("", "true", "1", "yes"):
        return True
    if v in ("false", "0", "no"):
        return False
    raise UsageError(f"{flag}={v}: expected true or false")


def _whole(flag, v, lo=1):
    if not re.fullmatch(r"[0-9]+", v or "") or int(v) < lo:
        raise UsageError(f"{flag}={v}: expected a whole number ≥ {lo}")
    return int(v)


def _min_time(v):
    m = re.fullmatch(r"([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)s?", v or "")
    if not m:
        raise UsageError(f"--benchmark_min_time={v}: expected seconds, e.g. 0.5 or 0.5s")
    return float(m.group(1))


def _list(flag, v, valid):
    items = [x for x in (v or "").split(",") if x]
    bad = [x for x in items if x not in valid]
    if bad or not items:
        raise UsageError(f"{flag}={v}: valid values are {', '.join(valid)}")
    return items


def parse(argv, cuda_available):
    """Options from argv (without the program name); raises UsageError."""
    o = Options()
    for a in argv:
        flag, eq, value = a.partition("=")
        flag = ALIASES.get(flag, flag)
        if flag is None:
            continue
        if flag == "--benchmark_filter":
            o.filter = value
            try:
                re.compile(value.lstrip("-"))
            except re.error as e:
                raise UsageError(f"--benchmark_filter={value}: not a regular expression ({e})")
        elif flag == "--benchmark_out":
            o.out = value
        elif flag == "--benchmark_out_format":
            if value != "json":
                raise UsageError(f"--benchmark_out_format={value}: the peer runner writes JSON only")
        elif flag == "--benchmark_repetitions":
            o.repetitions = _whole(flag, value)
        elif flag == "--benchmark_min_time":
            o.min_time = _min_time(value)
        elif flag == "--benchmark_list_tests":
            o.list_only = _bool(flag, value)
        elif flag == "--gptbench_device":
            if value not in ("auto", "cpu", "cuda"):
                raise UsageError(f"--gptbench_device={value}: expected auto, cpu or cuda")
            o.device = value
        elif flag == "--gptbench_models":
            o.models = _list(flag, value, list(PRESETS))
        elif flag == "--gptbench_dtypes":
            o.dtypes = [d for d in value.split(",") if d]  # gptbench's other dtypes are not ours
        elif flag == "--gptbench_batch":
            o.batch = _whole(flag, value)
        elif flag == "--gptbench_seq":
            o.seq = _whole(flag, value)
        elif flag == "--gptbench_full":
            o.full = _bool(flag, value)
        elif flag == "--gptbench_fp8":
            o.fp8 = _bool(flag, value)
        elif flag == "--gptbench_verify":
            o.verify = _bool(flag, value)
        elif flag == "--gptbench_profile":
            if not value or trace_dir_error(value):
                raise UsageError(trace_dir_error(value) if value else f"{flag} needs a directory")
            o.profile_dir = value
        elif flag == "--gptbench_compile_backend":
            if value not in BACKENDS:
                raise UsageError(f"{flag}={value}: expected {' or '.join(BACKENDS)}")
            o.backend = value
        elif flag in ("--impl", "--impl_module"):
            if not value:
                raise UsageError(f"{flag} needs a value: --impl=FAMILY:PASS:NAME=MODULE:CALLABLE "
                                 "or --impl_module=MODULE (docs/extending-python.md)")
            o.impl_flags.append((flag, value))
        elif flag.startswith(("--gptbench_", "--benchmark_")):
            print(f"gptbench-peers: {flag} is gptbench's own; ignored", file=sys.stderr)
        else:
            raise UsageError(f"unknown argument '{a}' (see --help)")
    if o.backend not in BACKENDS:
        raise UsageError(f"GPTBENCH_PEERS_BACKEND={o.backend}: expected {' or '.join(BACKENDS)}")
    if o.device == "cuda" and not cuda_available:
        raise UsageError("--gptbench_device=cuda: no CUDA GPU is available")
    o.cuda = o.device == "cuda" or (o.device == "auto" and cuda_available)
    o.models = o.models or ["small" if o.cuda else "tiny"]
    o.dtypes = o.dtypes or list(DTYPES)
    o.batch = o.batch or (8 if o.cuda else 2)
    o.seq = o.seq or (1024 if o.cuda else 64)
    try:
        o.impls = resolve(o.impl_flags)  # imports the users' modules: after every flag is read
    except ImplError as e:
        raise UsageError(str(e)) from None
    return o
