"""GPT-2 in PyTorch, the architecture of model/gpt2.cpp: pre-LayerNorm blocks, fused QKV, SDPA
causal attention, tanh-GELU MLP, LM head tied to the token embedding; the vocabulary padded to
a multiple of 64 on request (the loss still covers the real tokens)."""
import math

import torch.nn as nn
import torch.nn.functional as F
import torch


class Block(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.h = h
        self.ln_1 = nn.LayerNorm(d)
        self.c_attn = nn.Linear(d, 3 * d)
        self.attn_proj = nn.Linear(d, d)
        self.ln_2 = nn.LayerNorm(d)
        self.c_fc = nn.Linear(d, 4 * d)
        self.mlp_proj = nn.Linear(4 * d, d)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, self.h, C // self.h).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.attn_proj(y.transpose(1, 2).contiguous().view(B, T, C))
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


class GPT2(nn.Module):
    def __init__(self, cfg, pad_vocab=False):
        super().__init__()
        self.vocab = cfg.vocab
        self.wte = nn.Embedding(cfg.padded_vocab if pad_vocab else cfg.vocab, cfg.d_model)
        self.wpe = nn.Embedding(cfg.n_ctx, cfg.d_model)
        self.h = nn.ModuleList(Block(cfg.d_model, cfg.n_head) for _ in range(cfg.n_layer))
        self.ln_f = nn.LayerNorm(cfg.d_model)
        std, proj_std = 0.02, 0.02 / math.sqrt(2 * cfg.n_layer)
        for name, p in self.named_parameters():
            if name.endswith("bias"):
                nn.init.zeros_(p)
            elif name.endswith("proj.weight"):
                nn.init.normal_(p, 0.0, proj_std)
            elif p.dim() == 2:
                nn.init.normal_(p, 0.0, std)
        with torch.no_grad():
            self.wte.weight[cfg.vocab:].zero_()  # padding rows (none unless pad_vocab)

    def forward(self, idx, targets):
        T = idx.size(1)
        x = self.wte(idx) + self.wpe(torch.arange(T, device=idx.device))
        for b in self.h:
            x = b(x)
        logits = (self.ln_f(x) @ self.wte.weight.t())[..., : self.vocab]  # tied LM head
        return F.cross_entropy(logits.reshape(-1, self.vocab).float(), targets.view(-1))


def param_shapes(cfg):
    """The parameter shapes of the model, without allocating it."""
    with torch.device("meta"):
        return [tuple(p.shape) for p in GPT2(cfg).parameters()]


def model_flops_per_token(params, cfg, seq):  # fixtures/cost.cpp
    return 6.0 * params + 6.0 * cfg.n_layer * seq * cfg.d_model
