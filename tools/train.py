#!/usr/bin/python3
"""Train the byte-level KJV demo models shipped with linattn.

    /usr/bin/python3 tools/train.py --variant softmax --minutes 14
    /usr/bin/python3 tools/train.py --variant linear  --minutes 14
    /usr/bin/python3 tools/reference.py            # refresh tests/data/kjv-*.npy

Data: the King James Bible from Debian's `bible-kjv-text` (compressed,
/usr/lib/bible.data), decompressed with the `bible` program of the
`bible-kjv` package; one verse per line, verse numbers and book/chapter
headings dropped (about 4.1 MB of ASCII).  The last 5% is held out.

Training uses bf16 autocast (--amp bf16, fp32 master weights and AdamW
state): with oneDNN on a CPU with AMX this is 5-8x faster than fp32.
Evaluation and export are fp32 / F16.

Both variants have the same shape and differ only in `attention`.  Training
stops on a wall-clock budget (the cosine LR schedule is over that budget),
then the model is evaluated in bits per byte on the held-out split,
exported in F16 to models/kjv-<variant>.safetensors with
configs/kjv-<variant>.ini, and sampled from.  A JSON summary goes to
--summary (default /tmp/kjv-<variant>.json).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import subprocess
import sys
import time

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import model as M  # noqa: E402

ROOT = os.path.dirname(HERE)
PROMPT = "In the beginning God"


def load_kjv(cache: str = "/tmp/kjv.txt") -> bytes:
    if os.path.exists(cache):
        with open(cache, "rb") as f:
            return f.read()
    if not os.path.exists("/usr/lib/bible.data"):
        sys.exit("KJV text not found: apt-get install bible-kjv-text bible-kjv")
    try:
        raw = subprocess.run(["bible", "-l100000", "Gen1:1-Rev22:21"], check=True,
                             stdout=subprocess.PIPE).stdout.decode("ascii")
    except FileNotFoundError:
        sys.exit("the `bible` decompressor is missing: apt-get install bible-kjv")
    verses = []
    for line in raw.splitlines():
        m = re.match(r"^\s+\d+ (.*\S)\s*$", line)
        if m:
            verses.append(m.group(1))
    assert len(verses) == 31102, len(verses)   # every verse of the KJV
    text = ("\n".join(verses) + "\n").encode("ascii")
    with open(cache + ".tmp", "wb") as f:
        f.write(text)
    os.replace(cache + ".tmp", cache)
    return text


def make_config(args, attention: str) -> M.Config:
    return M.Config(vocab_size=256, d_model=args.d_model, n_heads=args.n_heads,
                    n_layers=args.n_layers, d_ff=args.d_ff, attention=attention,
                    norm=args.norm, norm_position="pre", ffn=args.ffn,
                    positions=args.positions, max_seq_len=args.ctx, eps=1e-6,
                    tie_embeddings=False,
                    decay=args.decay if attention == "linear" else "none",
                    rope_theta=args.rope_theta, bias=not args.no_bias,
                    n_kv_heads=args.n_kv_heads)


def init_weights(model: M.LinAttnLM, seed: int) -> None:
    torch.manual_seed(seed)
    n_res = 2 * model.cfg.n_layers
    for name, p in model.named_parameters():
        if name.endswith(".bias"):
            torch.nn.init.zeros_(p)
        elif "norm" in name:
            torch.nn.init.ones_(p)
        elif name.startswith("tok_emb"):
            # the sincos term has rms 1/sqrt(2) per dimension and is added
            # unscaled: token embeddings must be of the same size or the
            # token identity is drowned by the position signal at init
            torch.nn.init.normal_(p, 0.0, 1.0)
        elif name.endswith("attn.o.weight") or name.endswith("ffn.down.weight"):
            torch.nn.init.normal_(p, 0.0, 0.02 / math.sqrt(n_res))
        else:
            torch.nn.init.normal_(p, 0.0, 0.02)


@torch.no_grad()
def evaluate_bpb(model: M.LinAttnLM, data: np.ndarray, ctx: int, n_bytes: int,
                 batch: int = 16) -> float:
    """Mean next-byte cross-entropy in bits over non-overlapping ctx+1 windows."""
    model.eval()
    n_win = max(1, min(n_bytes, len(data) - 1) // ctx)
    tot, cnt = 0.0, 0
    for s in range(0, n_win, batch):
        idx = range(s, min(n_win, s + batch))
        x = torch.from_numpy(np.stack([data[i * ctx:i * ctx + ctx] for i in idx]).astype(np.int64))
        y = torch.from_numpy(np.stack([data[i * ctx + 1:i * ctx + ctx + 1] for i in idx]).astype(np.int64))
        lg = model(x, chunk=ctx)
        loss = torch.nn.functional.cross_entropy(lg.reshape(-1, lg.shape[-1]).float(),
                                                 y.reshape(-1), reduction="sum")
        tot += loss.item()
        cnt += y.numel()
    model.train()
    return tot / cnt / math.log(2)


@torch.no_grad()
def evaluate_stream_bpb(model: M.LinAttnLM, data: np.ndarray, n_bytes: int,
                        block: int = 256) -> float:
    """Linear attention only: one continuous stream (state carried), no window."""
    model.eval()
    states, pos = None, 0
    n = min(n_bytes, len(data) - 1)
    losses = []
    while pos < n:
        e = min(n, pos + block)
        x = torch.from_numpy(data[pos:e].astype(np.int64))[None]
        y = torch.from_numpy(data[pos + 1:e + 1].astype(np.int64))
        lg, states = model(x, pos, states, return_states=True, chunk=block)
        losses.append(torch.nn.functional.cross_entropy(lg[0].float(), y, reduction="none"))
        pos = e
    model.train()
    bits = torch.cat(losses).numpy() / math.log(2)
    return float(bits.mean()), bits


def tail_report(model: M.LinAttnLM, val: np.ndarray, n_bytes: int, ctx: int,
                block: int = 4096) -> dict:
    """The issue-8 protocol on the last n_bytes of the text (inside the held-out
    split): bits/byte as one stream and in fresh windows of ctx, per block."""
    tail = val[-(n_bytes + 1):]
    out = {"bytes": n_bytes}
    if model.cfg.attention == "linear":
        out["stream"], bits = evaluate_stream_bpb(model, tail, n_bytes)
        out["stream_blocks"] = [round(float(bits[a:a + block].mean()), 4)
                                for a in range(0, n_bytes, block)]
    wbits = window_bits(model, tail, ctx, n_bytes)
    out["windows"] = float(wbits.mean())
    out["window_blocks"] = [round(float(wbits[a:a + block].mean()), 4)
                            for a in range(0, n_bytes, block)]
    return out


@torch.no_grad()
def window_bits(model: M.LinAttnLM, data: np.ndarray, ctx: int, n_bytes: int) -> np.ndarray:
    """Per-byte bits, data[1..n_bytes] predicted in fresh windows of ctx bytes."""
    model.eval()
    bits = []
    for s in range(0, n_bytes, ctx):
        e = min(n_bytes, s + ctx)
        x = torch.from_numpy(data[s:e].astype(np.int64))[None]
        y = torch.from_numpy(data[s + 1:e + 1].astype(np.int64))
        lg = model(x, chunk=ctx)
        bits.append(torch.nn.functional.cross_entropy(lg[0].float(), y, reduction="none"))
    model.train()
    return torch.cat(bits).numpy() / math.log(2)


def lr_at(frac: float, peak: float, warmup: float, floor: float) -> float:
    if frac < warmup:
        return peak * max(frac, 1e-3) / warmup
    p = min(1.0, (frac - warmup) / max(1e-9, 1.0 - warmup))
    return peak * (floor + (1.0 - floor) * 0.5 * (1.0 + math.cos(math.pi * p)))


def write_ini(cfg: M.Config, variant: str, path: str, weights_path: str) -> None:
    streams = cfg.attention == "linear" and cfg.positions != "learned"
    gen = M.runtime_generate_sections(PROMPT, 1000 if streams and cfg.decays() else 200)
    note = (f"KJV byte-level demo model, {variant} attention; trained by tools/train.py "
            f"(see tools/TRAINING.md).")
    if variant == "linear" and cfg.decays():
        note += ("\nmax_seq_len is the training window; the model was trained on states "
                 "carried across windows,\nso it streams at any length with constant "
                 "memory (linattn eval shows it by position).")
    elif variant == "linear":
        note += ("\nmax_seq_len is the training context; linear attention with sincos "
                 "positions decodes past it.")
    with open(path, "w") as f:
        rel = os.path.relpath(weights_path, os.path.dirname(os.path.abspath(path)))
        f.write(cfg.to_ini_text(weights=rel,
                                header=note, extra_sections=gen))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--variant", choices=["softmax", "linear"], required=True)
    ap.add_argument("--minutes", type=float, default=14.0, help="training wall-time budget")
    ap.add_argument("--d-model", type=int, default=256)
    ap.add_argument("--n-layers", type=int, default=4)
    ap.add_argument("--n-heads", type=int, default=4)
    ap.add_argument("--d-ff", type=int, default=1024)
    ap.add_argument("--ctx", type=int, default=256)
    ap.add_argument("--norm", choices=["rmsnorm", "layernorm"], default="rmsnorm")
    ap.add_argument("--positions", choices=["none", "sincos", "learned", "rope"],
                    default="sincos")
    ap.add_argument("--ffn", choices=["relu", "gelu", "swiglu"], default="gelu")
    ap.add_argument("--rope-theta", type=float, default=10000.0)
    ap.add_argument("--n-kv-heads", type=int, default=0,
                    help="k/v heads (grouped-query attention); 0 = n_heads")
    ap.add_argument("--no-bias", action="store_true",
                    help="no bias tensors (the llama layout)")
    ap.add_argument("--name", default=None,
                    help="output name: models/kjv-NAME.safetensors, configs/kjv-NAME.ini "
                         "(default: the variant)")
    ap.add_argument("--decay", default="none",
                    help="linear only: none | retnet | g0,g1,... (one per head)")
    ap.add_argument("--tail-bytes", type=int, default=65536,
                    help="the held-out tail used for the streaming figures")
    ap.add_argument("--eval-every", type=float, default=0.0,
                    help="minutes between stream evaluations of the tail during "
                         "training (0 = only at the end); eval time is not "
                         "counted in the budget")
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--warmup", type=float, default=0.04, help="fraction of the budget")
    ap.add_argument("--weight-decay", type=float, default=0.1)
    ap.add_argument("--eval-bytes", type=int, default=200_000)
    ap.add_argument("--pos-offset-max", type=int, default=0,
                    help="train each step at a random absolute position offset in "
                         "[0, N] (sincos) with a fresh state (tried for linear: hurts "
                         "in-context quality a lot, streaming still degrades)")
    ap.add_argument("--stateful-windows", type=int, default=0,
                    help="linear only: train on B parallel contiguous streams of N "
                         "consecutive ctx-byte windows, carrying the (detached) "
                         "recurrent state and the absolute position from window to "
                         "window (truncated BPTT), so the model learns to decode past "
                         "its context (experimental, see TRAINING.md; 0 = off)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--amp", choices=["bf16", "off"], default="bf16",
                    help="bf16 autocast for training (fp32 master weights); on CPUs "
                         "with AMX/AVX512-BF16 this is 5-8x faster than fp32")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--models-dir", default=os.path.join(ROOT, "models"))
    ap.add_argument("--configs-dir", default=os.path.join(ROOT, "configs"))
    ap.add_argument("--summary", default=None)
    args = ap.parse_args()

    torch.set_num_threads(args.threads)
    text = load_kjv()
    data = np.frombuffer(text, dtype=np.uint8)
    n_val = len(data) // 20
    train, val = data[:-n_val], data[-n_val:]
    print(f"KJV: {len(data)} bytes, train {len(train)}, val {len(val)}", flush=True)

    cfg = make_config(args, args.variant)
    model = M.LinAttnLM(cfg)
    init_weights(model, args.seed)
    n_params = model.num_params()
    print(f"{args.variant}: {n_params} parameters, cfg {cfg}", flush=True)

    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": args.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=args.lr, betas=(0.9, 0.95), eps=1e-8)
    rng = np.random.default_rng(args.seed)
    if args.stateful_windows > 0 and args.variant != "linear":
        sys.exit("--stateful-windows needs --variant linear")
    n_win = max(1, args.stateful_windows)
    win, starts, states = 0, None, None
    budget = args.minutes * 60.0
    t0 = time.time()
    step, tokens, ema = 0, 0, None
    paused, next_eval, curve = 0.0, args.eval_every * 60.0, []
    model.train()
    while True:
        elapsed = time.time() - t0 - paused
        if args.eval_every > 0 and elapsed >= next_eval and step > 0:
            te = time.time()
            rep = tail_report(model, val, args.tail_bytes, args.ctx)
            curve.append({"train_seconds": round(elapsed), "step": step,
                          "stream": rep.get("stream"), "windows": rep["windows"]})
            print(f"eval t {elapsed:6.0f}s step {step}: tail {args.tail_bytes} bytes "
                  f"stream {rep.get('stream', float('nan')):.4f} windows "
                  f"{rep['windows']:.4f} [{time.time() - te:.0f}s]", flush=True)
            paused += time.time() - te
            next_eval += args.eval_every * 60.0
            continue
        if elapsed >= budget:
            break
        lr = lr_at(elapsed / budget, args.lr, args.warmup, 0.1)
        for g in opt.param_groups:
            g["lr"] = lr
        if win % n_win == 0:   # new streams, fresh state, position 0
            starts = rng.integers(0, len(train) - n_win * args.ctx - 1, size=args.batch)
            states = None
        w = win % n_win
        win += 1
        off = starts + w * args.ctx
        chunk = np.stack([train[o:o + args.ctx + 1] for o in off]).astype(np.int64)
        x = torch.from_numpy(chunk[:, :-1])
        y = torch.from_numpy(chunk[:, 1:])
        p0 = w * args.ctx
        # a quarter of the steps at position 0 (where every decode starts)
        if args.pos_offset_max > 0 and rng.random() >= 0.25:
            p0 = int(rng.integers(0, args.pos_offset_max + 1))
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.amp == "bf16"):
            lg, new_states = model(x, pos_offset=p0, states=states,
                                   return_states=True, chunk=args.ctx)
        if args.stateful_windows > 0:
            states = [(S.detach().float(), z.detach().float()) for S, z in new_states]
        loss = torch.nn.functional.cross_entropy(lg.float().reshape(-1, 256), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        step += 1
        tokens += x.numel()
        bpb = loss.item() / math.log(2)
        ema = bpb if ema is None else 0.95 * ema + 0.05 * bpb
        if step % 20 == 0 or step == 1:
            el = time.time() - t0 - paused
            print(f"step {step:5d} t {el:6.0f}s lr {lr:.2e} train bpb {bpb:.3f} "
                  f"(ema {ema:.3f}) {tokens / el:.0f} tok/s", flush=True)
    train_time = time.time() - t0 - paused
    print(f"training done: {step} steps, {tokens} tokens, {train_time:.0f}s", flush=True)

    os.makedirs(args.models_dir, exist_ok=True)
    os.makedirs(args.configs_dir, exist_ok=True)
    name = args.name or args.variant
    summary_path = args.summary or f"/tmp/kjv-{name}.json"
    torch.save({"cfg": cfg.__dict__, "model": model.state_dict()},
               os.path.splitext(summary_path)[0] + ".pt")   # fp32 master weights
    st_path = os.path.join(args.models_dir, f"kjv-{name}.safetensors")
    M.save_safetensors(model, st_path, "F16", {
        "generator": "tools/train.py", "dataset": "KJV (Debian bible-kjv-text)",
        "train_steps": str(step), "train_seconds": f"{train_time:.0f}"})
    ini_path = os.path.join(args.configs_dir, f"kjv-{name}.ini")
    write_ini(cfg, args.variant, ini_path, st_path)

    # evaluate the exported (F16-rounded) weights, in float32
    t1 = time.time()
    m16 = M.from_ini(ini_path, torch.float32)
    val_bpb = evaluate_bpb(m16, val, args.ctx, args.eval_bytes)
    eval_time = time.time() - t1
    print(f"val bpb (F16 weights, {args.eval_bytes} bytes, windows of {args.ctx}): "
          f"{val_bpb:.4f}  [{eval_time:.0f}s]", flush=True)
    train_eval_bpb = evaluate_bpb(m16, train[:len(train) // 2], args.ctx, 50_000)
    print(f"train-split bpb (50k bytes): {train_eval_bpb:.4f}", flush=True)
    stream_bpb, stream_buckets = None, None
    if args.variant == "linear":
        stream_bpb, bits = evaluate_stream_bpb(m16, val, 16_384)
        win_bpb = evaluate_bpb(m16, val, args.ctx, 16_384)
        print(f"linear streaming over the first 16384 val bytes: {stream_bpb:.4f} bpb "
              f"(windows of {args.ctx} on the same bytes: {win_bpb:.4f})", flush=True)
        edges = [0, 256, 512, 1024, 2048, 4096, 8192, 16384]
        stream_buckets = {f"{a}-{b}": round(float(bits[a:b].mean()), 4)
                          for a, b in zip(edges, edges[1:]) if a < len(bits)}
        print(f"  streaming bpb by position: {stream_buckets}", flush=True)

    tail = tail_report(m16, val, args.tail_bytes, args.ctx)
    print(f"tail ({args.tail_bytes} bytes): {json.dumps(tail)}", flush=True)

    samples = {}
    for name, temp in (("greedy", 0.0), ("t0.8_seed42", 0.8)):
        out = M.generate(m16, PROMPT.encode(), 200, temperature=temp, top_k=40,
                         top_p=0.95, seed=42)
        samples[name] = PROMPT + out.decode("latin-1")
        print(f"--- sample {name} ---\n{samples[name]}\n", flush=True)

    summary = dict(variant=args.variant, params=n_params, steps=step, tokens=tokens,
                   train_seconds=round(train_time, 1), val_bpb=round(val_bpb, 4),
                   train_split_bpb=round(train_eval_bpb, 4), eval_bytes=args.eval_bytes,
                   stream_bpb_16k=stream_bpb, stream_bpb_by_position=stream_buckets,
                   pos_offset_max=args.pos_offset_max, stateful_windows=args.stateful_windows,
                   amp=args.amp, batch=args.batch, lr=args.lr, ctx=args.ctx,
                   d_model=args.d_model, n_layers=args.n_layers, n_heads=args.n_heads,
                   d_ff=args.d_ff, norm=args.norm, positions=args.positions,
                   ffn=args.ffn, n_kv_heads=args.n_kv_heads, bias=not args.no_bias,
                   decay=args.decay, tail=tail, curve=curve, samples=samples,
                   argv=sys.argv[1:])
    with open(summary_path, "w") as f:
        json.dump(summary, f, indent=1)
    print(f"summary -> {summary_path}", flush=True)


if __name__ == "__main__":
    main()
