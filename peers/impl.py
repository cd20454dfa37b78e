"""Users' own implementations of a family (docs/extending-python.md): a Python callable (a Triton
kernel's launcher, say) that takes what the family's compiled peer takes and returns what it
returns, run in the peer's case — same inputs, reference check and tolerance, cost, timing and
launch forms — as it is (not compiled), its rows named with the user's token in the impl segment:
  --impl=FAMILY:PASS:NAME=MODULE:CALLABLE    MODULE dotted (importable) or a .py file
  --impl_module=MODULE                       its @implements(FAMILY, PASS, name=NAME) callables
What each family's callables take: USER_PASSES of peers/families/<family>.py.
No torch here: `from peers import implements` stays cheap."""
import importlib
import importlib.util
import os
import re
import sys
from dataclasses import dataclass
from typing import Callable

USER_LABEL = "python callable"    # how a user's row's label starts (the peers' name the backend)
NAME = re.compile(r"[A-Za-z][A-Za-z0-9_.-]*")  # one name segment: no '/', no ':'
IMPL_SYNTAX = "FAMILY:PASS:NAME=MODULE:CALLABLE"


class ImplError(ValueError):
    """A bad --impl or --impl_module: one line (a usage error, exit code 2)."""


@dataclass(frozen=True)
class UserImpl:
    family: str
    pass_name: str
    name: str          # the impl segment of its rows
    fn: Callable
    origin: str        # MODULE:CALLABLE, as the label shows it
    cuda_only: bool = False

    @property
    def label(self):
        return f"{USER_LABEL} {self.origin} (not compiled)"

    def bind(self, options, *constants):
        """(callable of the case's tensors, label): fn with the case's constants (the loss's
        class count, attention's causal flag) after the tensors. SkipCase off CUDA if cuda_only."""
        from peers.case import cuda_only
        if self.cuda_only:
            cuda_only(options, f"{self.name} ({self.origin})")
        fn = self.fn
        return ((lambda *tensors: fn(*tensors, *constants)) if constants else fn), self.label


DECLARED = []  # every @implements, in import order


def implements(family, pass_name, name, cuda_only=False):
    """Declares the decorated callable an implementation of FAMILY's PASS, its rows named with
    NAME in the impl segment; cuda_only: skipped with the reason on the CPU. Checked when
    --impl_module imports the module."""
    def declare(fn):
        DECLARED.append(UserImpl(family, pass_name, name, fn,
                                 f"{getattr(fn, '__module__', '?')}:{getattr(fn, '__qualname__', name)}",
                                 cuda_only))
        return fn
    return declare


def families():
    """{family: its module} of the families that take a user's callable (those with USER_PASSES)."""
    from peers.families import FAMILIES
    return {m.__name__.rsplit(".", 1)[-1]: m for m in FAMILIES if hasattr(m, "USER_PASSES")}


def first_line(e):
    return (str(e).strip().splitlines() or [""])[0]


def import_target(target):
    """The module named by target: a dotted name, or a .py file (loaded once per path)."""
    if not target.endswith(".py"):
        try:
            return importlib.import_module(target)
        except Exception as e:  # noqa: BLE001 - whatever the module raises, one line
            raise ImplError(f"cannot import {target} ({type(e).__name__}: {first_line(e)})") from None
    path = os.path.realpath(target)
    if not os.path.isfile(path):
        raise ImplError(f"no file {target}")
    name = "peers_user_" + re.sub(r"\W", "_", path)
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except Exception as e:  # noqa: BLE001
            del sys.modules[name]
            raise ImplError(f"cannot import {target} ({type(e).__name__}: {first_line(e)})") from None
    return sys.modules[name]


def check_slot(u, known):
    """ImplError unless u's family takes a user's callable for its pass under a free name."""
    fam = known.get(u.family)
    if fam is None:
        raise ImplError(f"no family '{u.family}' takes a Python implementation "
                        f"(those that do: {', '.join(known)})")
    if u.pass_name not in fam.USER_PASSES:
        raise ImplError(f"{u.family} has no pass '{u.pass_name}' for a Python implementation "
                        f"(passes: {', '.join(fam.USER_PASSES)})")
    if not NAME.fullmatch(u.name):
        raise ImplError(f"'{u.name}' is not a name segment (a letter, then letters, digits, _ . -)")
    if u.name in fam.RESERVED_IMPLS:
        raise ImplError(f"'{u.name}' is one of {u.family}'s own implementations "
                        f"({', '.join(fam.RESERVED_IMPLS)}); pick another name")


def checked(u, known):
    """u when its family, pass, name and callable are valid, else ImplError."""
    check_slot(u, known)
    if not callable(u.fn):
        raise ImplError(f"{u.origin} is not callable")
    return u


def from_flag(value, known):
    """The UserImpl of one --impl value (FAMILY:PASS:NAME=MODULE:CALLABLE)."""
    what, eq, where = value.partition("=")
    parts = what.split(":")
    target, colon, attr = where.rpartition(":")
    if not eq or len(parts) != 3 or not colon or not target or not attr:
        raise ImplError(f"expected {IMPL_SYNTAX}, e.g. softmax:fwd:mine=mypkg.kernels:softmax")
    family, pass_name, name = parts
    check_slot(UserImpl(family, pass_name, name, None, where), known)  # before importing anything
    obj = import_target(target)
    for piece in attr.split("."):
        if not hasattr(obj, piece):
            raise ImplError(f"{target} has no attribute '{attr}'")
        obj = getattr(obj, piece)
    return checked(UserImpl(family, pass_name, name, obj, where), known)


def from_module(target, known):
    """The UserImpls that @implements declared in the module target names."""
    module = import_target(target)
    mine = [u for u in DECLARED if u.fn is not None and getattr(u.fn, "__module__", None) == module.__name__]
    if not mine:
        raise ImplError(f"{target} declares no implementation (@implements from peers)")
    shown = lambda u: f"{target}:{u.origin.partition(':')[2]}"  # noqa: E731 - as the user named it
    return [checked(UserImpl(u.family, u.pass_name, u.name, u.fn, shown(u), u.cuda_only), known)
            for u in mine]


def resolve(flags):
    """[UserImpl] from [(flag, value)] of --impl and --impl_module, in order; raises ImplError
    naming the flag. Two callables with one family, pass and name are an error."""
    known, out, seen = families(), [], {}
    for flag, value in flags:
        try:
            found = [from_flag(value, known)] if flag == "--impl" else from_module(value, known)
        except ImplError as e:
            raise ImplError(f"{flag}={value}: {e}") from None
        for u in found:
            key = (u.family, u.pass_name, u.name)
            if key in seen:
                raise ImplError(f"{flag}={value}: {'/'.join(key)} is given twice "
                                f"({seen[key]} and {u.origin})")
            seen[key] = u.origin
            out.append(u)
    return out


def with_users(options, family, pass_name, peer_impls):
    """[(impl token, UserImpl or None)]: the family's own impls, then the users' for this pass."""
    return [(i, None) for i in peer_impls] + \
        [(u.name, u) for u in options.impls if (u.family, u.pass_name) == (family, pass_name)]
