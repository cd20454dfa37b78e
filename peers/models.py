"""GPT-2 sizes, as model/config.h: (layers, heads, d_model, vocabulary, context)."""
from dataclasses import dataclass


@dataclass(frozen=True)
class GPT2Config:
    name: str
    n_layer: int
    n_head: int
    d_model: int
    vocab: int = 50257
    n_ctx: int = 1024

    @property
    def d_ff(self):
        return 4 * self.d_model

    @property
    def padded_vocab(self):  # GPT2Config::padded_vocab(): a multiple of 64 (50257 -> 50304)
        return (self.vocab + 63) // 64 * 64

    @property
    def head_dim(self):
        return self.d_model // self.n_head


PRESETS = {c.name: c for c in (
    GPT2Config("small", 12, 12, 768),
    GPT2Config("medium", 24, 16, 1024),
    GPT2Config("large", 36, 20, 1280),
    GPT2Config("xl", 48, 25, 1600),
    GPT2Config("tiny", 2, 4, 128, vocab=1024, n_ctx=128),  # cpu_tiny_config()
)}


def model_config(name):
    if name not in PRESETS:
        raise ValueError(f"unknown model size '{name}'; valid: {', '.join(PRESETS)}")
    return PRESETS[name]
