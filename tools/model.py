"""PyTorch reference implementation of the linattn architecture.

This module is the single source of truth on the Python side: the golden
test data (tools/reference.py) and the demo models (tools/train.py) are both
produced with it, and the C engine implements exactly the same maths.

Public API
----------
Config                      dataclass with every [model] key of a linattn .ini
Config.from_ini(path)       parse a linattn .ini ([model] section)
Config.to_ini_text(...)     render a [model] section (plus optional extras)
LinAttnLM(cfg)              the nn.Module; forward(tokens[B,T]) -> logits[B,T,V]
save_safetensors(model, path, dtype="F32"|"F16"|"BF16", metadata=None)
load_safetensors(path, cfg=None, dtype=torch.float32) -> LinAttnLM
read_safetensors(path)      -> (dict name -> float32 numpy array, metadata)
write_safetensors(path, tensors, dtype, metadata=None)
from_ini(path, dtype=torch.float32) -> LinAttnLM with the .ini's weights loaded
set_hybrid_form(model, "auto"|"quadratic"|"chunked")   hybrid attention's form

Attention kinds: softmax (optionally a sliding `window`), linear (phi = elu+1,
optional per-head decay) and hybrid (a softmax window of W keys plus a decayed
linear tail over older keys, optional learned feature maps of `feature_dim`);
see the comment above hybrid_features() for the hybrid maths.

All Python here must run with Debian's /usr/bin/python3 (torch 1.13, numpy).
No dependency on the `safetensors` package: the format is written by hand.
"""

from __future__ import annotations

import configparser
import dataclasses
import json
import math
import os
import struct
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

NORM_EPS = 1e-5  # LayerNorm / RMSNorm epsilon by default (Config.norm_eps)


# --------------------------------------------------------------------------
# configuration
# --------------------------------------------------------------------------

_BOOL_TRUE = {"1", "true", "yes", "on"}
_BOOL_FALSE = {"0", "false", "no", "off"}


@dataclass
class Config:
    vocab_size: int = 256
    d_model: int = 32
    n_heads: int = 4
    n_layers: int = 2
    d_ff: int = 64
    attention: str = "linear"        # softmax | linear | hybrid
    norm: str = "layernorm"          # layernorm | rmsnorm
    norm_position: str = "pre"       # pre | post
    ffn: str = "gelu"                # relu | gelu (tanh approximation) | swiglu
    positions: str = "sincos"        # none | sincos | learned | rope
    max_seq_len: int = 64
    eps: float = 1e-6                # linear-attention denominator epsilon
    tie_embeddings: bool = False
    decay: str = "none"              # linear/hybrid: none | retnet | g0,g1,... (one per head)
    weights: str = ""                # path of the .safetensors (relative to the .ini)
    rope_theta: float = 10000.0      # rope: frequencies rope_theta^(-2i/head_dim)
    rope_pairing: str = "interleaved"  # rope: interleaved (2i, 2i+1) | half (i, i + hd/2)
    bias: bool = True                # False: no bias tensors (attention, ffn, layernorm)
    n_kv_heads: int = 0              # k/v heads (grouped-query attention); 0 = n_heads
    window: int = 0                  # softmax: sliding window W (0 = none); hybrid: W >= 1
    feature_dim: int = 0             # hybrid: F of the learned feature maps (0 = elu(x)+1 on q, k)
    norm_eps: float = 1e-5           # LayerNorm / RMSNorm epsilon (Hugging Face: rms_norm_eps)

    def validate(self) -> None:
        assert self.attention in ("softmax", "linear", "hybrid"), self.attention
        assert self.window >= 0, "window must be >= 0"
        if self.window > 0:
            assert self.attention in ("softmax", "hybrid"), "window needs softmax or hybrid"
        if self.attention == "hybrid":
            assert self.window >= 1, "hybrid needs window >= 1"
        assert self.feature_dim >= 0, "feature_dim must be >= 0"
        if self.feature_dim > 0:
            assert self.attention == "hybrid", "feature_dim needs hybrid attention"
        assert self.norm in ("layernorm", "rmsnorm"), self.norm
        assert self.norm_position in ("pre", "post"), self.norm_position
        assert self.ffn in ("relu", "gelu", "swiglu"), self.ffn
        assert self.positions in ("none", "sincos", "learned", "rope"), self.positions
        assert self.rope_pairing in ("interleaved", "half"), self.rope_pairing
        assert self.rope_theta > 0
        if self.positions == "rope":
            assert self.head_dim % 2 == 0, "rope needs an even head size"
        assert 0 <= self.n_kv_heads <= self.n_heads and self.n_heads % self.kv_heads == 0
        assert self.d_model % self.n_heads == 0, "d_model must be divisible by n_heads"
        if self.positions == "sincos":
            assert self.d_model % 2 == 0, "sincos positions need an even d_model"
        assert self.vocab_size > 0 and self.n_layers > 0 and self.d_ff > 0
        assert self.max_seq_len > 0
        assert self.norm_eps >= 0, "norm_eps must be >= 0"
        g = self.decays()
        if g is not None:
            assert self.attention in ("linear", "hybrid"), "decay needs linear or hybrid attention"
            assert len(g) == self.n_heads, "decay: one value per head"
            assert all(0.0 < x <= 1.0 for x in g), "decay values must be in (0, 1]"

    def decays(self) -> Optional[List[float]]:
        """Per-head decay gamma_h of the linear attention, or None (no decay).

        Values are rounded to float32, as the engine stores them.
        """
        d = self.decay.strip().lower()
        if d in ("", "none"):
            return None
        if d == "retnet":
            g = [1.0 - 2.0 ** (-5 - h) for h in range(self.n_heads)]
        else:
            g = [float(x) for x in d.split(",")]
        return [float(np.float32(x)) for x in g]

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads

    @property
    def kv_heads(self) -> int:
        return self.n_kv_heads or self.n_heads

    # the keys added with the llama family: written (and stored in metadata)
    # only when not their defaults, so older files stay byte for byte
    _LATER_DEFAULTS = {"rope_theta": 10000.0, "rope_pairing": "interleaved", "bias": True,
                       "n_kv_heads": 0, "window": 0, "feature_dim": 0, "norm_eps": 1e-5}

    # ---- INI -------------------------------------------------------------
    @classmethod
    def from_ini(cls, path: str) -> "Config":
        cp = configparser.ConfigParser(inline_comment_prefixes=(";", "#"),
                                       comment_prefixes=(";", "#"))
        with open(path, "r", encoding="utf-8") as f:
            cp.read_file(f)
        if not cp.has_section("model"):
            raise ValueError(f"{path}: no [model] section")
        sec = cp["model"]
        kw = {}
        for field in dataclasses.fields(cls):
            if field.name not in sec:
                continue
            raw = sec[field.name].strip()
            if field.type in ("int", int):
                kw[field.name] = int(raw)
            elif field.type in ("float", float):
                kw[field.name] = float(raw)
            elif field.type in ("bool", bool):
                low = raw.lower()
                if low in _BOOL_TRUE:
                    kw[field.name] = True
                elif low in _BOOL_FALSE:
                    kw[field.name] = False
                else:
                    raise ValueError(f"{path}: bad boolean {field.name} = {raw}")
            else:
                kw[field.name] = raw
        cfg = cls(**kw)
        if cfg.weights and not os.path.isabs(cfg.weights):
            cfg.weights = os.path.normpath(
                os.path.join(os.path.dirname(os.path.abspath(path)), cfg.weights))
        cfg.validate()
        return cfg

    def to_ini_text(self, weights: Optional[str] = None, header: str = "",
                    extra_sections: str = "") -> str:
        w = self.weights if weights is None else weights
        lines = []
        if header:
            lines += ["# " + h if h else "#" for h in header.splitlines()]
        lines += [
            "[model]",
            f"weights = {w}",
            f"vocab_size = {self.vocab_size}",
            f"d_model = {self.d_model}",
            f"n_heads = {self.n_heads}",
            f"n_layers = {self.n_layers}",
            f"d_ff = {self.d_ff}",
            f"attention = {self.attention}",
            f"norm = {self.norm}",
            f"norm_position = {self.norm_position}",
            f"ffn = {self.ffn}",
            f"positions = {self.positions}",
            f"max_seq_len = {self.max_seq_len}",
            f"eps = {self.eps!r}",
            f"tie_embeddings = {'true' if self.tie_embeddings else 'false'}",
        ]
        if self.decays() is not None:
            lines.append(f"decay = {self.decay}")
        if self.positions == "rope":
            lines.append(f"rope_theta = {self.rope_theta!r}")
            lines.append(f"rope_pairing = {self.rope_pairing}")
        if not self.bias:
            lines.append("bias = false")
        if self.n_kv_heads:
            lines.append(f"n_kv_heads = {self.n_kv_heads}")
        if self.window or self.attention == "hybrid":
            lines.append(f"window = {self.window}")
        if self.feature_dim or self.attention == "hybrid":
            lines.append(f"feature_dim = {self.feature_dim}")
        if self.norm_eps != 1e-5:
            lines.append(f"norm_eps = {self.norm_eps!r}")
        text = "\n".join(lines) + "\n"
        if extra_sections:
            text += "\n" + extra_sections.strip("\n") + "\n"
        return text

    def metadata(self) -> Dict[str, str]:
        """String -> string map stored in the safetensors __metadata__."""
        d = dataclasses.asdict(self)
        d.pop("weights")
        if self.decays() is None:
            d.pop("decay")   # files of undecayed models stay as they were
        for k, v in self._LATER_DEFAULTS.items():
            if d[k] == v and not (k.startswith("rope") and self.positions == "rope") \
                    and not (k in ("window", "feature_dim") and self.attention == "hybrid"):
                d.pop(k)
        out = {k: (("true" if v else "false") if isinstance(v, bool) else str(v))
               for k, v in d.items()}
        out["format"] = "linattn"
        return out


def runtime_generate_sections(prompt: str, max_new_tokens: int) -> str:
    """The [runtime] and [generate] sections the shipped demo configs carry."""
    return "\n".join([
        "[runtime]",
        "threads = 0",
        "# isa = auto: left unset, so LINATTN_ISA can choose (else the best the CPU has)",
        "",
        "[generate]",
        f"prompt = {prompt}",
        f"max_new_tokens = {max_new_tokens}",
        "temperature = 0.8",
        "top_k = 40",
        "top_p = 0.95",
        "seed = 42",
    ])


# --------------------------------------------------------------------------
# building blocks
# --------------------------------------------------------------------------

class RMSNorm(nn.Module):
    """x / sqrt(mean(x^2) + eps) * w   (weight only, no bias)."""

    def __init__(self, d: int, eps: float = NORM_EPS):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class LayerNormNoBias(nn.Module):
    """(x - mean) / sqrt(var + eps) * w   (biased variance, no bias: bias = false)."""

    def __init__(self, d: int, eps: float = NORM_EPS):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        mu = x.mean(-1, keepdim=True)
        var = (x - mu).pow(2).mean(-1, keepdim=True)
        return (x - mu) * torch.rsqrt(var + self.eps) * self.weight


def make_norm(cfg: Config) -> nn.Module:
    if cfg.norm == "layernorm":
        if not cfg.bias:
            return LayerNormNoBias(cfg.d_model, cfg.norm_eps)
        return nn.LayerNorm(cfg.d_model, eps=cfg.norm_eps)  # biased variance, weight+bias
    return RMSNorm(cfg.d_model, cfg.norm_eps)


def rope(x: torch.Tensor, pos_offset: int, theta: float, pairing: str) -> torch.Tensor:
    """Rotary positions on x [B, H, T, hd]: pair i of each head (dims 2i, 2i+1
    when interleaved, i, i + hd/2 when half) turns by p * theta^(-2i/hd) at
    position p.  Angles in float64."""
    B, H, T, hd = x.shape
    p = torch.arange(pos_offset, pos_offset + T, dtype=torch.float64)[:, None]
    i = torch.arange(hd // 2, dtype=torch.float64)[None, :]
    ang = p * torch.pow(torch.tensor(theta, dtype=torch.float64), -2.0 * i / hd)  # [T, hd/2]
    c, s = torch.cos(ang).to(x.dtype), torch.sin(ang).to(x.dtype)
    if pairing == "interleaved":
        a, b = x[..., 0::2], x[..., 1::2]
    else:
        a, b = x[..., :hd // 2], x[..., hd // 2:]
    ra, rb = a * c - b * s, a * s + b * c
    out = torch.empty_like(x)
    if pairing == "interleaved":
        out[..., 0::2], out[..., 1::2] = ra, rb
    else:
        out[..., :hd // 2], out[..., hd // 2:] = ra, rb
    return out


def gelu_tanh(x: torch.Tensor) -> torch.Tensor:
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x * x * x)))


def sincos_table(n_pos: int, d: int, offset: int = 0,
                 dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """PE[p, 2i] = sin(p / 10000^(2i/d)), PE[p, 2i+1] = cos(p / 10000^(2i/d)).

    Computed in float64 and then cast, so that every dtype sees the same
    correctly-rounded table.
    """
    p = torch.arange(offset, offset + n_pos, dtype=torch.float64)[:, None]
    i2 = torch.arange(0, d, 2, dtype=torch.float64)[None, :]            # 2i
    ang = p / torch.pow(torch.tensor(10000.0, dtype=torch.float64), i2 / d)
    pe = torch.empty(n_pos, d, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(ang)
    pe[:, 1::2] = torch.cos(ang)
    return pe.to(dtype)


def phi(x: torch.Tensor) -> torch.Tensor:
    """Feature map of the linear attention: elu(x) + 1 (strictly positive)."""
    return F.elu(x) + 1.0


def causal_linear_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                            eps: float, chunk: int = 64,
                            state: Optional[Tuple[torch.Tensor, torch.Tensor]] = None,
                            decay: Optional[List[float]] = None,
                            ) -> Tuple[torch.Tensor, Tuple[torch.Tensor, torch.Tensor]]:
    """Causal linear attention, chunked (memory O(T*chunk + dh^2) per head).

    q, k, v: [B, H, T, dh] (phi NOT yet applied).  state = (S [B,H,dh,dh],
    z [B,H,dh]) carried over from previous tokens, or None.  decay: per-head
    gamma_h in (0, 1] or None (= all 1).
    out_t = phi(q_t)^T S_t / (phi(q_t)^T z_t + eps),
    S_t = gamma S_{t-1} + phi(k_t) v_t^T, z_t = gamma z_{t-1} + phi(k_t).
    Inside a chunk starting after state S: token i sees gamma^(i+1) S and the
    chunk's keys j <= i weighted gamma^(i-j); the chunk leaves
    gamma^n S + sum_j gamma^(n-1-j) phi(k_j) v_j^T.
    Returns (out [B,H,T,dh], (S_T, z_T)).
    """
    B, H, T, dh = q.shape
    dv = v.shape[-1]
    fq, fk = phi(q), phi(k)
    if state is None:
        S = q.new_zeros(B, H, dh, dv)
        z = q.new_zeros(B, H, dh)
    else:
        S, z = state
    if decay is not None:
        logg = torch.log(torch.tensor(decay, dtype=torch.float64))[:, None]   # [H,1]
    outs = []
    for s in range(0, T, chunk):
        e = min(T, s + chunk)
        cq, ck, cv = fq[:, :, s:e], fk[:, :, s:e], v[:, :, s:e]
        n = e - s
        mask = torch.ones(n, n, dtype=torch.bool, device=q.device).tril()
        a = (cq @ ck.transpose(-1, -2)).masked_fill(~mask, 0.0)          # [B,H,n,n]
        if decay is None:
            num = a @ cv + cq @ S                                         # [B,H,n,dv]
            den = a.sum(-1) + (cq * z[:, :, None, :]).sum(-1)             # [B,H,n]
            S = S + ck.transpose(-1, -2) @ cv
            z = z + ck.sum(2)
        else:
            i = torch.arange(n, dtype=torch.float64)
            dist = (i[:, None] - i[None, :]).clamp(min=0)                 # i - j
            w = torch.exp(logg[:, :, None] * dist).to(a.dtype)           # [H,n,n]
            a = a * w.masked_fill(~mask, 0.0)
            g_in = torch.exp(logg * (i + 1)).to(a.dtype)[..., None]       # [H,n,1] gamma^(i+1)
            g_out = torch.exp(logg * (n - 1 - i)).to(a.dtype)[..., None]  # [H,n,1] gamma^(n-1-j)
            g_n = torch.exp(logg[:, 0] * n).to(a.dtype)                   # [H] gamma^n
            num = a @ cv + g_in * (cq @ S)
            den = a.sum(-1) + g_in[..., 0] * (cq * z[:, :, None, :]).sum(-1)
            S = g_n[:, None, None] * S + (ck * g_out).transpose(-1, -2) @ cv
            z = g_n[:, None] * z + (ck * g_out).sum(2)
        outs.append(num / (den + eps)[..., None])
    return torch.cat(outs, dim=2), (S, z)


def causal_linear_attention_naive(q, k, v, eps, decay=None):
    """Per-token recurrence, literally the formula. For verification only."""
    B, H, T, dh = q.shape
    S = q.new_zeros(B, H, dh, v.shape[-1])
    z = q.new_zeros(B, H, dh)
    g = q.new_ones(H) if decay is None else torch.tensor(decay, dtype=q.dtype)
    out = torch.empty_like(v)
    for t in range(T):
        fk = phi(k[:, :, t])
        fq = phi(q[:, :, t])
        S = g[:, None, None] * S + fk[..., :, None] * v[:, :, t][..., None, :]
        z = g[:, None] * z + fk
        num = (fq[..., :, None] * S).sum(-2)
        den = (fq * z).sum(-1)
        out[:, :, t] = num / (den + eps)[..., None]
    return out


def causal_linear_attention_cumsum(q, k, v, eps):
    """Full cumsum formulation (materialises S_t for every t). Verification only."""
    fq, fk = phi(q), phi(k)
    S = torch.cumsum(fk[..., :, None] * v[..., None, :], dim=2)  # [B,H,T,dh,dh]
    z = torch.cumsum(fk, dim=2)                                   # [B,H,T,dh]
    num = (fq[..., :, None] * S).sum(-2)
    den = (fq * z).sum(-1)
    return num / (den + eps)[..., None]


def causal_softmax_attention(q, k, v, past: Optional[Tuple[torch.Tensor, torch.Tensor]] = None,
                             window: int = 0):
    """Scaled dot-product attention, scale 1/sqrt(dh), causal. q,k,v [B,H,T,dh].

    past = (K, V) of earlier tokens ([B,H,P,dh]) or None.  window W > 0: query
    i (absolute position) sees only keys j with i - W < j <= i, and the
    returned cache keeps only the last W keys (enough for the next query).
    Returns (out, (K, V)).
    """
    if past is not None:
        k = torch.cat([past[0], k], dim=2)
        v = torch.cat([past[1], v], dim=2)
    T, P = q.shape[2], k.shape[2] - q.shape[2]
    scale = 1.0 / math.sqrt(q.shape[-1])
    att = (q @ k.transpose(-1, -2)) * scale                              # [B,H,T,P+T]
    qi = torch.arange(T, device=q.device)[:, None] + P
    kj = torch.arange(P + T, device=q.device)[None, :]
    masked = kj > qi
    if window > 0:
        masked = masked | (kj <= qi - window)
    att = att.masked_fill(masked, float("-inf"))
    out = torch.softmax(att, dim=-1) @ v
    if window > 0:
        k, v = k[:, :, -window:], v[:, :, -window:]
    return out, (k, v)


# ---- hybrid attention: a softmax window plus a decayed linear tail ---------
#
# For query i (after RoPE), scale = 1/sqrt(dh), s_ij = q_i.k_j * scale:
#   c_i  = max_{i-W < j <= i} s_ij                       (the window holds j = i)
#   w_ij = exp(s_ij - c_i)                                 i - W < j <= i
#   w_ij = exp(lam_h - c_i) gamma_h^(i-j) phiq_i.phik_j    j <= i - W   (the tail)
#   out_i = sum_j w_ij v_j / sum_j w_ij
# phiq = elu(wq_phi[h] q) + 1, phik = elu(wk_phi[g] k) + 1 (feature_dim F > 0) or
# elu(x) + 1 on q, k themselves (F = 0).  Recurrent form: a key enters S, z when
# it leaves the ring of the last W keys; S_i = sum_{j <= i-W} gamma^(i-j) phik_j v_j^T.
#
# The functions below take q [B,H,T,dh], fq [B,H,T,F] and the keys k, v, fk
# [B,H,P+T,.] of which the first P (P <= W) come from a ring of earlier tokens;
# past = (S0 [B,H,F,dv], z0 [B,H,F]) is the state after the token before the
# first key of the block (keys older than the ring), or None; lam [H]; log_decay
# [H] (log gamma) or None.

def hybrid_features(x: torch.Tensor, w: Optional[torch.Tensor]) -> torch.Tensor:
    """phi of hybrid attention: elu(w[h] @ x) + 1 with x [B,n,T,dh], w [n,F,dh];
    elu(x) + 1 when w is None."""
    if w is None:
        return phi(x)
    return phi(torch.einsum("bntd,nfd->bntf", x, w.to(x.dtype)))


def _log_decay(log_decay, H, like):
    if log_decay is None:
        return like.new_zeros(H)
    return log_decay.to(like.dtype)


def hybrid_attention_quadratic(q, k, v, fq, fk, lam, window, log_decay=None, past=None):
    """Masked quadratic form ([T, P+T] weights), literally the definition.  -> out."""
    B, H, T, dh = q.shape
    L = k.shape[2]
    P = L - T
    logg = _log_decay(log_decay, H, q)
    s = (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(dh))               # [B,H,T,L]
    d = (torch.arange(T, device=q.device)[:, None] + P) - torch.arange(L, device=q.device)
    win = (d >= 0) & (d < window)
    tail = d >= window
    sw = s.masked_fill(~win, float("-inf"))
    c = sw.amax(-1, keepdim=True)                                        # [B,H,T,1]
    ew = torch.exp(sw - c)
    gd = torch.exp(logg[:, None, None] * d.clamp(min=0).to(q.dtype))    # [H,T,L]
    tw = ((fq @ fk.transpose(-1, -2)) * gd).masked_fill(~tail, 0.0)
    st = torch.exp(lam.to(q.dtype)[:, None, None] - c)                  # [B,H,T,1]
    num_t, den_t = tw @ v, tw.sum(-1, keepdim=True)
    if past is not None:
        S0, z0 = past
        t1 = torch.arange(1, T + 1, device=q.device, dtype=q.dtype)
        g0 = torch.exp(logg[:, None] * t1)[..., None]                   # [H,T,1] gamma^(t+1)
        num_t = num_t + g0 * (fq @ S0)
        den_t = den_t + g0 * (fq * z0[:, :, None, :]).sum(-1, keepdim=True)
    num = ew @ v + st * num_t
    den = ew.sum(-1, keepdim=True) + st * den_t
    return num / den


def hybrid_attention_chunked(q, k, v, fq, fk, lam, window, log_decay=None, past=None,
                             chunk: int = 64):
    """The same maths in O(T (C + F dv)) per head: chunks of C = max(chunk, W)
    queries; the window and the tail's nearest keys come from a band of 2C keys
    (this chunk and the one before); older chunks reach the tail through a
    decayed sum of per-chunk states (an [n, n] decay matrix, no Python loop)."""
    B, H, T, dh = q.shape
    L = k.shape[2]
    P = L - T
    Fd, dv = fq.shape[-1], v.shape[-1]
    C = max(int(chunk), int(window))
    n = -(-L // C)
    pad = n * C - L
    dev, dt = q.device, q.dtype
    logg = _log_decay(log_decay, H, q)
    lam = lam.to(dt)

    def chunks(x, front):      # [B,H,*,f] -> [B,H,n,C,f], front zeros (dummy queries) + end pad
        x = F.pad(x, (0, 0, front, pad + (L - front - x.shape[2])))
        return x.view(B, H, n, C, x.shape[-1])

    def with_prev(x):          # [B,H,n,C,f] -> [B,H,n,2C,f]: the chunk before, then this one
        prev = torch.cat([torch.zeros_like(x[:, :, :1]), x[:, :, :-1]], dim=2)
        return torch.cat([prev, x], dim=3)

    qc, fqc = chunks(q, P), chunks(fq, P)
    kc, vc, fkc = chunks(k, 0), chunks(v, 0), chunks(fk, 0)
    k2, v2, fk2 = with_prev(kc), with_prev(vc), with_prev(fkc)
    ii = torch.arange(C, device=dev)
    d = C + ii[:, None] - torch.arange(2 * C, device=dev)[None, :]     # i - j, [C,2C]
    valid = torch.ones(n, 1, 2 * C, dtype=torch.bool, device=dev)
    valid[0, :, :C] = False                                              # no chunk before the first
    win = (d >= 0) & (d < window) & valid                                # [n,C,2C]
    tail = (d >= window) & valid
    s = (qc @ k2.transpose(-1, -2)) * (1.0 / math.sqrt(dh))             # [B,H,n,C,2C]
    sw = s.masked_fill(~win, float("-inf"))
    c = sw.amax(-1, keepdim=True)                                        # [B,H,n,C,1]
    ew = torch.exp(sw - c)
    gd = torch.exp(logg.view(H, 1, 1, 1) * d.clamp(min=0).to(dt))       # [H,1,C,2C]
    tw = ((fqc @ fk2.transpose(-1, -2)) * gd).masked_fill(~tail, 0.0)
    num_t, den_t = tw @ v2, tw.sum(-1, keepdim=True)
    if n > 2:   # keys of chunks m <= c-2: decayed to the start of chunk m+1, summed over m
        gout = torch.exp(logg[:, None] * (C - ii).to(dt))                # [H,C] gamma^(C-u)
        fkw = fkc * gout[None, :, None, :, None]
        D = fkw.transpose(-1, -2) @ vc                                   # [B,H,n,F,dv]
        Dz = fkw.sum(3)                                                  # [B,H,n,F]
        cm = torch.arange(n, device=dev)
        ex = cm[:, None] - 1 - cm[None, :]                               # c-1-m
        Mx = torch.exp(logg.view(H, 1, 1) * (ex.clamp(min=0) * C).to(dt))
        Mx = Mx.masked_fill(ex < 1, 0.0)                                 # [H,n,n]
        R = torch.einsum("hcm,bhmx->bhcx", Mx, D.reshape(B, H, n, Fd * dv)).view(B, H, n, Fd, dv)
        Rz = torch.einsum("hcm,bhmf->bhcf", Mx, Dz)
        gin = torch.exp(logg[:, None] * ii.to(dt))[None, :, None, :, None]   # gamma^ii
        num_t = num_t + gin * (fqc @ R)
        den_t = den_t + gin * (fqc @ Rz[..., None])
    if past is not None:        # keys older than the ring: gamma^(e-P+1) S0 for query e >= P
        S0, z0 = past
        e = torch.arange(n * C, device=dev)
        g0 = torch.exp(logg[:, None] * (e - P + 1).clamp(min=0).to(dt)).masked_fill(e < P, 0.0)
        g0 = g0.view(1, H, n, C, 1)
        num_t = num_t + g0 * (fqc @ S0[:, :, None])
        den_t = den_t + g0 * (fqc @ z0[:, :, None, :, None])
    st = torch.exp(lam.view(H, 1, 1, 1) - c)
    num = ew @ v2 + st * num_t
    den = ew.sum(-1, keepdim=True) + st * den_t
    out = (num / den).reshape(B, H, n * C, dv)
    return out[:, :, P:P + T]


def hybrid_state(fk, v, window, log_decay=None, past=None, T=None):
    """The tail state (S, z) after the last key of fk, v [B,H,P+T,.]: every key at
    least W older than the last one, S = sum_j gamma^(L-1-j) phik_j v_j^T (+ gamma^T S0)."""
    B, H, L, Fd = fk.shape
    logg = _log_decay(log_decay, H, fk)
    m = L - window                       # keys 0 .. m-1 have left the ring
    if m > 0:
        j = torch.arange(m, device=fk.device, dtype=fk.dtype)
        w = torch.exp(logg[:, None] * (L - 1 - j))[None, :, :, None]    # [1,H,m,1]
        fkw = fk[:, :, :m] * w
        S, z = fkw.transpose(-1, -2) @ v[:, :, :m], fkw.sum(2)
    else:
        S = fk.new_zeros(B, H, Fd, v.shape[-1])
        z = fk.new_zeros(B, H, Fd)
    if past is not None:
        gT = torch.exp(logg * float(T if T is not None else L))
        S = S + gT[:, None, None] * past[0]
        z = z + gT[:, None] * past[1]
    return S, z


def hybrid_attention_naive(q, k, v, fq, fk, lam, window, decay=None):
    """Per-query loop over keys, written from the definition (no past).  Verification only."""
    B, H, T, dh = q.shape
    out = torch.empty(B, H, T, v.shape[-1], dtype=q.dtype)
    g = [1.0] * H if decay is None else [float(x) for x in decay]
    for b in range(B):
        for h in range(H):
            for i in range(T):
                lo = max(0, i - window + 1)
                s = [float(q[b, h, i] @ k[b, h, j]) / math.sqrt(dh) for j in range(lo, i + 1)]
                c = max(s)
                ws = [math.exp(x - c) for x in s]
                idx = list(range(lo, i + 1))
                for j in range(0, lo):
                    ws.append(math.exp(float(lam[h]) - c) * g[h] ** (i - j)
                              * float(fq[b, h, i] @ fk[b, h, j]))
                    idx.append(j)
                wt = torch.tensor(ws, dtype=q.dtype)
                out[b, h, i] = (wt @ v[b, h, idx]) / wt.sum()
    return out


def hybrid_attention_recurrent(q, k, v, fq, fk, lam, window, decay=None):
    """Token by token with a ring of the last W keys and S, z (the decode path of
    the engine).  Verification only."""
    B, H, T, dh = q.shape
    g = q.new_ones(H) if decay is None else torch.tensor(decay, dtype=q.dtype)
    S = q.new_zeros(B, H, fq.shape[-1], v.shape[-1])
    z = q.new_zeros(B, H, fq.shape[-1])
    out = torch.empty(B, H, T, v.shape[-1], dtype=q.dtype)
    for i in range(T):
        if i - window >= 0:      # key i-W leaves the ring
            j = i - window
            S = g[:, None, None] * S + (g ** window)[:, None, None] * fk[:, :, j, :, None] * v[:, :, j, None, :]
            z = g[:, None] * z + (g ** window)[:, None] * fk[:, :, j]
        else:
            S, z = g[:, None, None] * S, g[:, None] * z
        lo = max(0, i - window + 1)
        s = (k[:, :, lo:i + 1] @ q[:, :, i, :, None])[..., 0] / math.sqrt(dh)   # [B,H,n]
        c = s.amax(-1, keepdim=True)
        e = torch.exp(s - c)
        st = torch.exp(lam[None, :, None] - c)                             # [B,H,1]
        num = (e[..., None] * v[:, :, lo:i + 1]).sum(2) + st * (fq[:, :, i, :, None] * S).sum(2)
        den = e.sum(-1, keepdim=True) + st * (fq[:, :, i] * z).sum(-1, keepdim=True)
        out[:, :, i] = num / den
    return out


def hybrid_attention(q, k, v, fq, fk, lam, window, log_decay=None, past=None,
                     chunk: int = 64, form: str = "auto"):
    """Dispatch: form = quadratic | chunked | auto (quadratic for short blocks)."""
    if form == "auto":
        form = "quadratic" if q.shape[2] * k.shape[2] <= 4096 else "chunked"
    if form == "quadratic":
        return hybrid_attention_quadratic(q, k, v, fq, fk, lam, window, log_decay, past)
    return hybrid_attention_chunked(q, k, v, fq, fk, lam, window, log_decay, past, chunk)


class Attention(nn.Module):
    def __init__(self, cfg: Config):
        super().__init__()
        d = cfg.d_model
        kvd = cfg.kv_heads * cfg.head_dim
        self.cfg = cfg
        self.q = nn.Linear(d, d, bias=cfg.bias)
        self.k = nn.Linear(d, kvd, bias=cfg.bias)
        self.v = nn.Linear(d, kvd, bias=cfg.bias)
        self.o = nn.Linear(d, d, bias=cfg.bias)
        # hybrid: "auto" | "quadratic" | "chunked" (set_hybrid_form);
        # log_decay_fn: optional callable -> [H] log gamma (learned decays, linearize.py)
        self.hybrid_form = "auto"
        self.log_decay_fn = None
        if cfg.attention == "hybrid":
            H, G, dh, Fd = cfg.n_heads, cfg.kv_heads, cfg.head_dim, cfg.feature_dim
            if Fd > 0:   # init: [I; -I] for F = 2 dh, I for F = dh, else small random
                self.wq_phi = nn.Parameter(_phi_init(H, Fd, dh))
                self.wk_phi = nn.Parameter(_phi_init(G, Fd, dh))
            self.lin_scale = nn.Parameter(torch.full((H,), -math.log(Fd or dh)))

    def log_decay(self) -> Optional[torch.Tensor]:
        if self.log_decay_fn is not None:
            return self.log_decay_fn()
        g = self.cfg.decays()
        if g is None:
            return None
        return torch.log(torch.tensor(g, dtype=torch.float64))

    def forward(self, x, state=None, chunk: int = 64, pos_offset: int = 0,
                want_state: bool = True):
        B, T, d = x.shape
        H, dh, G = self.cfg.n_heads, self.cfg.head_dim, self.cfg.kv_heads

        def split(t, n):  # [B,T,n*dh] -> [B,n,T,dh]; head h = columns h*dh .. (h+1)*dh-1
            return t.view(B, T, n, dh).transpose(1, 2)

        q, k, v = split(self.q(x), H), split(self.k(x), G), split(self.v(x), G)
        if self.cfg.positions == "rope":
            q = rope(q, pos_offset, self.cfg.rope_theta, self.cfg.rope_pairing)
            k = rope(k, pos_offset, self.cfg.rope_theta, self.cfg.rope_pairing)
        if self.cfg.attention == "hybrid":
            y, new_state = self._hybrid(q, k, v, state, chunk, want_state)
            y = y.transpose(1, 2).reshape(B, T, d)
            return self.o(y), new_state
        if G != H:  # query head h reads k/v head h // (H / G)
            k = k.repeat_interleave(H // G, dim=1)
            v = v.repeat_interleave(H // G, dim=1)
        if self.cfg.attention == "linear":
            y, new_state = causal_linear_attention(q, k, v, self.cfg.eps, chunk, state,
                                                   self.cfg.decays())
        else:
            y, new_state = causal_softmax_attention(q, k, v, state, self.cfg.window)
        y = y.transpose(1, 2).reshape(B, T, d)
        return self.o(y), new_state

    def _hybrid(self, q, k, v, state, chunk, want_state):
        """state = (ring_k [B,G,P,dh], ring_v [B,G,P,dh], S [B,H,F,dv], z [B,H,F]):
        the last P <= W keys/values (post-RoPE, per k/v head) and the tail sums
        after the previous token."""
        H, G, W = self.cfg.n_heads, self.cfg.kv_heads, self.cfg.window
        T = q.shape[2]
        past = None
        if state is not None:
            rk, rv, S0, z0 = state
            k = torch.cat([rk, k], dim=2)
            v = torch.cat([rv, v], dim=2)
            past = (S0, z0)
        wq = getattr(self, "wq_phi", None)
        wk = getattr(self, "wk_phi", None)
        fq = hybrid_features(q, wq)
        fk = hybrid_features(k, wk)
        r = H // G
        kx, vx, fkx = (t.repeat_interleave(r, dim=1) if r > 1 else t for t in (k, v, fk))
        logg = self.log_decay()
        if logg is not None:
            logg = logg.to(q.device)
        y = hybrid_attention(q, kx, vx, fq, fkx, self.lin_scale, W, logg, past,
                             chunk, self.hybrid_form)
        new_state = None
        if want_state:
            S, z = hybrid_state(fkx, vx, W, logg, past, T)
            new_state = (k[:, :, -W:], v[:, :, -W:], S, z)
        return y, new_state


def _phi_init(n: int, Fd: int, dh: int) -> torch.Tensor:
    eye = torch.eye(dh)
    if Fd == 2 * dh:
        w = torch.cat([eye, -eye], 0)
    elif Fd == dh:
        w = eye
    else:
        w = torch.randn(Fd, dh) / math.sqrt(dh)
    return w[None].repeat(n, 1, 1).contiguous()


def set_hybrid_form(model: nn.Module, form: str) -> None:
    """Choose the hybrid attention form of every layer: auto | quadratic | chunked."""
    assert form in ("auto", "quadratic", "chunked"), form
    for m in model.modules():
        if isinstance(m, Attention):
            m.hybrid_form = form


class FFN(nn.Module):
    def __init__(self, cfg: Config):
        super().__init__()
        self.swiglu = cfg.ffn == "swiglu"
        if self.swiglu:
            self.gate = nn.Linear(cfg.d_model, cfg.d_ff, bias=cfg.bias)
        self.up = nn.Linear(cfg.d_model, cfg.d_ff, bias=cfg.bias)
        self.down = nn.Linear(cfg.d_ff, cfg.d_model, bias=cfg.bias)
        self.act = gelu_tanh if cfg.ffn == "gelu" else F.relu

    def forward(self, x):
        if self.swiglu:  # down(silu(gate x) * up x)
            return self.down(F.silu(self.gate(x)) * self.up(x))
        return self.down(self.act(self.up(x)))


class Block(nn.Module):
    def __init__(self, cfg: Config):
        super().__init__()
        self.pre = cfg.norm_position == "pre"
        self.norm1 = make_norm(cfg)
        self.attn = Attention(cfg)
        self.norm2 = make_norm(cfg)
        self.ffn = FFN(cfg)

    def forward(self, x, state=None, chunk: int = 64, pos_offset: int = 0,
                want_state: bool = True):
        if self.pre:
            a, st = self.attn(self.norm1(x), state, chunk, pos_offset, want_state)
            x = x + a
            x = x + self.ffn(self.norm2(x))
        else:
            a, st = self.attn(x, state, chunk, pos_offset, want_state)
            x = self.norm1(x + a)
            x = self.norm2(x + self.ffn(x))
        return x, st


class LinAttnLM(nn.Module):
    def __init__(self, cfg: Config):
        super().__init__()
        cfg.validate()
        self.cfg = cfg
        self.tok_emb = nn.Embedding(cfg.vocab_size, cfg.d_model)
        if cfg.positions == "learned":
            self.pos_emb = nn.Embedding(cfg.max_seq_len, cfg.d_model)
        self.layers = nn.ModuleList([Block(cfg) for _ in range(cfg.n_layers)])
        if cfg.norm_position == "pre":
            self.norm_f = make_norm(cfg)
        if not cfg.tie_embeddings:
            self.lm_head = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)

    def head_weight(self) -> torch.Tensor:
        return self.tok_emb.weight if self.cfg.tie_embeddings else self.lm_head.weight

    def forward(self, tokens: torch.Tensor, pos_offset: int = 0, states=None,
                return_states: bool = False, chunk: int = 64):
        """tokens [B,T] int64 -> logits [B,T,V].

        pos_offset: absolute position of tokens[:, 0] (for incremental decoding).
        states: per-layer state from a previous call (linear: (S, z); softmax:
        (K, V), the last W of them with a window; hybrid: (ring K, ring V, S, z));
        pass return_states=True to get the new ones.
        """
        B, T = tokens.shape
        x = self.tok_emb(tokens)
        if self.cfg.positions == "sincos":
            x = x + sincos_table(T, self.cfg.d_model, pos_offset, x.dtype).to(x.device)
        elif self.cfg.positions == "learned":
            if pos_offset + T > self.cfg.max_seq_len:
                raise ValueError("learned positions: sequence longer than max_seq_len")
            pos = torch.arange(pos_offset, pos_offset + T, device=tokens.device)
            x = x + self.pos_emb(pos)
        new_states = []
        for i, layer in enumerate(self.layers):
            x, st = layer(x, None if states is None else states[i], chunk, pos_offset,
                          return_states)
            new_states.append(st)
        if self.cfg.norm_position == "pre":
            x = self.norm_f(x)
        logits = x @ self.head_weight().t()
        if return_states:
            return logits, new_states
        return logits

    def num_params(self) -> int:
        return sum(p.numel() for p in self.parameters())


# --------------------------------------------------------------------------
# safetensors (hand-written, no dependency on the `safetensors` package)
# --------------------------------------------------------------------------

_DTYPE_SIZES = {"F32": 4, "F16": 2, "BF16": 2, "F64": 8}


def _encode(arr32: np.ndarray, dtype: str) -> bytes:
    a = np.ascontiguousarray(arr32, dtype=np.float32)
    if dtype == "F32":
        return a.astype("<f4").tobytes()
    if dtype == "F16":
        return a.astype("<f2").tobytes()  # IEEE round-to-nearest-even
    if dtype == "BF16":
        t = torch.from_numpy(a.copy()).to(torch.bfloat16)   # round-to-nearest-even
        return t.view(torch.int16).numpy().astype("<i2").tobytes()
    if dtype == "F64":
        return a.astype("<f8").tobytes()
    raise ValueError(f"unsupported dtype {dtype}")


def _decode(buf: bytes, dtype: str, shape: List[int]) -> np.ndarray:
    if dtype == "F32":
        a = np.frombuffer(buf, dtype="<f4")
    elif dtype == "F16":
        a = np.frombuffer(buf, dtype="<f2").astype(np.float32)
    elif dtype == "BF16":
        u = np.frombuffer(buf, dtype="<u2").astype(np.uint32) << 16
        a = u.view(np.float32)
    elif dtype == "F64":
        a = np.frombuffer(buf, dtype="<f8")
    else:
        raise ValueError(f"unsupported dtype {dtype}")
    return a.reshape(shape).copy()


def write_safetensors(path: str, tensors: Dict[str, np.ndarray], dtype: str = "F32",
                      metadata: Optional[Dict[str, str]] = None) -> None:
    """Write name -> float array as safetensors with the given storage dtype."""
    if dtype not in _DTYPE_SIZES:
        raise ValueError(f"unsupported dtype {dtype}")
    header: Dict[str, object] = {}
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    blobs = []
    off = 0
    for name in tensors:  # keep insertion order (model order)
        arr = np.asarray(tensors[name])
        raw = _encode(arr, dtype)
        header[name] = {"dtype": dtype, "shape": list(arr.shape),
                        "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    hjson = json.dumps(header, separators=(",", ":")).encode("utf-8")
    hjson += b" " * ((-len(hjson)) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hjson)))
        f.write(hjson)
        for b in blobs:
            f.write(b)


def read_safetensors(path: str) -> Tuple[Dict[str, np.ndarray], Dict[str, str]]:
    """Read a safetensors file -> (name -> float32/float64 numpy array, metadata)."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n].decode("utf-8"))
    meta = header.pop("__metadata__", {}) or {}
    base = 8 + n
    out = {}
    for name, info in header.items():
        s, e = info["data_offsets"]
        out[name] = _decode(data[base + s:base + e], info["dtype"], info["shape"])
    return out, meta


def expected_tensor_shapes(cfg: Config) -> Dict[str, Tuple[int, ...]]:
    """The exact tensor set (name -> shape) of a linattn model, in file order."""
    V, d, f = cfg.vocab_size, cfg.d_model, cfg.d_ff
    kvd = cfg.kv_heads * cfg.head_dim
    ln = cfg.norm == "layernorm" and cfg.bias
    shapes: Dict[str, Tuple[int, ...]] = {"tok_emb.weight": (V, d)}
    if cfg.positions == "learned":
        shapes["pos_emb.weight"] = (cfg.max_seq_len, d)
    for i in range(cfg.n_layers):
        p = f"layers.{i}."
        for nm in ("q", "k", "v", "o"):
            rows = kvd if nm in ("k", "v") else d
            shapes[p + f"attn.{nm}.weight"] = (rows, d)
            if cfg.bias:
                shapes[p + f"attn.{nm}.bias"] = (rows,)
        if cfg.attention == "hybrid":
            if cfg.feature_dim > 0:
                shapes[p + "attn.wq_phi"] = (cfg.n_heads, cfg.feature_dim, cfg.head_dim)
                shapes[p + "attn.wk_phi"] = (cfg.kv_heads, cfg.feature_dim, cfg.head_dim)
            shapes[p + "attn.lin_scale"] = (cfg.n_heads,)
        for nm in ("norm1", "norm2"):
            shapes[p + f"{nm}.weight"] = (d,)
            if ln:
                shapes[p + f"{nm}.bias"] = (d,)
        ffn = ("gate", "up", "down") if cfg.ffn == "swiglu" else ("up", "down")
        for nm in ffn:
            shapes[p + f"ffn.{nm}.weight"] = (d, f) if nm == "down" else (f, d)
            if cfg.bias:
                shapes[p + f"ffn.{nm}.bias"] = (d,) if nm == "down" else (f,)
    if cfg.norm_position == "pre":
        shapes["norm_f.weight"] = (d,)
        if ln:
            shapes["norm_f.bias"] = (d,)
    if not cfg.tie_embeddings:
        shapes["lm_head.weight"] = (V, d)
    return shapes


def state_tensors(model: LinAttnLM) -> Dict[str, np.ndarray]:
    """name -> float32 numpy array, exactly the linattn tensor set, in file order."""
    sd = model.state_dict()
    shapes = expected_tensor_shapes(model.cfg)
    out = {}
    for name, shape in shapes.items():
        t = sd[name].detach().to(torch.float32).cpu().numpy()
        assert tuple(t.shape) == shape, (name, t.shape, shape)
        out[name] = t
    extra = set(sd) - set(shapes)
    assert not extra, f"unexpected tensors in state_dict: {sorted(extra)}"
    return out


def save_safetensors(model: LinAttnLM, path: str, dtype: str = "F32",
                     metadata: Optional[Dict[str, str]] = None) -> None:
    """Export a LinAttnLM to linattn's safetensors layout (F32, F16 or BF16)."""
    meta = model.cfg.metadata()
    if metadata:
        meta.update(metadata)
    write_safetensors(path, state_tensors(model), dtype, meta)


def load_safetensors(path: str, cfg: Optional[Config] = None,
                     dtype: torch.dtype = torch.float32) -> LinAttnLM:
    """Build a LinAttnLM from a linattn safetensors file.

    cfg: the model config; if None it is rebuilt from the file's __metadata__
    (written by save_safetensors).  The weights are upcast exactly from their
    storage dtype (F16/BF16 -> f32 is exact) and the model is returned in
    `dtype` (use torch.float64 for golden references).
    """
    tensors, meta = read_safetensors(path)
    if cfg is None:
        kw = {}
        for field in dataclasses.fields(Config):
            if field.name in meta:
                raw = meta[field.name]
                if field.type in ("int", int):
                    kw[field.name] = int(raw)
                elif field.type in ("float", float):
                    kw[field.name] = float(raw)
                elif field.type in ("bool", bool):
                    kw[field.name] = raw.lower() in _BOOL_TRUE
                else:
                    kw[field.name] = raw
        cfg = Config(**kw)
    cfg = dataclasses.replace(cfg)
    model = LinAttnLM(cfg)
    shapes = expected_tensor_shapes(cfg)
    missing = set(shapes) - set(tensors)
    extra = set(tensors) - set(shapes)
    if missing or extra:
        raise ValueError(f"{path}: missing {sorted(missing)} extra {sorted(extra)}")
    sd = {}
    for name, shape in shapes.items():
        arr = tensors[name]
        if tuple(arr.shape) != shape:
            raise ValueError(f"{path}: {name} has shape {arr.shape}, expected {shape}")
        sd[name] = torch.from_numpy(np.ascontiguousarray(arr)).to(torch.float64)
    model = model.to(dtype)
    model.load_state_dict({k: v.to(dtype) for k, v in sd.items()}, strict=True)
    model.eval()
    return model


def from_ini(path: str, dtype: torch.dtype = torch.float32) -> LinAttnLM:
    """Load the model described by a linattn .ini (weights path relative to it)."""
    cfg = Config.from_ini(path)
    return load_safetensors(cfg.weights, cfg, dtype)


# --------------------------------------------------------------------------
# sampling (for demos; the C engine has its own sampler)
# --------------------------------------------------------------------------

@torch.no_grad()
def generate(model: LinAttnLM, prompt: bytes, max_new_tokens: int = 200,
             temperature: float = 0.8, top_k: int = 40, top_p: float = 0.95,
             seed: int = 42) -> bytes:
    """Byte-level generation. temperature <= 0 means greedy.

    Linear attention decodes incrementally with its O(1) recurrent state and
    is not limited by max_seq_len (with sincos/none positions).  Softmax
    attention uses a KV cache and stops extending beyond max_seq_len by
    re-encoding the last max_seq_len tokens (positions restart at 0).
    """
    model.eval()
    gen = torch.Generator().manual_seed(seed)
    cfg = model.cfg
    toks = list(prompt)
    x = torch.tensor([toks], dtype=torch.long)
    logits, states = model(x, 0, None, return_states=True)
    pos = len(toks)
    out = bytearray()
    for _ in range(max_new_tokens):
        lg = logits[0, -1].double()
        if temperature <= 0:
            nxt = int(torch.argmax(lg))
        else:
            lg = lg / temperature
            if 0 < top_k < lg.numel():
                kth = torch.topk(lg, top_k).values[-1]
                lg = lg.masked_fill(lg < kth, float("-inf"))
            probs = torch.softmax(lg, -1)
            if 0 < top_p < 1.0:
                sp, si = torch.sort(probs, descending=True)
                cum = torch.cumsum(sp, 0)
                keep = (cum - sp) < top_p
                mask = torch.zeros_like(probs, dtype=torch.bool)
                mask[si[keep]] = True
                probs = probs.masked_fill(~mask, 0.0)
                probs = probs / probs.sum()
            nxt = int(torch.multinomial(probs.float(), 1, generator=gen))
        out.append(nxt)
        toks.append(nxt)
        limited = (cfg.attention == "softmax" and cfg.window == 0) or cfg.positions == "learned"
        if limited and pos >= cfg.max_seq_len:
            ctx = toks[-cfg.max_seq_len:]
            logits, states = model(torch.tensor([ctx]), 0, None, return_states=True)
            pos = len(ctx)
        else:
            logits, states = model(torch.tensor([[nxt]]), pos, states, return_states=True)
            pos += 1
    return bytes(out)
