"""What a family registers: a named case built on demand (inputs, the compiled callable, its
verification and cost), as fixtures/runner.h. A case that cannot run raises SkipCase with the
reason; out of memory and errors become skipped rows too, and never stop the run."""
from dataclasses import dataclass, field
from typing import Callable, Optional

import torch

COPY, GEMM_FP32, GEMM_BF16, NONE = "copy", "gemm_fp32", "gemm_bf16", "none"  # PeakKind


class SkipCase(Exception):
    """The case cannot run here; the message is the reason ("skipped: ..." / "unsupported: ...")."""


@dataclass
class Case:
    run: Callable[[], None]                      # one call of the timed region
    verify: Optional[Callable[[], str]] = None   # "" when right, else what is wrong
    flops: float = 0.0                           # per call
    bytes: float = 0.0                           # per call
    peak: str = NONE                             # which measured peak %peak divides by
    counters: dict = field(default_factory=dict)
    label: str = ""                              # Google Benchmark's label (how it was compiled)
    # For the launch:graph check (peers/launch.py): name -> tensor the last call wrote (poisoned
    # before a replay), and name -> tensor the call updates in place (restored before each form).
    outputs: Optional[Callable[[], dict]] = None
    state: Optional[Callable[[], dict]] = None


LAUNCHES = ("graph", "eager")  # a host-launched region's two forms, the name's last segment


@dataclass
class Spec:
    name: str
    make: Callable[[], Case]
    launches: tuple = ()   # LAUNCHES for a host-launched region: rows name/launch:<graph|eager>
    picked: tuple = ()     # the launches the filter kept (all when empty)

    def names(self):
        """[(launch, name)] of the rows this spec reports ((None, name) when it has one form)."""
        return [(l, self.name if l is None else f"{self.name}/launch:{l}")
                for l in self.picked or self.launches or (None,)]


REGISTRY = []


def bench_name(*segments):
    """family/impl/... joined with '/', every segment a string (names as bench/*.cpp build them)."""
    return "/".join(str(s) for s in segments)


def register(name, make, host_launched=False):
    """host_launched: the region's host work (autograd, Dynamo's guards, a launch per tensor) can
    outlast its kernels, so it is timed in both forms of LAUNCHES."""
    REGISTRY.append(Spec(name, make, LAUNCHES if host_launched else ()))


def compiled(fn, options, mode=None):
    """fn under torch.compile with the run's backend (dynamic=False: one static graph per shape,
    as a user's fixed-shape training loop gets). Returns (callable, label)."""
    if options.backend == "eager":
        return torch.compile(fn, backend="eager", dynamic=False), "backend=eager (no code generation)"
    kw = {"mode": mode} if mode else {}
    label = "inductor" + (f" mode={mode}" if mode else "")
    return torch.compile(fn, dynamic=False, **kw), label


def compiled_or_user(fn, options, user=None, *constants):
    """The case's callable and label: a user's implementation as it is, given the case's
    constants after its tensors (peers/impl.py), else the peer's fn compiled."""
    return user.bind(options, *constants) if user is not None else compiled(fn, options)


def cuda_only(options, what):
    if not options.cuda:
        raise SkipCase(f"skipped: {what} runs on CUDA only (this run is on the CPU)")
