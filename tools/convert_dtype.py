#!/usr/bin/python3
"""convert_dtype.py: rewrites a safetensors model with its tensors stored as F16, BF16 or F32.

    /usr/bin/python3 tools/convert_dtype.py IN.safetensors OUT.safetensors --dtype f16
    /usr/bin/python3 tools/convert_dtype.py IN OUT --dtype bf16 --vectors f32

numpy only (no torch, no safetensors package). Rounding is to nearest, ties
to even (numpy's float16 cast; bfloat16 by the same rule on the fp32 bits);
NaN stays NaN. Names, shapes, order and __metadata__ are kept; the header is
padded with spaces to a multiple of 8 bytes, so every tensor stays aligned.
--vectors sets the dtype of 1-D tensors (norm weights, biases) apart, e.g.
to keep them fp32 (linattn converts them to fp32 at load in any case).
linattn uses F16/BF16 weight matrices as stored ([runtime] weights_dtype =
stored, the default), at half the bytes of fp32.
"""
import argparse
import json
import struct
import sys

import numpy as np

_SIZES = {"F32": 4, "F16": 2, "BF16": 2, "F64": 8}


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
    for name, e in header.items():  # JSON order = file order (Python 3.7+ dicts)
        b, end = e["data_offsets"]
        a = _to_f32(data[b:end], e["dtype"], e["shape"])
        want = vectors if len(e["shape"]) == 1 else dtype
        raw = _encode(a, want)
        out_header[name] = {"dtype": want, "shape": e["shape"],
                            "data_offsets": [off, off + len(raw)]}
        chunks.append(raw)
        off += len(raw)
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
    ap.add_argument("--dtype", choices=["f16", "bf16", "f32"], required=True,
                    help="dtype of every tensor (the 2-D ones when --vectors is given)")
    ap.add_argument("--vectors", choices=["f16", "bf16", "f32"],
                    help="dtype of the 1-D tensors (default: --dtype)")
    args = ap.parse_args(argv)
    dtype = args.dtype.upper()
    convert(args.src, args.dst, dtype, (args.vectors or args.dtype).upper())
    return 0


if __name__ == "__main__":
    sys.exit(main())
