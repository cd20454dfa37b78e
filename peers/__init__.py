"""Compiler peers of the C++ families: the same problems under torch.compile (Inductor),
timed and reported the suite's way (docs/peers.md); users' own Python implementations of a
family timed beside them (@implements, docs/extending-python.md)."""
from peers.impl import implements  # noqa: F401 - the decorator a user's module imports
