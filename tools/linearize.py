#!/usr/bin/python3
"""Turn a pretrained softmax checkpoint into a constant-memory linattn model.

    /usr/bin/python3 tools/linearize.py configs/kjv-llama.ini --out kjv-llama-hybrid16 \\
        --attention hybrid --window 16 --feature-dim 128 --text /tmp/kjv.txt --minutes 30

Student kinds (--attention):
  hybrid   softmax over the last W keys + a decayed linear tail over older keys
           (new per-layer tensors: lin_scale, and wq_phi/wk_phi when --feature-dim > 0)
  linear   causal linear attention, phi = elu + 1 (optional --decay)
  window   sliding-window softmax of W keys (no new tensors)

Input (load_teacher): a linattn INI whose weights are our safetensors; a
llama2.c checkpoint (`model.bin`, or an INI with `weights = llama2c:PATH`);
a Hugging Face llama-family folder (config.json, *.safetensors), or an INI
with `weights = hf:DIR`, read by tools/hf_import.py with the engine's names
and checks. The student's INI names the teacher's tokenizer; a Hugging Face
tokenizer.json is run by the linattn program's `tokenize` (--sample-exe,
$LINATTN_EXE, build/linattn or PATH).

Data: --text FILE... tokenized with the model's tokenizer (bytes when
vocab_size is 256 and the INI names no tokenizer).  The last 5% of every file
is held out (as train.py's load_kjv does), so for /tmp/kjv.txt training sees
only the first 95% and never tests/data/kjv-heldout-64k.txt (checked).
Without --text the teacher writes its own training text: batched sampling
with a KV cache from '\\n' (byte models) or BOS, --temperature (1.0), up to
--sample-tokens or 10% of the budget; the sample is saved in the work dir and
a resumed run reuses it.

Stage 1, attention transfer (--stage1 of the budget, 20%): everything frozen
but the new parameters (feature maps, lin_scale, and the decays with
--learn-decay, gamma = sigmoid(logit)); each layer's hybrid output is fit by
MSE to the teacher's softmax attention output on the same q, k, v, teacher
forced (every layer's input comes from the teacher).

Stage 2, distillation of the whole model on KL(teacher || student) of the
next-token distributions, on windows of the teacher's context, half of the
batches at a random RoPE offset in [0, --pos-offset-max] (elu(x)+1 does not
commute with RoPE's rotations, so the linear tail must see large positions).
All parameters are trained, not low-rank adapters: the models this targets
are small (a few M parameters), so full AdamW state costs nothing, LoRA would
save little compute (the backward pass runs through every layer either way),
full fine-tuning recovers more of the teacher per minute of CPU, and the
result is a plain dense checkpoint the engine reads as is.

Budget: --minutes for both stages together (cosine LR per stage), bf16
autocast (--amp), AdamW; progress lines with elapsed, ETA, loss, tokens/s;
a checkpoint in the work dir (/tmp/linearize-NAME) every --ckpt-every
minutes that --resume continues from; a held-out curve every --eval-every
minutes; at the end bits/byte of teacher and student on the last 64 KiB of
KJV in fresh windows of the teacher's context (and the student as one
stream), models/NAME.safetensors (F16 by default) with every weight,
configs/NAME.ini, and a JSON summary.
"""

from __future__ import annotations

import argparse
import configparser
import dataclasses
import json
import math
import os
import struct
import sys
import time
from typing import Dict, List, Optional, Tuple

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import model as M  # noqa: E402

ROOT = os.path.dirname(HERE)
HELDOUT = os.path.join(ROOT, "tests", "data", "kjv-heldout-64k.txt")
PROMPT = "In the beginning God"


# --------------------------------------------------------------------------
# teachers: one loader per source, each -> (Config, {name: float32 tensor}, tokenizer)
# --------------------------------------------------------------------------

def load_teacher(path: str) -> Tuple[M.Config, Dict[str, torch.Tensor], Optional[str]]:
    """(Config, linattn-named float32 weights, tokenizer path or None = bytes)."""
    if os.path.isdir(path):
        return load_hf_folder(path)
    if path.endswith(".bin"):
        return load_llama2c(path)
    cp = configparser.ConfigParser(inline_comment_prefixes=(";", "#"),
                                   comment_prefixes=(";", "#"))
    with open(path, encoding="utf-8") as f:
        cp.read_file(f)
    sec = cp["model"]
    base = os.path.dirname(os.path.abspath(path))
    tok = tokenizer_spec(sec.get("tokenizer", ""), base)
    w = sec.get("weights", "").strip()
    if w.startswith("llama2c:"):
        p = w[len("llama2c:"):]
        cfg, sd, _ = load_llama2c(p if os.path.isabs(p) else os.path.join(base, p))
        return cfg, sd, tok
    if w.startswith("hf:"):
        p = w[len("hf:"):]
        cfg, sd, hf_tok = load_hf_folder(p if os.path.isabs(p) else os.path.join(base, p))
        return cfg, sd, tok or hf_tok
    cfg = M.Config.from_ini(path)
    m = M.load_safetensors(cfg.weights, cfg, torch.float32)
    return cfg, {k: v.detach().clone() for k, v in m.state_dict().items()}, tok


def load_llama2c(path: str) -> Tuple[M.Config, Dict[str, torch.Tensor], Optional[str]]:
    """llama2.c checkpoint: 7 int32 (dim, hidden_dim, n_layers, n_heads, n_kv_heads,
    vocab_size (negative: untied classifier), seq_len), then float32 token_embedding,
    rms_att, wq, wk, wv, wo, rms_ffn, w1, w2, w3, rms_final, freq_cis (skipped),
    [wcls].  RoPE interleaved pairs, theta 10000; w1 = gate, w3 = up, w2 = down."""
    with open(path, "rb") as f:
        data = f.read()
    dim, hid, nl, nh, nkv, vocab, seq = struct.unpack_from("<7i", data, 0)
    tied = vocab > 0
    V = abs(vocab)
    hd = dim // nh
    kvd = nkv * hd
    a = np.frombuffer(data, dtype="<f4", offset=28)
    pos = 0

    def take(*shape):
        nonlocal pos
        n = int(np.prod(shape))
        out = torch.from_numpy(a[pos:pos + n].reshape(shape).copy())
        pos += n
        return out

    emb = take(V, dim)
    rms_att = take(nl, dim)
    wq, wk, wv, wo = take(nl, dim, dim), take(nl, kvd, dim), take(nl, kvd, dim), take(nl, dim, dim)
    rms_ffn = take(nl, dim)
    w1, w2, w3 = take(nl, hid, dim), take(nl, dim, hid), take(nl, hid, dim)
    rms_f = take(dim)
    pos += seq * hd  # freq_cis_real, freq_cis_imag: seq * hd/2 each
    cfg = M.Config(vocab_size=V, d_model=dim, n_heads=nh, n_layers=nl, d_ff=hid,
                   attention="softmax", norm="rmsnorm", norm_position="pre", ffn="swiglu",
                   positions="rope", max_seq_len=seq, tie_embeddings=tied,
                   rope_theta=10000.0, rope_pairing="interleaved", bias=False,
                   n_kv_heads=0 if nkv == nh else nkv)
    sd = {"tok_emb.weight": emb, "norm_f.weight": rms_f}
    for i in range(nl):
        p = f"layers.{i}."
        sd.update({p + "attn.q.weight": wq[i], p + "attn.k.weight": wk[i],
                   p + "attn.v.weight": wv[i], p + "attn.o.weight": wo[i],
                   p + "norm1.weight": rms_att[i], p + "norm2.weight": rms_ffn[i],
                   p + "ffn.gate.weight": w1[i], p + "ffn.down.weight": w2[i],
                   p + "ffn.up.weight": w3[i]})
    if not tied:
        sd["lm_head.weight"] = take(V, dim)
    assert pos <= a.size, f"{path}: file too short for its header"
    tok = os.path.join(os.path.dirname(os.path.abspath(path)), "tokenizer.bin")
    return cfg, sd, "llama2c:" + tok if os.path.exists(tok) else None


def load_hf_folder(path: str) -> Tuple[M.Config, Dict[str, torch.Tensor], Optional[str]]:
    """A Hugging Face llama-family folder (config.json, *.safetensors, and
    tokenizer.json when there is one), read as tools/hf_import.py does: the
    same names, shape and checks as the engine's `weights = hf:DIR`."""
    import hf_import as HI
    try:
        keys, tensors, tok = HI.read_folder(path)
    except HI.ImportError_ as e:
        sys.exit(f"linearize: {e}")
    cfg = M.Config(**{k: v for k, v in keys.items()})
    sd = {k: torch.from_numpy(HI.as_f32(t)) for k, t in tensors.items()}
    return cfg, sd, tok


def tokenizer_spec(value: str, base: str) -> Optional[str]:
    """An INI's tokenizer value as a spec with an absolute path (None: bytes)."""
    v = value.strip()
    if v in ("", "bytes"):
        return None
    kind, sep, p = v.partition(":")
    if not sep or kind not in ("llama2c", "hf"):
        sys.exit(f"linearize: tokenizer {v!r}: expected bytes, llama2c:PATH or hf:PATH")
    return f"{kind}:{os.path.normpath(os.path.join(base, p))}"


def engine_exe(args) -> str:
    """The linattn program: --sample-exe, $LINATTN_EXE, build/linattn or build-test/linattn
    here, or linattn on PATH."""
    import shutil
    for c in (getattr(args, "sample_exe", None), os.environ.get("LINATTN_EXE"),
              os.path.join(ROOT, "build", "linattn"), os.path.join(ROOT, "build-test", "linattn"),
              shutil.which("linattn")):
        if c and os.access(c, os.X_OK):
            return c
    sys.exit("linearize: this tokenizer is run by the linattn program: build it "
             "(scripts/build.sh) or name it with --sample-exe")


ENGINE = None  # engine_exe(args), set by main for tokenize()


def tokenize(text: bytes, cfg: M.Config, tokenizer: Optional[str]) -> np.ndarray:
    """Token ids of text with the model's tokenizer (bytes when there is none)."""
    if tokenizer is None:
        assert cfg.vocab_size >= 256, "byte-level data needs vocab_size >= 256"
        return np.frombuffer(text, dtype=np.uint8).astype(np.int64)
    if tokenizer.startswith("llama2c:"):  # slow reference encoder, line by line (stories)
        import llama2c_encode as LE
        _, pieces, scores = LE.read_tokenizer(tokenizer[len("llama2c:"):])
        ids = []
        for line in text.decode("utf-8", "replace").split("\n"):
            ids += LE.encode(pieces, scores, line, False)
        return np.array(ids, dtype=np.int64)
    # anything else the engine loads (hf:...): its own encoder, the whole text, no bos
    import subprocess
    import tempfile
    with tempfile.NamedTemporaryFile(suffix=".txt") as f:
        f.write(text)
        f.flush()
        r = subprocess.run([ENGINE, "tokenize", "--tokenizer", tokenizer, "--no-bos", "-f",
                            f.name], stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False)
    if r.returncode != 0:
        sys.exit(f"linearize: {r.stderr.decode(errors='replace').strip()}")
    return np.array(r.stdout.split(), dtype=np.int64)


# --------------------------------------------------------------------------
# data
# --------------------------------------------------------------------------

@torch.no_grad()
def sample_from_teacher(teacher: M.LinAttnLM, n_tokens: int, max_seconds: float, ctx: int,
                        batch: int, temperature: float, start: int, seed: int) -> np.ndarray:
    """Streams of ctx tokens, batch at a time, each from `start`, KV cache."""
    g = torch.Generator().manual_seed(seed)
    out, t0, got = [], time.time(), 0
    while got < n_tokens and time.time() - t0 < max_seconds:
        x = torch.full((batch, 1), start, dtype=torch.long)
        rows = [x]
        logits, states = teacher(x, 0, None, return_states=True)
        for p in range(1, ctx):
            probs = torch.softmax(logits[:, -1].float() / temperature, -1)
            nxt = torch.multinomial(probs, 1, generator=g)
            rows.append(nxt)
            if p == ctx - 1 or time.time() - t0 > max_seconds:
                break
            logits, states = teacher(nxt, p, states, return_states=True)
        s = torch.cat(rows, 1).numpy().reshape(-1)
        out.append(s)
        got += s.size
        print(f"  sampled {got} tokens ({time.time() - t0:.0f}s, "
              f"{got / (time.time() - t0):.0f} tok/s)", flush=True)
    return np.concatenate(out)


def sample_with_engine(exe: str, config: str, n_tokens: int, max_seconds: float, ctx: int,
                       temperature: float, seed: int, threads: int, cfg: M.Config,
                       tokenizer: Optional[str]) -> np.ndarray:
    """The same streams as sample_from_teacher (ctx tokens from '\\n' or BOS, pure
    sampling at `temperature`), written by the C engine's `generate`, one seed a
    stream; the text is tokenized back with the model's tokenizer."""
    import subprocess
    out, t0, got, i = [], time.time(), 0, 0
    while got < n_tokens and time.time() - t0 < max_seconds:
        r = subprocess.run([exe, "generate", config, "--prompt", "\n", "--no-display-prompt",
                            "--tokens", str(ctx - 1), "--temperature", str(temperature),
                            "--top-k", "0", "--top-p", "1", "--seed", str(seed + i),
                            "--threads", str(threads)], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, check=False)
        if r.returncode != 0:
            sys.exit(f"{exe} generate: {r.stderr.decode(errors='replace').strip()}")
        toks = tokenize(b"\n" + r.stdout, cfg, tokenizer)
        out.append(toks[:ctx])
        got += len(out[-1])
        i += 1
        if i % 50 == 0:
            print(f"  sampled {got} tokens ({time.time() - t0:.0f}s, "
                  f"{got / (time.time() - t0):.0f} tok/s)", flush=True)
    print(f"  sampled {got} tokens in {i} streams ({time.time() - t0:.0f}s)", flush=True)
    return np.concatenate(out)


# --------------------------------------------------------------------------
# student
# --------------------------------------------------------------------------

def default_decays(H: int) -> List[float]:
    """1 - 2^-(4+h): horizons of 16, 32, 64, ... tokens over the heads."""
    return [1.0 - 2.0 ** -(4 + h) for h in range(H)]


def make_student(tcfg: M.Config, tsd: Dict[str, torch.Tensor], args) -> M.LinAttnLM:
    kind = args.attention
    over = dict(window=0, feature_dim=0, decay="none")
    if kind == "hybrid":
        over.update(attention="hybrid", window=args.window, feature_dim=args.feature_dim)
    elif kind == "linear":
        over.update(attention="linear")
    else:
        over.update(attention="softmax", window=args.window)
    if kind in ("hybrid", "linear"):
        d = args.decay.strip().lower()
        if d == "auto":
            d = ",".join(repr(float(np.float32(x))) for x in default_decays(tcfg.n_heads))
        over["decay"] = d
    scfg = dataclasses.replace(tcfg, weights="", **over)
    scfg.validate()
    st = M.LinAttnLM(scfg)
    missing, unexpected = st.load_state_dict(tsd, strict=False)
    assert not unexpected, unexpected
    assert all(k.endswith(("lin_scale", "wq_phi", "wk_phi")) for k in missing), missing
    return st


class DecayParams(torch.nn.Module):
    """Learned decays: gamma_h = sigmoid(logit_h), one per head shared by every
    layer (the INI's `decay` has one value per head)."""

    def __init__(self, student: M.LinAttnLM, init: List[float]):
        super().__init__()
        g = torch.tensor(init, dtype=torch.float64).clamp(1e-4, 1 - 1e-6)
        self.logit = torch.nn.Parameter(torch.log(g / (1 - g)).float())
        for layer in student.layers:
            layer.attn.log_decay_fn = lambda: F.logsigmoid(self.logit)

    def values(self) -> np.ndarray:
        return torch.sigmoid(self.logit.detach().double()).numpy()


# --------------------------------------------------------------------------
# evaluation
# --------------------------------------------------------------------------

@torch.no_grad()
def window_bits(model: M.LinAttnLM, data: np.ndarray, ctx: int, batch: int = 8) -> float:
    """Mean bits per token of data[1:] predicted in fresh windows of ctx tokens."""
    model.eval()
    n = len(data) - 1
    full = [s for s in range(0, n - ctx + 1, ctx)]
    groups = [full[i:i + batch] for i in range(0, len(full), batch)]
    rest = len(full) * ctx
    tot, cnt = 0.0, 0
    for grp, ln in [(g, ctx) for g in groups] + ([([rest], n - rest)] if rest < n else []):
        x = torch.from_numpy(np.stack([data[s:s + ln] for s in grp]).astype(np.int64))
        y = torch.from_numpy(np.stack([data[s + 1:s + ln + 1] for s in grp]).astype(np.int64))
        lg = model(x, chunk=64)
        tot += F.cross_entropy(lg.reshape(-1, lg.shape[-1]).float(), y.reshape(-1),
                               reduction="sum").item()
        cnt += y.numel()
    model.train()
    return tot / cnt / math.log(2)


@torch.no_grad()
def stream_bits(model: M.LinAttnLM, data: np.ndarray, block: int = 1024) -> float:
    """One continuous stream (the state carried), constant memory: bits per token."""
    model.eval()
    states, pos, tot = None, 0, 0.0
    n = len(data) - 1
    while pos < n:
        e = min(n, pos + block)
        x = torch.from_numpy(data[pos:e].astype(np.int64))[None]
        y = torch.from_numpy(data[pos + 1:e + 1].astype(np.int64))
        lg, states = model(x, pos, states, return_states=True, chunk=64)
        tot += F.cross_entropy(lg[0].float(), y, reduction="sum").item()
        pos = e
    model.train()
    return tot / n / math.log(2)


# --------------------------------------------------------------------------
# training
# --------------------------------------------------------------------------

def qkv(attn: M.Attention, x: torch.Tensor, pos: int):
    """q [B,H,T,dh], k, v [B,G,T,dh] after RoPE, as Attention.forward computes them."""
    B, T, _ = x.shape
    cfg = attn.cfg
    H, G, dh = cfg.n_heads, cfg.kv_heads, cfg.head_dim
    q = attn.q(x).view(B, T, H, dh).transpose(1, 2)
    k = attn.k(x).view(B, T, G, dh).transpose(1, 2)
    v = attn.v(x).view(B, T, G, dh).transpose(1, 2)
    if cfg.positions == "rope":
        q = M.rope(q, pos, cfg.rope_theta, cfg.rope_pairing)
        k = M.rope(k, pos, cfg.rope_theta, cfg.rope_pairing)
    return q, k, v


def lr_at(frac: float, peak: float, warmup: float = 0.05, floor: float = 0.1) -> float:
    if frac < warmup:
        return peak * max(frac, 1e-3) / warmup
    p = min(1.0, (frac - warmup) / max(1e-9, 1.0 - warmup))
    return peak * (floor + (1.0 - floor) * 0.5 * (1.0 + math.cos(math.pi * p)))


def write_ini(cfg: M.Config, path: str, weights_path: str, header: str,
              tokenizer: Optional[str] = None) -> None:
    """The student's INI; the teacher's tokenizer (a spec, its path made
    relative to the INI) goes with it."""
    gen = M.runtime_generate_sections(PROMPT, 1000)
    here = os.path.dirname(os.path.abspath(path))
    rel = os.path.relpath(weights_path, here)
    text = cfg.to_ini_text(weights=rel, header=header, extra_sections=gen)
    if tokenizer:
        kind, _, p = tokenizer.partition(":")
        text = text.replace("[model]\n", f"[model]\ntokenizer = {kind}:{os.path.relpath(p, here)}\n",
                            1)
    with open(path, "w") as f:
        f.write(text)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("config", help="teacher: linattn INI, llama2.c .bin, or HF folder")
    ap.add_argument("--out", required=True, help="NAME: models/NAME.safetensors, configs/NAME.ini")
    ap.add_argument("--attention", choices=["hybrid", "linear", "window"], default="hybrid")
    ap.add_argument("--window", type=int, default=64)
    ap.add_argument("--feature-dim", type=int, default=0,
                    help="hybrid: F of the learned feature maps (0 = elu+1 of q, k)")
    ap.add_argument("--decay", default="auto",
                    help="hybrid/linear: auto (1-2^-(4+h)) | none | g0,g1,... per head")
    ap.add_argument("--learn-decay", action="store_true", help="train the decays too")
    ap.add_argument("--text", nargs="*", default=None, help="training text files")
    ap.add_argument("--sample-tokens", type=int, default=1_000_000,
                    help="no --text: tokens sampled from the teacher (at most 10%% of the budget)")
    ap.add_argument("--sample-batch", type=int, default=32)
    ap.add_argument("--sample-minutes", type=float, default=None,
                    help="no --text: at most this long sampling (default 10%% of --minutes; "
                         "not counted in the training budget)")
    ap.add_argument("--sample-exe", default=None,
                    help="no --text: sample with this linattn program (its `generate`, one "
                         "stream of the teacher's context a seed) instead of PyTorch: ten to "
                         "twenty times faster on a CPU")
    ap.add_argument("--temperature", type=float, default=1.0)
    ap.add_argument("--minutes", type=float, default=30.0, help="budget of both stages")
    ap.add_argument("--stage1", type=float, default=0.2, help="fraction for attention transfer")
    ap.add_argument("--ctx", type=int, default=0, help="training window (0: teacher max_seq_len)")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--lr1", type=float, default=1e-2, help="stage 1 peak LR")
    ap.add_argument("--lr2", type=float, default=3e-4, help="stage 2 peak LR (teacher weights)")
    ap.add_argument("--lr2-new", type=float, default=1e-3, help="stage 2 peak LR (new tensors)")
    ap.add_argument("--weight-decay", type=float, default=0.0)
    ap.add_argument("--pos-offset-max", type=int, default=16384)
    ap.add_argument("--amp", choices=["bf16", "off"], default="bf16")
    ap.add_argument("--dtype", choices=["F16", "BF16", "F32"], default="F16")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--work-dir", default=None, help="default /tmp/linearize-NAME")
    ap.add_argument("--resume", action="store_true")
    ap.add_argument("--ckpt-every", type=float, default=3.0, help="minutes")
    ap.add_argument("--eval-every", type=float, default=3.0, help="minutes (curve)")
    ap.add_argument("--curve-bytes", type=int, default=8192)
    ap.add_argument("--heldout", default=HELDOUT, help="final evaluation text (64 KiB KJV tail)")
    ap.add_argument("--summary", default=None, help="JSON summary (default WORK_DIR/summary.json)")
    ap.add_argument("--models-dir", default=os.path.join(ROOT, "models"))
    ap.add_argument("--configs-dir", default=os.path.join(ROOT, "configs"))
    args = ap.parse_args()

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    work = args.work_dir or f"/tmp/linearize-{args.out}"
    os.makedirs(work, exist_ok=True)
    ckpt_path = os.path.join(work, "ckpt.pt")
    t_start = time.time()
    budget = args.minutes * 60.0

    tcfg, tsd, tokzr = load_teacher(args.config)
    global ENGINE
    if tokzr and not tokzr.startswith("llama2c:"):
        ENGINE = engine_exe(args)
    assert tcfg.attention == "softmax" and tcfg.window == 0, "the teacher must be plain softmax"
    teacher = M.LinAttnLM(dataclasses.replace(tcfg, weights=""))
    teacher.load_state_dict(tsd, strict=True)
    teacher.eval()
    for p in teacher.parameters():
        p.requires_grad_(False)
    ctx = args.ctx or tcfg.max_seq_len
    if tcfg.positions != "rope" and args.pos_offset_max:
        # only RoPE softmax is offset-invariant (the teacher's target stays right)
        print(f"positions = {tcfg.positions}: no random position offsets", flush=True)
        args.pos_offset_max = 0
    print(f"teacher {args.config}: {teacher.num_params()} parameters, ctx {ctx}, "
          f"tokenizer {tokzr or 'bytes'}", flush=True)

    # ---- data --------------------------------------------------------------
    heldout = None
    if tokzr is None and os.path.exists(args.heldout):
        with open(args.heldout, "rb") as f:
            heldout_bytes = f.read()
        heldout = tokenize(heldout_bytes, tcfg, tokzr)
    val = None
    if args.text:
        parts, vparts = [], []
        for path in args.text:
            with open(path, "rb") as f:
                raw = f.read()
            cut = len(raw) - len(raw) // 20
            if heldout is not None and heldout_bytes[:4096] in raw[:cut]:
                sys.exit(f"{path}: its first 95% contains the held-out KJV tail")
            parts.append(tokenize(raw[:cut], tcfg, tokzr))
            vparts.append(tokenize(raw[cut:], tcfg, tokzr))
        train = np.concatenate(parts)
        val = np.concatenate(vparts)
        data_note = (f"text {', '.join(os.path.basename(p) for p in args.text)} "
                     f"(first 95%, {len(train)} tokens)")
    else:
        sample_path = os.path.join(work, "sample.npy")
        if os.path.exists(sample_path):
            train = np.load(sample_path)
            print(f"reusing the teacher's sample {sample_path}: {len(train)} tokens", flush=True)
        else:
            start = 10 if tokzr is None else 1
            sample_s = 60.0 * args.sample_minutes if args.sample_minutes else 0.1 * budget
            print(f"sampling up to {args.sample_tokens} tokens from the teacher at temperature "
                  f"{args.temperature} (at most {sample_s:.0f}s"
                  f"{', with ' + args.sample_exe if args.sample_exe else ''})", flush=True)
            if args.sample_exe:
                train = sample_with_engine(args.sample_exe, args.config, args.sample_tokens,
                                           sample_s, ctx, args.temperature, args.seed,
                                           args.threads, tcfg, tokzr)
            else:
                train = sample_from_teacher(teacher, args.sample_tokens, sample_s, ctx,
                                            args.sample_batch, args.temperature, start,
                                            args.seed)
            np.save(sample_path, train)
        print(f"teacher sample: {len(train)} tokens at temperature {args.temperature}", flush=True)
        data_note = (f"{len(train)} tokens sampled from the teacher at temperature "
                     f"{args.temperature}")
    curve_data = (heldout if heldout is not None else val if val is not None
                  else train[-20 * ctx:])[:args.curve_bytes + 1]
    if val is None and heldout is None:
        train = train[:-20 * ctx]

    # ---- student -----------------------------------------------------------
    student = make_student(tcfg, tsd, args)
    scfg = student.cfg
    H = scfg.n_heads
    decay_params = None
    if args.learn_decay and scfg.attention in ("hybrid", "linear"):
        decay_params = DecayParams(student, scfg.decays() or [1.0 - 1e-4] * H)
        if scfg.attention == "linear":
            sys.exit("--learn-decay: linear students take fixed decays (its chunked form "
                     "reads cfg.decay)")
    new_params = [p for n, p in student.named_parameters()
                  if n.endswith(("lin_scale", "wq_phi", "wk_phi"))]
    if decay_params is not None:
        new_params.append(decay_params.logit)
    old_params = [p for n, p in student.named_parameters()
                  if not n.endswith(("lin_scale", "wq_phi", "wk_phi"))]
    print(f"student: {scfg.attention} window {scfg.window} feature_dim {scfg.feature_dim} "
          f"decay {scfg.decay}{' (learned)' if decay_params else ''}; "
          f"{sum(p.numel() for p in new_params)} new parameters", flush=True)
    stage1_budget = budget * args.stage1 if new_params else 0.0
    opt1 = torch.optim.AdamW(new_params, lr=args.lr1, betas=(0.9, 0.99),
                             weight_decay=0.0) if new_params else None
    groups = [{"params": old_params, "lr": args.lr2, "peak": args.lr2}]
    if new_params:
        groups.append({"params": new_params, "lr": args.lr2_new, "peak": args.lr2_new})
    opt2 = torch.optim.AdamW(groups, betas=(0.9, 0.95), eps=1e-8,
                             weight_decay=args.weight_decay)

    state = dict(stage=1 if stage1_budget > 0 else 2, elapsed=0.0, step=0, tokens=0,
                 curve=[], next_eval=0.0, stage1_seconds=0.0, ema=None)
    if args.resume and os.path.exists(ckpt_path):
        ck = torch.load(ckpt_path)
        student.load_state_dict(ck["student"])
        if decay_params is not None:
            decay_params.load_state_dict(ck["decay"])
        if opt1 is not None and ck.get("opt1"):
            opt1.load_state_dict(ck["opt1"])
        opt2.load_state_dict(ck["opt2"])
        state = ck["state"]
        rng = np.random.default_rng(args.seed + state["step"])
        print(f"resumed {ckpt_path}: stage {state['stage']} step {state['step']} "
              f"at {state['elapsed']:.0f}s", flush=True)

    def save_ckpt():
        torch.save({"student": student.state_dict(),
                    "decay": decay_params.state_dict() if decay_params else None,
                    "opt1": opt1.state_dict() if opt1 else None, "opt2": opt2.state_dict(),
                    "state": state, "args": vars(args)}, ckpt_path + ".tmp")
        os.replace(ckpt_path + ".tmp", ckpt_path)

    def batch():
        starts = rng.integers(0, len(train) - ctx - 1, size=args.batch)
        c = np.stack([train[s:s + ctx + 1] for s in starts]).astype(np.int64)
        off = int(rng.integers(0, args.pos_offset_max + 1)) \
            if args.pos_offset_max > 0 and rng.random() < 0.5 else 0
        return torch.from_numpy(c[:, :-1]), off

    def eval_curve():
        te = time.time()
        b = window_bits(student, curve_data, ctx)
        state["curve"].append({"minutes": round(state["elapsed"] / 60, 2), "stage": state["stage"],
                               "step": state["step"], "bits": round(b, 4)})
        print(f"eval {state['elapsed'] / 60:5.1f} min stage {state['stage']}: held-out "
              f"{len(curve_data) - 1} tokens {b:.4f} bits/token [{time.time() - te:.0f}s]",
              flush=True)
        return time.time() - te

    # attention inputs of every teacher layer (stage 1: teacher forcing)
    captured: List[torch.Tensor] = []
    hooks = [layer.attn.register_forward_hook(lambda m, inp, out: captured.append(inp[0]))
             for layer in teacher.layers]

    print(f"budget {args.minutes} min: stage 1 {stage1_budget / 60:.1f} min, "
          f"stage 2 {(budget - stage1_budget) / 60:.1f} min; batch {args.batch} x {ctx}",
          flush=True)
    student.train()
    amp = args.amp == "bf16"
    last_ckpt = time.time()
    seg_t0, seg_el0 = time.time(), state["elapsed"]
    while True:
        state["elapsed"] = seg_el0 + (time.time() - seg_t0)
        if state["elapsed"] >= state["next_eval"]:
            seg_el0 -= eval_curve()   # evaluation is not counted in the budget
            state["next_eval"] += args.eval_every * 60.0
        if state["elapsed"] >= budget:
            break
        if state["stage"] == 1 and state["elapsed"] >= stage1_budget:
            state["stage"], state["stage1_seconds"] = 2, state["elapsed"]
            print(f"stage 2 (distillation, all parameters) at {state['elapsed']:.0f}s",
                  flush=True)
        x, off = batch()
        if state["stage"] == 1:
            frac = state["elapsed"] / stage1_budget
            for g in opt1.param_groups:
                g["lr"] = lr_at(frac, args.lr1)
            captured.clear()
            with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=amp):
                teacher(x)
            loss = 0.0
            for li, (layer, xin) in enumerate(zip(student.layers, captured)):
                attn = layer.attn
                with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=amp):
                    q, k, v = qkv(attn, xin, off)
                    r = H // scfg.kv_heads
                    yt, _ = M.causal_softmax_attention(q, k.repeat_interleave(r, 1),
                                                       v.repeat_interleave(r, 1))
                    yt = yt.float()
                with torch.autocast("cpu", dtype=torch.bfloat16, enabled=amp):
                    if scfg.attention == "hybrid":
                        ys, _ = attn._hybrid(q, k, v, None, 64, False)
                    else:
                        ys, _ = M.causal_linear_attention(q, k.repeat_interleave(r, 1),
                                                          v.repeat_interleave(r, 1), scfg.eps,
                                                          64, None, scfg.decays())
                loss = loss + F.mse_loss(ys.float(), yt) / (yt.var() + 1e-6)
            loss = loss / len(captured)
            opt1.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(new_params, 1.0)
            opt1.step()
        else:
            s2 = budget - state["stage1_seconds"]
            frac = (state["elapsed"] - state["stage1_seconds"]) / max(1.0, s2)
            for g in opt2.param_groups:
                g["lr"] = lr_at(frac, g["peak"])
            with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=amp):
                captured.clear()
                tl = teacher(x).float()     # RoPE softmax: the same at any offset
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=amp):
                sl = student(x, pos_offset=off, chunk=64)
            V = sl.shape[-1]
            loss = F.kl_div(F.log_softmax(sl.float().reshape(-1, V), -1),
                            F.log_softmax(tl.reshape(-1, V), -1), log_target=True,
                            reduction="batchmean")
            opt2.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(old_params + new_params, 1.0)
            opt2.step()
        state["step"] += 1
        state["tokens"] += x.numel()
        lv = loss.item()
        state["ema"] = lv if state["ema"] is None else 0.95 * state["ema"] + 0.05 * lv
        if state["step"] % 10 == 0 or state["step"] == 1:
            el = state["elapsed"] = seg_el0 + (time.time() - seg_t0)
            what = "mse/var" if state["stage"] == 1 else "KL bits"
            shown = lv if state["stage"] == 1 else lv / math.log(2)
            ema = state["ema"] if state["stage"] == 1 else state["ema"] / math.log(2)
            print(f"stage {state['stage']} step {state['step']:5d} {el / 60:5.1f} min "
                  f"ETA {(budget - el) / 60:5.1f} min  {what} {shown:.4f} (ema {ema:.4f}) "
                  f"off {off:5d}  {state['tokens'] / max(el, 1e-9):.0f} tok/s", flush=True)
        if time.time() - last_ckpt >= args.ckpt_every * 60.0:
            save_ckpt()
            last_ckpt = time.time()
    for h in hooks:
        h.remove()
    save_ckpt()
    if not state["curve"] or state["curve"][-1]["step"] != state["step"]:
        eval_curve()

    # ---- export ------------------------------------------------------------
    if decay_params is not None:
        g = decay_params.values()
        print(f"learned decays per head: {np.array2string(g, precision=6)}", flush=True)
        scfg.decay = ",".join(repr(float(np.float32(x))) for x in g)
        for layer in student.layers:
            layer.attn.log_decay_fn = None
    os.makedirs(args.models_dir, exist_ok=True)
    os.makedirs(args.configs_dir, exist_ok=True)
    st_path = os.path.join(args.models_dir, f"{args.out}.safetensors")
    ini_path = os.path.join(args.configs_dir, f"{args.out}.ini")
    minutes = state["elapsed"] / 60
    M.save_safetensors(student, st_path, args.dtype, {
        "generator": "tools/linearize.py", "teacher": os.path.abspath(args.config),
        "data": data_note, "steps": str(state["step"]), "minutes": f"{minutes:.1f}"})
    kind = (f"hybrid (softmax window {scfg.window} + decayed linear tail, feature_dim "
            f"{scfg.feature_dim})" if scfg.attention == "hybrid" else
            f"softmax window {scfg.window}" if scfg.window else "linear attention")
    header = (f"{args.out}: {kind}, made by tools/linearize.py from the softmax teacher\n"
              f"{os.path.abspath(args.config)}; budget {args.minutes} min "
              f"(stage 1 attention transfer {state['stage1_seconds'] / 60:.1f} min, stage 2 "
              f"distillation of all weights), {state['step']} steps, {state['tokens']} tokens;\n"
              f"data: {data_note}; seed {args.seed}.\n"
              f"max_seq_len is the teacher's context; this attention decodes past it with "
              f"constant memory.")
    write_ini(scfg, ini_path, st_path, header, tokzr)
    print(f"wrote {st_path} ({args.dtype}) and {ini_path}", flush=True)

    # ---- final evaluation (exported weights, float32) ----------------------
    summary = dict(teacher=os.path.abspath(args.config), out=args.out, argv=sys.argv[1:],
                   attention=scfg.attention, window=scfg.window, feature_dim=scfg.feature_dim,
                   decay=scfg.decay, minutes=round(minutes, 2), steps=state["step"],
                   tokens=state["tokens"], stage1_minutes=round(state["stage1_seconds"] / 60, 2),
                   data=data_note, curve=state["curve"], ctx=ctx)
    final = M.from_ini(ini_path, torch.float32)
    if heldout is not None:
        te = time.time()
        tb = window_bits(teacher, heldout, ctx)
        sb = window_bits(final, heldout, ctx)
        ss = stream_bits(final, heldout)
        print(f"held-out {len(heldout) - 1} bytes of KJV (windows of {ctx}): teacher {tb:.4f} "
              f"bits/byte, student {sb:.4f}; student as one stream {ss:.4f} "
              f"[{time.time() - te:.0f}s]", flush=True)
        summary.update(heldout_bytes=len(heldout) - 1, teacher_bpb=round(tb, 4),
                       student_bpb=round(sb, 4), student_stream_bpb=round(ss, 4))
    if tokzr is None:
        smp = M.generate(final, PROMPT.encode(), 200, temperature=0.8, seed=42)
        summary["sample"] = PROMPT + smp.decode("latin-1")
        print(f"--- sample ---\n{summary['sample']}\n", flush=True)
    summary_path = args.summary or os.path.join(work, "summary.json")
    with open(summary_path, "w") as f:
        json.dump(summary, f, indent=1)
    print(f"summary -> {summary_path} "
          f"(total {(time.time() - t_start) / 60:.1f} min)", flush=True)


if __name__ == "__main__":
    main()
