#!/usr/bin/env python3
"""Writes the seed corpus of fuzz_model_mem (tests/fuzz/corpus/model_mem): small valid models,
each a config's INI text, a NUL, then safetensors bytes, one seed per stored dtype (F32, F16,
BF16, int8 with its _scale tensors) and a few mixed ones (every dtype in one file; softmax;
tied embeddings; weights_dtype f32). Standard library only; the same bytes every run.

    python3 tests/fuzz/make_model_mem_seeds.py [OUT_DIR]
"""
import json
import os
import random
import struct
import sys

V, D, H, L, F = 32, 32, 2, 1, 32  # vocab, d_model, heads, layers, d_ff (int8 needs 32 | cols)
GROUP = 32  # LINATTN_Q8_GROUP: one F32 scale per 32 int8 weights of a row


def config(attention="linear", tied=False, extra=""):
    return (f"[model]\nweights = model.safetensors\nvocab_size = {V}\nd_model = {D}\n"
            f"n_heads = {H}\nn_layers = {L}\nd_ff = {F}\nattention = {attention}\n"
            f"norm = layernorm\nnorm_position = pre\nffn = gelu\npositions = sincos\n"
            f"max_seq_len = 16\ntie_embeddings = {'true' if tied else 'false'}\n{extra}")


def tensors(tied):
    """(name, shape, is a weight matrix) of the model, in the order tools/reference.py writes."""
    out = [("tok_emb.weight", [V, D], True)]
    for i in range(L):
        p = f"layers.{i}."
        for m in "qkvo":
            out += [(p + f"attn.{m}.weight", [D, D], True), (p + f"attn.{m}.bias", [D], False)]
        for n in ("norm1", "norm2"):
            out += [(p + n + ".weight", [D], False), (p + n + ".bias", [D], False)]
        out += [(p + "ffn.up.weight", [F, D], True), (p + "ffn.up.bias", [F], False),
                (p + "ffn.down.weight", [D, F], True), (p + "ffn.down.bias", [D], False)]
    out += [("norm_f.weight", [D], False), ("norm_f.bias", [D], False)]
    if not tied:
        out.append(("lm_head.weight", [V, D], True))
    return out


def bf16(x):
    b = struct.unpack("<I", struct.pack("<f", x))[0]
    b += 0x7FFF + ((b >> 16) & 1)  # round to nearest even
    return struct.pack("<H", (b >> 16) & 0xFFFF)


def encode(vals, dtype):
    if dtype == "F32":
        return struct.pack(f"<{len(vals)}f", *vals)
    if dtype == "F16":
        return struct.pack(f"<{len(vals)}e", *vals)
    if dtype == "BF16":
        return b"".join(bf16(v) for v in vals)
    return struct.pack(f"<{len(vals)}b", *vals)  # I8


def safetensors(entries):
    """entries: (name, dtype, shape, bytes) -> the file's bytes (header padded to 8)."""
    head, off = {}, 0
    for name, dtype, shape, data in entries:
        head[name] = {"dtype": dtype, "shape": shape, "data_offsets": [off, off + len(data)]}
        off += len(data)
    h = json.dumps(head, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    return struct.pack("<Q", len(h)) + h + b"".join(e[3] for e in entries)


def model(dtype_of, tied, seed):
    """dtype_of(name, is_matrix) -> F32|F16|BF16|I8; an I8 matrix gets NAME_scale [rows, cols/32]."""
    r = random.Random(seed)
    entries = []
    for name, shape, matrix in tensors(tied):
        n = 1
        for s in shape:
            n *= s
        dt = dtype_of(name, matrix)
        if name.endswith("norm1.weight") or name.endswith("norm2.weight") or name == "norm_f.weight":
            vals = [1.0 + 0.1 * r.uniform(-1, 1) for _ in range(n)]
        else:
            vals = [0.2 * r.uniform(-1, 1) for _ in range(n)]
        if dt == "I8":
            q = [r.randint(-127, 127) for _ in range(n)]
            entries.append((name, "I8", shape, encode(q, "I8")))
            scales = [0.002 * (1 + r.random()) for _ in range(n // GROUP)]
            entries.append((name + "_scale", "F32", [shape[0], shape[1] // GROUP],
                            encode(scales, "F32")))
        else:
            entries.append((name, dt, shape, encode(vals, dt)))
    return safetensors(entries)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__),
                                                             "corpus", "model_mem")
    os.makedirs(out, exist_ok=True)
    every = ["F32", "F16", "BF16", "I8"]
    mixed = {}

    def mix(name, matrix):  # each matrix the next dtype; vectors F32, F16, BF16 in turn
        k = len(mixed)
        mixed[name] = (every if matrix else every[:3])[k % (4 if matrix else 3)]
        return mixed[name]

    seeds = {
        "f32": (config(), model(lambda n, m: "F32", False, 1)),
        "f16": (config(), model(lambda n, m: "F16" if m else "F32", False, 2)),
        "f16-vectors": (config(), model(lambda n, m: "F16", False, 3)),
        "bf16": (config(), model(lambda n, m: "BF16" if m else "F32", False, 4)),
        "i8": (config(), model(lambda n, m: "I8" if m else "F32", False, 5)),
        "mixed-softmax": (config("softmax"), model(mix, False, 6)),
        "i8-tied": (config(tied=True), model(lambda n, m: "I8" if m else "F32", True, 7)),
        "bf16-as-f32": (config(extra="[runtime]\nweights_dtype = f32\n"),
                        model(lambda n, m: "BF16" if m else "F32", False, 8)),
    }
    for name, (ini, blob) in seeds.items():
        with open(os.path.join(out, name + ".bin"), "wb") as f:
            f.write(ini.encode() + b"\0" + blob)


if __name__ == "__main__":
    main()
