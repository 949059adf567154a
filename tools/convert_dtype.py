#!/usr/bin/python3
"""convert_dtype.py: rewrites a safetensors model with its tensors stored as F16, BF16, F32 or int8 (Q8).

    /usr/bin/python3 tools/convert_dtype.py IN.safetensors OUT.safetensors --dtype f16
    /usr/bin/python3 tools/convert_dtype.py IN OUT --dtype bf16 --vectors f32
    /usr/bin/python3 tools/convert_dtype.py IN OUT --dtype q8

numpy only (no torch, no safetensors package). Rounding is to nearest, ties
to even (numpy's float16 cast; bfloat16 by the same rule on the fp32 bits);
NaN stays NaN. Names, shapes, order and __metadata__ are kept; the header is
padded with spaces to a multiple of 8 bytes, so every tensor stays aligned.
--vectors sets the dtype of 1-D tensors (norm weights, biases) apart, e.g.
to keep them fp32 (linattn converts them to fp32 at load in any case).
linattn uses F16/BF16 weight matrices as stored ([runtime] weights_dtype =
stored, the default), at half the bytes of fp32.

--dtype q8 quantizes every 2-D tensor whose rows are a multiple of 32 long
(the weight matrices and the embedding) by groups of 32 along each row, as
llama2.c's runq.c and ggml's Q8_0 do: scale s = max|w| / 127 (fp32), values
round(w / s) (nearest, ties to even) stored as I8 in NAME and the scales as
F32 in NAME_scale [rows, cols / 32]: 1.125 bytes a weight. Other tensors
keep --vectors (default f32). The same bytes as the library's own
quantization (linattn_model_random_safetensors).
"""
import argparse
import json
import struct
import sys

import numpy as np

_SIZES = {"F32": 4, "F16": 2, "BF16": 2, "F64": 8}
Q8_GROUP = 32


def _q8(a: np.ndarray):
    """(int8 values, fp32 scales) of a 2-D fp32 array, by groups of Q8_GROUP."""
    rows, cols = a.shape
    g = np.ascontiguousarray(a, dtype=np.float32).reshape(rows, cols // Q8_GROUP, Q8_GROUP)
    scale = (np.abs(g).max(axis=2) / np.float32(127)).astype(np.float32)
    safe = np.where(scale > 0, scale, np.float32(1))[:, :, None]
    q = np.where(scale[:, :, None] > 0, np.rint(g / safe), 0).astype(np.int8)
    return q.reshape(rows, cols), scale


def _to_f32(raw: bytes, dtype: str, shape) -> np.ndarray:
    if dtype == "F32":
        a = np.frombuffer(raw, dtype="<f4")
    elif dtype == "F64":
        a = np.frombuffer(raw, dtype="<f8").astype(np.float32)
    elif dtype == "F16":
        a = np.frombuffer(raw, dtype="<f2").astype(np.float32)
    elif dtype == "BF16":
        a = (np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16).view(np.float32)
    else:
        raise SystemExit(f"convert_dtype: unsupported dtype {dtype}")
    return a.reshape(shape)


def _bf16_bits(a: np.ndarray) -> np.ndarray:
    """fp32 -> bfloat16 bits, round to nearest even; NaN kept quiet."""
    x = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)
    nan = (x & 0x7FFFFFFF) > 0x7F800000
    r = ((x + 0x7FFF + ((x >> 16) & 1)) >> 16).astype(np.uint16)
    r[nan] = ((x[nan] >> 16) | 0x40).astype(np.uint16)
    return r


def _encode(a: np.ndarray, dtype: str) -> bytes:
    if dtype == "F32":
        return a.astype("<f4").tobytes()
    if dtype == "F16":
        with np.errstate(over="ignore"):  # past 65504: infinity, as IEEE rounding says
            return a.astype("<f2").tobytes()
    if dtype == "BF16":
        return _bf16_bits(a).astype("<u2").tobytes()
    raise SystemExit(f"convert_dtype: cannot write {dtype}")


def convert(src: str, dst: str, dtype: str, vectors: str) -> None:
    with open(src, "rb") as f:
        blob = f.read()
    if len(blob) < 8:
        raise SystemExit(f"convert_dtype: {src}: too short for safetensors")
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    data = blob[8 + n:]
    meta = header.pop("__metadata__", None)
    out_header, chunks, off = {}, [], 0
    def put(name, dt, shape, raw):
        nonlocal off
        out_header[name] = {"dtype": dt, "shape": shape, "data_offsets": [off, off + len(raw)]}
        chunks.append(raw)
        off += len(raw)

    for name, e in header.items():  # JSON order = file order (Python 3.7+ dicts)
        b, end = e["data_offsets"]
        a = _to_f32(data[b:end], e["dtype"], e["shape"])
        if dtype == "Q8" and len(e["shape"]) == 2 and e["shape"][1] % Q8_GROUP == 0:
            q, scale = _q8(a)
            put(name, "I8", e["shape"], q.tobytes())
            put(name + "_scale", "F32", list(scale.shape), scale.astype("<f4").tobytes())
            continue
        want = vectors if len(e["shape"]) == 1 or dtype == "Q8" else dtype
        put(name, want, e["shape"], _encode(a, want))
    if meta is not None:
        out_header = {"__metadata__": meta, **out_header}
    text = json.dumps(out_header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(dst, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for c in chunks:
            f.write(c)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("src")
    ap.add_argument("dst")
    ap.add_argument("--dtype", choices=["f16", "bf16", "f32", "q8"], required=True,
                    help="dtype of every tensor (the 2-D ones when --vectors is given; q8: "
                         "the matrices whose rows are a multiple of 32 long)")
    ap.add_argument("--vectors", choices=["f16", "bf16", "f32"],
                    help="dtype of the 1-D tensors (default: --dtype)")
    args = ap.parse_args(argv)
    dtype = args.dtype.upper()
    vectors = (args.vectors or ("f32" if args.dtype == "q8" else args.dtype)).upper()
    convert(args.src, args.dst, dtype, vectors)
    return 0


if __name__ == "__main__":
    sys.exit(main())
