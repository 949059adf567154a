#!/usr/bin/python3
"""Generate the golden test data in tests/data/ for the linattn C engine.

    /usr/bin/python3 tools/reference.py            # tiny models + kjv goldens
    /usr/bin/python3 tools/reference.py --check    # self-checks of the reference maths only
    /usr/bin/python3 tools/reference.py --no-kjv   # skip the goldens of the shipped models
    /usr/bin/python3 tools/reference.py --only hybrid  # only the window/hybrid models

For every tiny model NAME this writes into tests/data/:
    NAME.ini               [model] section, weights = NAME.safetensors
    NAME.safetensors       weights (F32, except one F16 and one BF16 model)
    NAME.tokens.npy        float64 ('<f8') [T], byte tokens, T = 24
    NAME.logits.npy        float32 ('<f4') [T, 256], row t = logits after tokens 0..t
and for the sincos/none linear models also a longer stream that runs past
max_seq_len (linear attention is not limited by its context):
    NAME.stream_tokens.npy ('<f8') [100],  NAME.stream_logits.npy ('<f4') [100, 256]
and for the decayed ones that stream as raw bytes with its bits per byte (text):
    NAME.stream.txt, NAME.stream_bpb.txt

Operator goldens for decayed causal linear attention, from a float64 NumPy
loop written from the definition (lengths, Lq != Lk both ways, d_v != d_k):
    decay-op-*.{q,k,v,decay}.npy ('<f4'), .lengths.npy ('<f8'), .out.npy ('<f8')

For each shipped model in models/ (configs/kjv-softmax.ini, configs/kjv-linear.ini,
configs/kjv-linear-plain.ini, the llama-shaped teacher configs/kjv-llama.ini and its
conversions kjv-llama-hybrid16, -hybrid64, -hybrid64-self), if present:
    kjv-<variant>.tokens.npy ('<f8') [32], kjv-<variant>.logits.npy ('<f4') [32, V]

Window / hybrid models (HYBRID_MODELS: sliding-window softmax and the hybrid
softmax-window + decayed-linear-tail attention, max_seq_len 16) have the same
files, the stream running 100 tokens past max_seq_len; `--only hybrid` writes
just these and leaves every other golden file alone.

All logits are computed in float64 from the weights as stored (i.e. after the
F16/BF16 rounding), then cast to float32.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import model as M  # noqa: E402

ROOT = os.path.dirname(HERE)
DATA = os.path.join(ROOT, "tests", "data")

T_TINY = 24
T_STREAM = 100
T_KJV = 32
# includes non-ASCII UTF-8 bytes (0xC3 0xA9 = "é", 0xE2 0x88 0x91 = "∑")
TINY_TEXT = "In the café ∑ beginning"  # 24 bytes in UTF-8
STREAM_TEXT = ("The quick brown fox jumps over the lazy dog. "
               "Pack my box with five dozen liquor jugs! 0123456789 "
               "\t\xff\x00 sphinx of black quartz, judge my vow.")
KJV_PROMPT = "In the beginning God created the heaven and the earth."


def tiny_tokens() -> np.ndarray:
    b = TINY_TEXT.encode("utf-8")[:T_TINY]
    assert len(b) == T_TINY
    return np.frombuffer(b, dtype=np.uint8).astype("<f8")


def stream_tokens() -> np.ndarray:
    b = STREAM_TEXT.encode("latin-1")[:T_STREAM]
    assert len(b) == T_STREAM, len(b)
    return np.frombuffer(b, dtype=np.uint8).astype("<f8")


def kjv_tokens() -> np.ndarray:
    b = KJV_PROMPT.encode("utf-8")[:T_KJV]
    assert len(b) == T_KJV
    return np.frombuffer(b, dtype=np.uint8).astype("<f8")


# name, config overrides, storage dtype, seed
TINY_BASE = dict(vocab_size=256, d_model=32, n_heads=4, n_layers=2, d_ff=64, max_seq_len=64)
TINY_MODELS = [
    ("tiny-linear-pre-ln-gelu-sincos",
     dict(attention="linear", norm="layernorm", norm_position="pre", ffn="gelu",
          positions="sincos"), "F32", 1),
    ("tiny-softmax-pre-ln-gelu-sincos",
     dict(attention="softmax", norm="layernorm", norm_position="pre", ffn="gelu",
          positions="sincos"), "F32", 2),
    ("tiny-softmax-post-rms-relu-learned",
     dict(attention="softmax", norm="rmsnorm", norm_position="post", ffn="relu",
          positions="learned"), "F32", 3),
    ("tiny-linear-post-rms-relu-learned",
     dict(attention="linear", norm="rmsnorm", norm_position="post", ffn="relu",
          positions="learned"), "F32", 4),
    ("tiny-linear-pre-rms-gelu-none-tied-f16",
     dict(attention="linear", norm="rmsnorm", norm_position="pre", ffn="gelu",
          positions="none", tie_embeddings=True), "F16", 5),
    ("tiny-softmax-pre-rms-relu-none-tied-bf16",
     dict(attention="softmax", norm="rmsnorm", norm_position="pre", ffn="relu",
          positions="none", tie_embeddings=True), "BF16", 6),
    ("tiny-softmax-post-ln-gelu-sincos-tied",
     dict(attention="softmax", norm="layernorm", norm_position="post", ffn="gelu",
          positions="sincos", tie_embeddings=True), "F32", 7),
    ("tiny-linear-post-ln-relu-sincos",
     dict(attention="linear", norm="layernorm", norm_position="post", ffn="relu",
          positions="sincos"), "F32", 8),
    ("tiny-linear-pre-ln-relu-learned-eps1e-3",
     dict(attention="linear", norm="layernorm", norm_position="pre", ffn="relu",
          positions="learned", eps=1e-3), "F32", 9),
    # decayed linear attention: a short, a medium, a long horizon and none
    ("tiny-linear-pre-rms-gelu-none-decay",
     dict(attention="linear", norm="rmsnorm", norm_position="pre", ffn="gelu",
          positions="none", decay="0.5,0.875,0.99,1"), "F32", 10),
    ("tiny-linear-post-ln-relu-sincos-retnet-f16",
     dict(attention="linear", norm="layernorm", norm_position="post", ffn="relu",
          positions="sincos", decay="retnet"), "F16", 11),
    # the llama family (issue 13): rope (both pairings), grouped-query attention,
    # swiglu, no biases.  The two "llama" models have exactly llama2.c's
    # architecture (rmsnorm 1e-5, rope interleaved theta 10000, swiglu, no
    # bias): tests/test_llama2c.c writes their weights as llama2.c checkpoints.
    ("tiny-softmax-llama-gqa",
     dict(attention="softmax", norm="rmsnorm", norm_position="pre", ffn="swiglu",
          positions="rope", bias=False, n_kv_heads=2), "F32", 12),
    ("tiny-linear-llama-gqa-tied",
     dict(attention="linear", norm="rmsnorm", norm_position="pre", ffn="swiglu",
          positions="rope", bias=False, n_kv_heads=2, tie_embeddings=True), "F32", 13),
    ("tiny-softmax-rope-half-ln-bias-mqa",
     dict(attention="softmax", norm="layernorm", norm_position="pre", ffn="gelu",
          positions="rope", rope_pairing="half", rope_theta=500.0, n_kv_heads=1), "F32", 14),
    ("tiny-linear-rope-half-ln-nobias-swiglu",
     dict(attention="linear", norm="layernorm", norm_position="pre", ffn="swiglu",
          positions="rope", rope_pairing="half", bias=False), "F32", 15),
    # grouped k/v heads with decays: the engine repeats each k/v head per query head
    # (a state per query head), where the undecayed ones share one state per k/v head
    ("tiny-linear-rope-gqa-retnet",
     dict(attention="linear", norm="rmsnorm", norm_position="pre", ffn="swiglu",
          positions="rope", bias=False, n_kv_heads=2, decay="retnet"), "F32", 16),
]


# window / hybrid attention (constant-memory softmax variants); max_seq_len 16
# so that the 100-token stream runs far past it
HYBRID_BASE = dict(TINY_BASE, max_seq_len=16)
_LLAMA = dict(norm="rmsnorm", norm_position="pre", ffn="swiglu", bias=False)
HYBRID_MODELS = [
    ("tiny-window-rope-gqa",
     dict(attention="softmax", window=5, positions="rope", n_kv_heads=2, **_LLAMA), "F32", 31),
    ("tiny-hybrid-rope-gqa",
     dict(attention="hybrid", window=4, feature_dim=0, decay="0.6,0.8,0.9,0.97",
          positions="rope", n_kv_heads=2, **_LLAMA), "F32", 32),
    ("tiny-hybrid-fmap-rope-gqa",
     dict(attention="hybrid", window=3, feature_dim=16, decay="0.7,0.85,0.95,0.99",
          positions="rope", n_kv_heads=2, **_LLAMA), "F32", 33),
    ("tiny-hybrid-fmap-f16",
     dict(attention="hybrid", window=6, feature_dim=8, positions="none", **_LLAMA), "F16", 34),
]


def init_hybrid(model: M.LinAttnLM, seed: int) -> None:
    """init_tiny, then non-trivial hybrid parameters: lin_scale around -log(F or dh)
    (so the tail and the window weigh alike), feature maps = the linearizer's init
    plus noise (a transposed or mis-indexed map shows)."""
    init_tiny(model, seed)
    g = torch.Generator().manual_seed(1000 + seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("lin_scale"):
                fd = model.cfg.feature_dim or model.cfg.head_dim
                p.copy_(-np.log(fd) + 0.5 * torch.randn(p.shape, generator=g))
            elif name.endswith("_phi"):
                base = M._phi_init(p.shape[0], p.shape[1], p.shape[2]).to(p.dtype)
                p.copy_(base + 0.3 * torch.randn(p.shape, generator=g))


def init_tiny(model: M.LinAttnLM, seed: int) -> None:
    """Random init scaled so that activations are O(1) (not a trained model)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.startswith("tok_emb") or name.startswith("pos_emb"):
                p.copy_(torch.randn(p.shape, generator=g) * 0.5)
            elif "norm" in name and name.endswith(".weight"):
                p.copy_(1.0 + 0.1 * torch.randn(p.shape, generator=g))
            elif name.endswith(".bias"):
                p.copy_(0.1 * torch.randn(p.shape, generator=g))
            else:
                p.copy_(0.2 * torch.randn(p.shape, generator=g))


def golden_logits(model64: M.LinAttnLM, tokens: np.ndarray) -> np.ndarray:
    x = torch.from_numpy(tokens.astype(np.int64))[None]
    with torch.no_grad():
        lg = model64(x)[0]
    assert lg.dtype == torch.float64
    return lg.numpy().astype("<f4")


def write_npy(path: str, arr: np.ndarray) -> None:
    with open(path, "wb") as f:
        np.lib.format.write_array(f, arr, version=(1, 0), allow_pickle=False)


# --------------------------------------------------------------------------
# self-checks of the reference maths (float64)
# --------------------------------------------------------------------------

def self_check(verbose: bool = True) -> None:
    torch.manual_seed(0)
    dt = torch.float64
    # 1. linear attention: chunked == cumsum == naive per-token loop
    B, H, T, dh = 2, 3, 37, 5
    q, k, v = (torch.randn(B, H, T, dh, dtype=dt) for _ in range(3))
    for eps in (1e-6, 1e-3):
        ref = M.causal_linear_attention_naive(q, k, v, eps)
        cs = M.causal_linear_attention_cumsum(q, k, v, eps)
        for chunk in (1, 4, 16, 64):
            ch, _ = M.causal_linear_attention(q, k, v, eps, chunk)
            err = (ch - ref).abs().max().item()
            assert err < 1e-12, ("chunked", chunk, err)
        err = (cs - ref).abs().max().item()
        assert err < 1e-12, ("cumsum", err)
        # state carried across calls == one call
        a, st = M.causal_linear_attention(q[:, :, :20], k[:, :, :20], v[:, :, :20], eps, 8)
        b, _ = M.causal_linear_attention(q[:, :, 20:], k[:, :, 20:], v[:, :, 20:], eps, 8, st)
        err = (torch.cat([a, b], 2) - ref).abs().max().item()
        assert err < 1e-12, ("state", err)
    # decayed: chunked == naive recurrence, state carried, d_v != d_k
    g = [0.5, 0.9, 1.0]
    vv = torch.randn(B, H, T, dh + 2, dtype=dt)
    ref = M.causal_linear_attention_naive(q, k, vv, 1e-6, g)
    for chunk in (1, 4, 16, 64):
        ch, _ = M.causal_linear_attention(q, k, vv, 1e-6, chunk, None, g)
        assert (ch - ref).abs().max().item() < 1e-12, ("decay chunked", chunk)
    a, st = M.causal_linear_attention(q[:, :, :20], k[:, :, :20], vv[:, :, :20], 1e-6, 8, None, g)
    b, _ = M.causal_linear_attention(q[:, :, 20:], k[:, :, 20:], vv[:, :, 20:], 1e-6, 8, st, g)
    assert (torch.cat([a, b], 2) - ref).abs().max().item() < 1e-12, "decay state"
    # ... and the NumPy operator reference agrees with both
    npref = numpy_decayed_attention(q.numpy(), k.numpy(), vv.numpy(), np.array(g),
                                    np.full(B, T), 1e-6)
    assert np.abs(npref - ref.numpy()).max() < 1e-12, "numpy decayed reference"
    # first token of linear attention: phi(q).phi(k) v / (phi(q).phi(k) + eps) ~ v
    out, _ = M.causal_linear_attention(q[:, :, :1], k[:, :, :1], v[:, :, :1], 0.0)
    assert (out - v[:, :, :1]).abs().max().item() < 1e-12
    # 2. softmax attention: single key returns v; matches a naive loop
    out, _ = M.causal_softmax_attention(q[:, :, :1], k[:, :, :1], v[:, :, :1])
    assert (out - v[:, :, :1]).abs().max().item() < 1e-14
    out, _ = M.causal_softmax_attention(q, k, v)
    naive = torch.empty_like(v)
    for t in range(T):
        s = (q[:, :, t:t + 1] @ k[:, :, :t + 1].transpose(-1, -2)) / dh ** 0.5
        naive[:, :, t:t + 1] = torch.softmax(s, -1) @ v[:, :, :t + 1]
    assert (out - naive).abs().max().item() < 1e-12
    # KV cache == one call
    a, st = M.causal_softmax_attention(q[:, :, :20], k[:, :, :20], v[:, :, :20])
    b, _ = M.causal_softmax_attention(q[:, :, 20:], k[:, :, 20:], v[:, :, 20:], st)
    assert (torch.cat([a, b], 2) - out).abs().max().item() < 1e-12
    # 3. sincos: position 0 is [0,1,0,1,...]; a spot value
    pe = M.sincos_table(10, 8, dtype=dt)
    assert torch.equal(pe[0], torch.tensor([0., 1.] * 4, dtype=dt))
    assert abs(pe[3, 2].item() - np.sin(3 / 10000 ** (2 / 8))) < 1e-15
    assert abs(pe[3, 5].item() - np.cos(3 / 10000 ** (4 / 8))) < 1e-15
    # 4. norms, gelu
    x = torch.randn(4, 16, dtype=dt)
    ln = torch.nn.LayerNorm(16, eps=1e-5).to(dt)
    m, var = x.mean(-1, keepdim=True), x.var(-1, unbiased=False, keepdim=True)
    assert (ln(x) - (x - m) / torch.sqrt(var + 1e-5)).abs().max().item() < 1e-12
    rn = M.RMSNorm(16).to(dt)
    assert (rn(x) - x / torch.sqrt((x * x).mean(-1, keepdim=True) + 1e-5)).abs().max() < 1e-12
    g = M.gelu_tanh(x)
    assert (g - torch.nn.functional.gelu(x, approximate="tanh")).abs().max().item() < 1e-12
    # 5. whole models: full forward == token-by-token incremental forward,
    #    chunk size does not matter, safetensors round trip
    for name, cfg, _, seed, init in all_tiny():
        mdl = M.LinAttnLM(cfg)
        init(mdl, seed)
        mdl = mdl.to(dt).eval()
        toks = torch.from_numpy(tiny_tokens().astype(np.int64))[None]
        with torch.no_grad():
            full = mdl(toks)
            full1 = mdl(toks, chunk=1)
            assert (full - full1).abs().max().item() < 1e-10
            states, rows = None, []
            for t in range(toks.shape[1]):
                lg, states = mdl(toks[:, t:t + 1], t, states, return_states=True)
                rows.append(lg)
            inc = torch.cat(rows, 1)
        err = (inc - full).abs().max().item()
        assert err < 1e-10, (name, err)
        if cfg.attention == "hybrid" or cfg.window > 0:
            # every form, and prefill-then-decode (in blocks) == one shot, past max_seq_len
            st = torch.from_numpy(stream_tokens().astype(np.int64))[None]
            with torch.no_grad():
                M.set_hybrid_form(mdl, "quadratic")
                ref = mdl(st)
                M.set_hybrid_form(mdl, "chunked")
                for ch in (1, 4, 64):
                    assert (mdl(st, chunk=ch) - ref).abs().max().item() < 1e-10, (name, ch)
                for form in ("quadratic", "chunked"):
                    M.set_hybrid_form(mdl, form)
                    states, rows, p0 = None, [], 0
                    for blk in (7, 1, 1, 30, 1, 61):
                        lg, states = mdl(st[:, p0:p0 + blk], p0, states, return_states=True)
                        rows.append(lg)
                        p0 += blk
                    assert (torch.cat(rows, 1) - ref).abs().max().item() < 1e-10, (name, form)
                M.set_hybrid_form(mdl, "auto")
    self_check_hybrid()
    if verbose:
        print("self-check: linear attention chunked == cumsum == naive loop, "
              "softmax single key == v, incremental == full forward: OK")


def self_check_hybrid() -> None:
    """Window softmax and hybrid attention: quadratic == chunked == per-token loop
    from the definition == recurrent ring+S,z loop == state carried across calls;
    W >= T is plain causal softmax; lam = -inf leaves the windowed softmax."""
    torch.manual_seed(1)
    dt = torch.float64
    B, H, T, dh, Fd = 2, 3, 41, 4, 6
    q, k, v = (torch.randn(B, H, T, dh, dtype=dt) for _ in range(3))
    v = torch.cat([v, torch.randn(B, H, T, 2, dtype=dt)], -1)          # d_v != d_k
    wq, wk = torch.randn(H, Fd, dh, dtype=dt), torch.randn(H, Fd, dh, dtype=dt)
    full_sm, _ = M.causal_softmax_attention(q, k, v)
    for W in (1, 2, 5, 16):
        # windowed softmax: a naive loop, and a KV cache carried in blocks
        ws, _ = M.causal_softmax_attention(q, k, v, None, W)
        for t in range(T):
            lo = max(0, t - W + 1)
            sc = (q[:, :, t:t + 1] @ k[:, :, lo:t + 1].transpose(-1, -2)) / dh ** 0.5
            ref = torch.softmax(sc, -1) @ v[:, :, lo:t + 1]
            assert (ws[:, :, t:t + 1] - ref).abs().max().item() < 1e-12, ("window", W, t)
        past, rows, p0 = None, [], 0
        for blk in (3, 1, 17, 1, 19):
            o, past = M.causal_softmax_attention(q[:, :, p0:p0 + blk], k[:, :, p0:p0 + blk],
                                                 v[:, :, p0:p0 + blk], past, W)
            assert past[0].shape[2] <= W
            rows.append(o)
            p0 += blk
        assert (torch.cat(rows, 2) - ws).abs().max().item() < 1e-12, ("window cache", W)
        for wqq, wkk in ((None, None), (wq, wk)):
            fq, fk = M.hybrid_features(q, wqq), M.hybrid_features(k, wkk)
            lam = torch.randn(H, dtype=dt)
            for g in (None, [0.5, 0.9, 1.0]):
                lg = None if g is None else torch.log(torch.tensor(g, dtype=dt))
                a = M.hybrid_attention_quadratic(q, k, v, fq, fk, lam, W, lg)
                errs = [(a - M.hybrid_attention_naive(q, k, v, fq, fk, lam, W, g)).abs().max(),
                        (a - M.hybrid_attention_recurrent(q, k, v, fq, fk, lam, W, g)).abs().max()]
                for ch in (1, 4, 16, 64):
                    c = M.hybrid_attention_chunked(q, k, v, fq, fk, lam, W, lg, None, ch)
                    errs.append((c - a).abs().max())
                for form in ("quadratic", "chunked"):   # state carried across blocks
                    past, rows, p0 = None, [], 0
                    for blk in (2, 1, 13, 1, 24):
                        P = 0 if past is None else min(W, p0)
                        ks = slice(p0 - P, p0 + blk)
                        qs = slice(p0, p0 + blk)
                        rows.append(M.hybrid_attention(q[:, :, qs], k[:, :, ks], v[:, :, ks],
                                                       fq[:, :, qs], fk[:, :, ks], lam, W, lg,
                                                       past, 8, form))
                        past = M.hybrid_state(fk[:, :, ks], v[:, :, ks], W, lg, past, blk)
                        p0 += blk
                    errs.append((torch.cat(rows, 2) - a).abs().max())
                err = max(float(e) for e in errs)
                assert err < 1e-12, ("hybrid", W, wqq is None, g, err)
                # no tail: lam = -inf is the windowed softmax
                ninf = torch.full((H,), float("-inf"), dtype=dt)
                for form in ("quadratic", "chunked"):
                    o = M.hybrid_attention(q, k, v, fq, fk, ninf, W, lg, None, 8, form)
                    assert (o - ws).abs().max().item() < 1e-12, ("lam=-inf", W, form)
            # W >= T: plain causal softmax
            for form in ("quadratic", "chunked"):
                o = M.hybrid_attention(q, k, v, fq, fk, torch.zeros(H, dtype=dt), T, None,
                                       None, 8, form)
                assert (o - full_sm).abs().max().item() < 1e-12, ("W>=T", form)
    # float32 chunked vs float64 quadratic at a training length (the linearizer's path)
    Tl, W = 300, 16
    q, k, v = (torch.randn(1, 2, Tl, 8, dtype=dt) for _ in range(3))
    fq, fk = M.hybrid_features(q, None), M.hybrid_features(k, None)
    lam, lg = torch.tensor([-2.0, -1.0], dtype=dt), torch.log(torch.tensor([0.9, 0.99], dtype=dt))
    a = M.hybrid_attention_quadratic(q, k, v, fq, fk, lam, W, lg)
    c = M.hybrid_attention_chunked(q, k, v, fq, fk, lam, W, lg, None, 64)
    assert (a - c).abs().max().item() < 1e-12
    c32 = M.hybrid_attention_chunked(*(t.float() for t in (q, k, v, fq, fk, lam)), W,
                                     lg.float(), None, 64)
    assert (a - c32.double()).abs().max().item() < 1e-4
    print("self-check: window softmax == naive loop and KV ring; hybrid quadratic == chunked "
          "== per-token definition == ring+S,z recurrence == state across blocks; "
          "W >= T == softmax; lam = -inf == window softmax: OK")


def numpy_decayed_attention(q, k, v, decay, lengths, eps):
    """Causal decayed linear attention in float64 NumPy, written from the
    operator's definition, one query at a time: q (B,H,Lq,dk), k (B,H,Lk,dk),
    v (B,H,Lk,dv), decay (H,), lengths (B,) valid keys.  Query i sees keys
    j <= i + Lk - Lq and j < length, each weighted decay^(i + Lk - Lq - j)
    (a padded key adds nothing, but time still passes); no visible key: 0."""
    B, H, Lq, dk = q.shape
    Lk, dv = k.shape[2], v.shape[3]
    off = Lk - Lq
    out = np.zeros((B, H, Lq, dv))
    phi = lambda x: np.where(x > 0, x + 1.0, np.exp(np.minimum(x, 0.0)))  # noqa: E731
    for b in range(B):
        for h in range(H):
            fk = phi(k[b, h].astype(np.float64))
            for i in range(Lq):
                end = min(int(lengths[b]), i + off + 1)
                if end <= 0:
                    continue
                fq = phi(q[b, h, i].astype(np.float64))
                j = np.arange(end)
                w = (fk[:end] @ fq) * float(decay[h]) ** (i + off - j).astype(np.float64)
                out[b, h, i] = (w @ v[b, h, :end].astype(np.float64)) / (w.sum() + eps)
    return out


# name, B, H, Lq, Lk, dk, dv, lengths, decays, seed
DECAY_OPS = [
    ("decay-op-odd", 2, 3, 37, 37, 5, 7, [37, 20], [0.5, 0.9, 0.999], 21),
    ("decay-op-fewer-queries", 2, 2, 20, 90, 9, 4, [90, 61], [0.75, 0.96875], 22),
    ("decay-op-more-queries", 1, 2, 90, 20, 4, 9, [20], [0.125, 1.0], 23),
    ("decay-op-long", 1, 4, 300, 300, 16, 12, [300], [0.5, 0.875, 0.97, 0.996], 24),
]


def make_decay_ops(out_dir: str) -> None:
    """Operator goldens for decayed causal linear attention (float64 NumPy):
    NAME.{q,k,v}.npy ('<f4' inputs), NAME.decay.npy ('<f4' [H]),
    NAME.lengths.npy ('<f8' [B]), NAME.out.npy ('<f8', the reference)."""
    for name, B, H, Lq, Lk, dk, dv, lengths, decay, seed in DECAY_OPS:
        rng = np.random.default_rng(seed)
        q = rng.standard_normal((B, H, Lq, dk)).astype("<f4")
        k = rng.standard_normal((B, H, Lk, dk)).astype("<f4")
        v = rng.standard_normal((B, H, Lk, dv)).astype("<f4")
        g = np.array(decay, dtype="<f4")
        ln = np.array(lengths, dtype="<f8")
        out = numpy_decayed_attention(q, k, v, g.astype(np.float64), ln, 1e-6)
        base = os.path.join(out_dir, name)
        for suffix, arr in (("q", q), ("k", k), ("v", v), ("decay", g), ("lengths", ln),
                            ("out", out.astype("<f8"))):
            write_npy(f"{base}.{suffix}.npy", arr)
        print(f"{name:44s} B={B} H={H} Lq={Lq} Lk={Lk} dk={dk} dv={dv} out std {out.std():.3f}")


def numpy_forward(ini_path: str, tokens: np.ndarray) -> np.ndarray:
    """Independent float64 NumPy implementation written from the spec, token by
    token (recurrent state / KV cache), reading the .ini and .safetensors
    directly.  Shares no model code with model.py (only the file readers)."""
    cfg = M.Config.from_ini(ini_path)
    w, _ = M.read_safetensors(cfg.weights)
    w = {k: v.astype(np.float64) for k, v in w.items()}
    d, H = cfg.d_model, cfg.n_heads
    dh = d // H
    G = cfg.kv_heads
    gam = cfg.decays() or [1.0] * H

    def norm(x, pfx):
        b = w.get(pfx + ".bias", 0.0)
        if cfg.norm == "layernorm":
            mu = x.mean()
            var = ((x - mu) ** 2).mean()
            return (x - mu) / np.sqrt(var + 1e-5) * w[pfx + ".weight"] + b
        return x / np.sqrt((x * x).mean() + 1e-5) * w[pfx + ".weight"]

    def lin(x, pfx):
        return w[pfx + ".weight"] @ x + w.get(pfx + ".bias", 0.0)

    def rot(x, p, n):
        """rope on the n heads of x at position p, pair by pair as llama2.c's
        run.c does (interleaved) or rotate_half (half)."""
        x = x.copy()
        for hh in range(n):
            for i in range(dh // 2):
                ang = p * cfg.rope_theta ** (-2.0 * i / dh)
                a, b = (2 * i, 2 * i + 1) if cfg.rope_pairing == "interleaved" else (i, i + dh // 2)
                x0, x1 = x[hh * dh + a], x[hh * dh + b]
                x[hh * dh + a] = x0 * np.cos(ang) - x1 * np.sin(ang)
                x[hh * dh + b] = x0 * np.sin(ang) + x1 * np.cos(ang)
        return x

    def act(x):
        if cfg.ffn == "relu":
            return np.maximum(x, 0.0)
        if cfg.ffn == "swiglu":
            raise AssertionError("swiglu has its own path")
        return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))

    def elu1(x):
        return np.where(x > 0, x + 1.0, np.exp(x))

    W = cfg.window
    Fd = cfg.feature_dim or dh

    def fmap(x, wname, hh):
        """hybrid feature map of one head: elu(w[hh] @ x) + 1, or elu(x) + 1."""
        if cfg.feature_dim:
            return elu1(w[wname][hh] @ x)
        return elu1(x)

    S = [np.zeros((H, Fd, dh)) for _ in range(cfg.n_layers)]
    z = [np.zeros((H, Fd)) for _ in range(cfg.n_layers)]
    K = [[] for _ in range(cfg.n_layers)]
    V = [[] for _ in range(cfg.n_layers)]
    out = []
    for p, tok in enumerate(tokens.astype(np.int64)):
        x = w["tok_emb.weight"][tok].copy()
        if cfg.positions == "sincos":
            i = np.arange(d // 2)
            ang = p / 10000.0 ** (2 * i / d)
            pe = np.empty(d)
            pe[0::2], pe[1::2] = np.sin(ang), np.cos(ang)
            x = x + pe
        elif cfg.positions == "learned":
            x = x + w["pos_emb.weight"][p]
        for l in range(cfg.n_layers):
            pf = f"layers.{l}."

            def attn(h):
                q, k, v = lin(h, pf + "attn.q"), lin(h, pf + "attn.k"), lin(h, pf + "attn.v")
                if cfg.positions == "rope":
                    q, k = rot(q, p, H), rot(k, p, G)
                heads = []
                K[l].append(k)
                V[l].append(v)
                for hh in range(H):
                    sl = slice(hh * dh, (hh + 1) * dh)
                    g = hh // (H // G)  # its k/v head
                    sk = slice(g * dh, (g + 1) * dh)
                    if cfg.attention == "linear":
                        fq, fk = elu1(q[sl]), elu1(k[sk])
                        S[l][hh] = gam[hh] * S[l][hh] + np.outer(fk, v[sk])
                        z[l][hh] = gam[hh] * z[l][hh] + fk
                        heads.append(fq @ S[l][hh] / (fq @ z[l][hh] + cfg.eps))
                    elif cfg.attention == "hybrid":
                        # the key W tokens old leaves the ring of W keys into S, z
                        gm = gam[hh]
                        S[l][hh] *= gm
                        z[l][hh] *= gm
                        if p - W >= 0:
                            old = K[l][p - W][sk]
                            fk = fmap(old, pf + "attn.wk_phi", g)
                            S[l][hh] += gm ** W * np.outer(fk, V[l][p - W][sk])
                            z[l][hh] += gm ** W * fk
                        lo = max(0, p - W + 1)
                        ks = np.stack([kk[sk] for kk in K[l][lo:]])
                        vs = np.stack([vv[sk] for vv in V[l][lo:]])
                        sc = ks @ q[sl] / np.sqrt(dh)
                        c = sc.max()
                        e = np.exp(sc - c)
                        fq = fmap(q[sl], pf + "attn.wq_phi", hh)
                        st = np.exp(w[pf + "attn.lin_scale"][hh] - c)
                        num = e @ vs + st * (fq @ S[l][hh])
                        den = e.sum() + st * (fq @ z[l][hh])
                        heads.append(num / den)
                    else:
                        lo = max(0, p - W + 1) if W > 0 else 0
                        ks = np.stack([kk[sk] for kk in K[l][lo:]])
                        vs = np.stack([vv[sk] for vv in V[l][lo:]])
                        sc = ks @ q[sl] / np.sqrt(dh)
                        e = np.exp(sc - sc.max())
                        heads.append((e / e.sum()) @ vs)
                return lin(np.concatenate(heads), pf + "attn.o")

            def ffn(h):
                if cfg.ffn == "swiglu":
                    gt = lin(h, pf + "ffn.gate")
                    return lin(gt / (1 + np.exp(-gt)) * lin(h, pf + "ffn.up"), pf + "ffn.down")
                return lin(act(lin(h, pf + "ffn.up")), pf + "ffn.down")

            if cfg.norm_position == "pre":
                x = x + attn(norm(x, pf + "norm1"))
                x = x + ffn(norm(x, pf + "norm2"))
            else:
                x = norm(x + attn(x), pf + "norm1")
                x = norm(x + ffn(x), pf + "norm2")
        if cfg.norm_position == "pre":
            x = norm(x, "norm_f")
        head = w["tok_emb.weight"] if cfg.tie_embeddings else w["lm_head.weight"]
        out.append(head @ x)
    return np.stack(out)


def check_goldens(out_dir: str) -> None:
    """Re-derive every tiny golden with numpy_forward and compare."""
    worst = 0.0
    for name, *_ in all_tiny():
        base = os.path.join(out_dir, name)
        for tk, lg in ((".tokens.npy", ".logits.npy"),
                       (".stream_tokens.npy", ".stream_logits.npy")):
            if not os.path.exists(base + tk):
                continue
            toks, gold = np.load(base + tk), np.load(base + lg)
            ref = numpy_forward(base + ".ini", toks)
            err = np.abs(ref - gold.astype(np.float64)).max() / max(1.0, np.abs(ref).max())
            assert err < 1e-6, (name, tk, err)
            worst = max(worst, err)
    print(f"goldens re-derived by an independent NumPy per-token forward: "
          f"max rel. error {worst:.1e} (float32 rounding of the goldens): OK")


# --------------------------------------------------------------------------
# generation
# --------------------------------------------------------------------------

def all_tiny():
    """(name, Config, dtype, seed, init) of every tiny golden model."""
    out = [(n, M.Config(**TINY_BASE, **o), dt, sd, init_tiny) for n, o, dt, sd in TINY_MODELS]
    out += [(n, M.Config(**HYBRID_BASE, **o), dt, sd, init_hybrid)
            for n, o, dt, sd in HYBRID_MODELS]
    return out


def has_stream(cfg: M.Config) -> bool:
    """Models that decode past max_seq_len: linear (not learned positions), window, hybrid."""
    if cfg.positions == "learned":
        return False
    return cfg.attention in ("linear", "hybrid") or cfg.window > 0


def make_tiny(out_dir: str, only: str = "all") -> None:
    os.makedirs(out_dir, exist_ok=True)
    toks = tiny_tokens()
    stoks = stream_tokens()
    hybrid_names = {m[0] for m in HYBRID_MODELS}
    for name, cfg, dtype, seed, init in all_tiny():
        if only == "hybrid" and name not in hybrid_names:
            continue
        mdl = M.LinAttnLM(cfg)
        init(mdl, seed)
        st_path = os.path.join(out_dir, name + ".safetensors")
        M.save_safetensors(mdl, st_path, dtype, {"generator": "tools/reference.py",
                                                 "seed": str(seed)})
        ini_path = os.path.join(out_dir, name + ".ini")
        with open(ini_path, "w") as f:
            f.write(cfg.to_ini_text(
                weights=name + ".safetensors",
                header=f"golden test model generated by tools/reference.py (seed {seed}, "
                       f"storage {dtype}); do not edit"))
        # reload exactly as the engine would: from the .ini, rounded weights, float64
        m64 = M.from_ini(ini_path, torch.float64)
        M.set_hybrid_form(m64, "quadratic")   # the goldens from the plain masked form
        assert dataclasses.replace(m64.cfg, weights="") == cfg
        lg = golden_logits(m64, toks)
        write_npy(os.path.join(out_dir, name + ".tokens.npy"), toks)
        write_npy(os.path.join(out_dir, name + ".logits.npy"), lg)
        extra = ""
        if has_stream(cfg):
            slg = golden_logits(m64, stoks)
            assert np.allclose(slg[:T_TINY], golden_logits(m64, stoks[:T_TINY]), atol=1e-6)
            write_npy(os.path.join(out_dir, name + ".stream_tokens.npy"), stoks)
            write_npy(os.path.join(out_dir, name + ".stream_logits.npy"), slg)
            extra = f", stream T={len(stoks)}"
            if cfg.decays() is not None:
                # for `linattn eval` where no npy reader runs (aarch64 under qemu):
                # the stream's bytes and their bits/byte from the float64 logits
                with torch.no_grad():
                    lg64 = m64(torch.from_numpy(stoks.astype(np.int64))[None])[0].numpy()
                lse = np.log(np.exp(lg64 - lg64.max(-1, keepdims=True)).sum(-1)) + lg64.max(-1)
                tgt = stoks.astype(np.int64)[1:]
                bpb = float((lse[:-1] - lg64[np.arange(len(tgt)), tgt]).mean() / np.log(2))
                with open(os.path.join(out_dir, name + ".stream.txt"), "wb") as f:
                    f.write(bytes(stoks.astype(np.uint8)))
                with open(os.path.join(out_dir, name + ".stream_bpb.txt"), "w") as f:
                    f.write(f"{bpb:.6f}\n")
                extra += f", stream {bpb:.4f} bits/byte"
        # how far rounding moved the logits (documentation only)
        m32 = mdl.to(torch.float64).eval()
        with torch.no_grad():
            lg_unrounded = m32(torch.from_numpy(toks.astype(np.int64))[None])[0].numpy()
        print(f"{name:44s} {dtype:4s} logits std {lg.std():.3f} max|.| {np.abs(lg).max():.2f}"
              f"  rounding shift {np.abs(lg - lg_unrounded).max():.2e}{extra}")
        if cfg.attention == "linear" and cfg.eps != 1e-6:
            m_alt = M.from_ini(ini_path, torch.float64)
            m_alt.cfg.eps = 1e-6
            alt = golden_logits(m_alt, toks)
            print(f"    eps {cfg.eps} vs 1e-6: max logit difference {np.abs(alt - lg).max():.2e}")


def make_kjv(out_dir: str) -> None:
    toks = kjv_tokens()
    for variant in ("softmax", "linear", "linear-plain", "llama", "llama-hybrid16",
                    "llama-hybrid64", "llama-hybrid64-self"):
        ini = os.path.join(ROOT, "configs", f"kjv-{variant}.ini")
        if not os.path.exists(ini):
            print(f"skip kjv-{variant}: {ini} not found")
            continue
        cfg = M.Config.from_ini(ini)
        if not os.path.exists(cfg.weights):
            print(f"skip kjv-{variant}: {cfg.weights} not found")
            continue
        m64 = M.from_ini(ini, torch.float64)
        lg = golden_logits(m64, toks)
        write_npy(os.path.join(out_dir, f"kjv-{variant}.tokens.npy"), toks)
        write_npy(os.path.join(out_dir, f"kjv-{variant}.logits.npy"), lg)
        ref = numpy_forward(ini, toks)
        err = np.abs(ref - lg.astype(np.float64)).max() / max(1.0, np.abs(ref).max())
        assert err < 1e-6, (variant, err)
        nxt = bytes(int(i) for i in lg.argmax(-1))
        print(f"kjv-{variant}: T={len(toks)} numpy cross-check rel. err {err:.1e}; "
              f"greedy next bytes {nxt!r}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=DATA, help="output folder (default tests/data)")
    ap.add_argument("--check", action="store_true", help="only run the self-checks")
    ap.add_argument("--no-kjv", action="store_true", help="skip the shipped-model goldens")
    ap.add_argument("--only", choices=["all", "hybrid", "kjv"], default="all",
                    help="hybrid: write only the window/hybrid tiny models (no other file); "
                         "kjv: only the shipped models' goldens")
    args = ap.parse_args()
    torch.set_num_threads(min(2, torch.get_num_threads()) if not os.environ.get("LINATTN_THREADS") else int(os.environ["LINATTN_THREADS"]))
    self_check()
    if args.check:
        return
    if args.only == "kjv":
        make_kjv(args.out)
        return
    make_tiny(args.out, args.only)
    check_goldens(args.out)
    if args.only == "hybrid":
        return
    make_decay_ops(args.out)
    if not args.no_kjv:
        make_kjv(args.out)


if __name__ == "__main__":
    main()
