"""Compiler peers of the C++ families: the same problems under torch.compile (Inductor),
timed and reported the suite's way (docs/peers.md)."""
