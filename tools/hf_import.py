#!/usr/bin/python3
"""hf_import.py: a Hugging Face llama-family folder as a linattn model (INI + safetensors).

    /usr/bin/python3 tools/hf_import.py ~/TinyLlama-1.1B out/tinyllama.ini
    /usr/bin/python3 tools/hf_import.py HF_DIR out/m.ini --weights out/m.safetensors --dtype f16

numpy only. Reads config.json (model_type llama or mistral, as the engine's
own `weights = hf:DIR` does) and the weights (model.safetensors, or the
shards of model.safetensors.index.json), renames every tensor to this
project's names (model.layers.N.self_attn.q_proj.weight ->
layers.N.attn.q.weight, ...), and writes them with the shape in an INI:
rmsnorm with config.json's rms_norm_eps, swiglu, RoPE of rope_theta with
the half pairing (Hugging Face's rotate_half), grouped k/v heads, Mistral's
sliding_window as the engine's window, and `tokenizer = hf:DIR` when the
folder has a tokenizer.json. The tensors keep their stored dtype and bytes
(--dtype keep, the default) or are rounded to f32/f16/bf16 as
tools/convert_dtype.py does.

What the engine refuses it refuses too, with the key that says why: another
model_type, rope_scaling, attention or mlp biases, an activation other than
silu, head_dim other than hidden_size / num_attention_heads.

tools/linearize.py reads Hugging Face folders through read_folder().
"""
import argparse
import json
import os
import struct
import sys
from typing import Dict, List, Optional, Tuple

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import convert_dtype as CD  # noqa: E402

# Hugging Face name -> ours; {i} is the layer.
LAYER_NAMES = {
    "self_attn.q_proj.weight": "attn.q.weight",
    "self_attn.k_proj.weight": "attn.k.weight",
    "self_attn.v_proj.weight": "attn.v.weight",
    "self_attn.o_proj.weight": "attn.o.weight",
    "mlp.gate_proj.weight": "ffn.gate.weight",
    "mlp.up_proj.weight": "ffn.up.weight",
    "mlp.down_proj.weight": "ffn.down.weight",
    "input_layernorm.weight": "norm1.weight",
    "post_attention_layernorm.weight": "norm2.weight",
}
TOP_NAMES = {"model.embed_tokens.weight": "tok_emb.weight", "model.norm.weight": "norm_f.weight",
             "lm_head.weight": "lm_head.weight"}


class ImportError_(Exception):
    """A folder this tool (and the engine) cannot read; the message says why."""


def _ours(name: str) -> Optional[str]:
    if name in TOP_NAMES:
        return TOP_NAMES[name]
    if name.startswith("model.layers."):
        rest = name[len("model.layers."):]
        i, _, tail = rest.partition(".")
        if i.isdigit() and tail in LAYER_NAMES:
            return f"layers.{int(i)}.{LAYER_NAMES[tail]}"
    if name.endswith("rotary_emb.inv_freq"):
        return ""  # a buffer some exports keep: computed from rope_theta instead
    return None


def shape_of(folder: str) -> Dict[str, object]:
    """The linattn [model] keys of config.json (checked)."""
    path = os.path.join(folder, "config.json")
    try:
        with open(path, encoding="utf-8") as f:
            c = json.load(f)
    except OSError as e:
        raise ImportError_(f"{path}: cannot read: {e.strerror}")
    except ValueError as e:
        raise ImportError_(f"{path}: not valid JSON: {e}")
    if not isinstance(c, dict):
        raise ImportError_(f"{path}: not a JSON object")

    def need(key):
        v = c.get(key)
        if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
            raise ImportError_(f"{path}: \"{key}\" is missing or not a positive integer")
        return v

    mt = c.get("model_type")
    if mt not in ("llama", "mistral"):
        raise ImportError_(f"{path}: \"model_type\" {mt!r} is not supported (llama, mistral)")
    if c.get("rope_scaling") not in (None, {}):
        raise ImportError_(f"{path}: \"rope_scaling\" is not supported")
    rp = c.get("rope_parameters")
    if isinstance(rp, dict) and rp.get("rope_type", "default") != "default":
        raise ImportError_(f"{path}: \"rope_parameters\" of type {rp.get('rope_type')!r} "
                           "is not supported")
    for key in ("attention_bias", "mlp_bias"):
        if c.get(key):
            raise ImportError_(f"{path}: \"{key}\" true is not supported")
    act = c.get("hidden_act", "silu")
    if act not in ("silu", "swish"):
        raise ImportError_(f"{path}: \"hidden_act\" {act!r} is not supported (silu)")
    d, H = need("hidden_size"), need("num_attention_heads")
    G = c.get("num_key_value_heads") or H
    if d % H or H % G:
        raise ImportError_(f"{path}: hidden_size {d}, {H} heads and {G} k/v heads do not divide")
    if c.get("head_dim") not in (None, d // H):
        raise ImportError_(f"{path}: \"head_dim\" {c['head_dim']} is not hidden_size / "
                           f"num_attention_heads ({d // H})")
    theta = c.get("rope_theta")
    if theta is None and isinstance(rp, dict):
        theta = rp.get("rope_theta")
    keys: Dict[str, object] = {
        "vocab_size": need("vocab_size"), "d_model": d, "n_heads": H, "n_layers":
        need("num_hidden_layers"), "d_ff": need("intermediate_size"), "attention": "softmax",
        "norm": "rmsnorm", "norm_eps": float(c.get("rms_norm_eps", 1e-6)),
        "norm_position": "pre", "ffn": "swiglu", "positions": "rope",
        "max_seq_len": int(c.get("max_position_embeddings", 2048)),
        "tie_embeddings": bool(c.get("tie_word_embeddings", False)),
        "rope_theta": float(theta if theta is not None else 10000.0), "rope_pairing": "half",
        "bias": False, "n_kv_heads": 0 if G == H else G,
    }
    sw = c.get("sliding_window")
    if mt == "mistral" and isinstance(sw, int) and not isinstance(sw, bool) and sw > 0:
        keys["window"] = sw
    return keys


def _read_header(path: str) -> Tuple[dict, int]:
    try:
        with open(path, "rb") as f:
            head = f.read(8)
            if len(head) < 8:
                raise ImportError_(f"{path}: too short for a safetensors file")
            (n,) = struct.unpack("<Q", head)
            if n > 100 << 20:
                raise ImportError_(f"{path}: header of {n} bytes is too large")
            h = json.loads(f.read(n).decode("utf-8"))
    except OSError as e:
        raise ImportError_(f"{path}: cannot read: {e.strerror}")
    except ValueError as e:
        raise ImportError_(f"{path}: header is not valid JSON: {e}")
    return h, 8 + n


def _files(folder: str) -> List[str]:
    idx = os.path.join(folder, "model.safetensors.index.json")
    if os.path.exists(idx):
        try:
            with open(idx, encoding="utf-8") as f:
                wm = json.load(f)["weight_map"]
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise ImportError_(f"{idx}: no readable \"weight_map\": {e}")
        seen: List[str] = []
        for v in wm.values():
            if v not in seen:
                seen.append(v)
        return [os.path.join(folder, v) for v in seen]
    one = os.path.join(folder, "model.safetensors")
    if not os.path.exists(one):
        raise ImportError_(f"{folder}: no model.safetensors or model.safetensors.index.json")
    return [one]


def read_folder(folder: str):
    """(keys, tensors, tokenizer spec or None): keys as shape_of; tensors
    ours -> (dtype, shape, raw bytes) in model order."""
    keys = shape_of(folder)
    raw: Dict[str, Tuple[str, List[int], bytes]] = {}
    for path in _files(folder):
        h, base = _read_header(path)
        with open(path, "rb") as f:
            for name, info in h.items():
                if name == "__metadata__":
                    continue
                ours = _ours(name)
                if ours is None:
                    raise ImportError_(f"{path}: tensor {name!r} is not part of a "
                                       "llama model")
                if ours == "":
                    continue
                s, e = info["data_offsets"]
                f.seek(base + s)
                raw[ours] = (info["dtype"], list(info["shape"]), f.read(e - s))
    if keys["tie_embeddings"]:
        raw.pop("lm_head.weight", None)
    want = ["tok_emb.weight"]
    for i in range(int(keys["n_layers"])):
        want += [f"layers.{i}.{v}" for v in LAYER_NAMES.values()]
    want.append("norm_f.weight")
    if not keys["tie_embeddings"]:
        want.append("lm_head.weight")
    missing = [w for w in want if w not in raw]
    if missing:
        raise ImportError_(f"{folder}: tensors missing: {', '.join(missing[:4])}"
                           f"{' ...' if len(missing) > 4 else ''}")
    for k, (dt, _, _) in raw.items():
        if dt not in ("F32", "F16", "BF16"):
            raise ImportError_(f"{folder}: tensor {k} is {dt} (F32, F16 or BF16 only)")
    tok = "hf:" + os.path.abspath(folder) if os.path.exists(
        os.path.join(folder, "tokenizer.json")) else None
    return keys, {k: raw[k] for k in want}, tok


def as_f32(t: Tuple[str, List[int], bytes]) -> np.ndarray:
    dt, shape, b = t
    return np.array(CD._to_f32(b, dt, shape), dtype=np.float32)


def write_safetensors(path: str, tensors, dtype: str) -> None:
    """tensors as read_folder gives them, kept (dtype 'keep') or rounded to dtype."""
    header, blobs, off = {"__metadata__": {"format": "linattn", "source": "hf_import"}}, [], 0
    for name, t in tensors.items():
        dt, shape, b = t
        if dtype != "keep" and dt != dtype:
            b, dt = CD._encode(as_f32(t), dtype), dtype
        header[name] = {"dtype": dt, "shape": shape, "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header, separators=(",", ":")).encode("utf-8")
    h += b" " * ((-len(h)) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)
    os.replace(tmp, path)


def ini_text(keys: Dict[str, object], weights: str, tokenizer: Optional[str],
             source: str) -> str:
    lines = [f"# {source} (Hugging Face), imported by tools/hf_import.py", "[model]",
             f"weights = {weights}"]
    if tokenizer:
        lines.append(f"tokenizer = {tokenizer}")
    for k, v in keys.items():
        if k == "n_kv_heads" and not v:
            continue
        if isinstance(v, bool):
            v = "true" if v else "false"
        elif isinstance(v, float):
            v = repr(v)
        lines.append(f"{k} = {v}")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("folder", help="Hugging Face folder: config.json and *.safetensors")
    ap.add_argument("ini", help="the INI to write")
    ap.add_argument("--weights", help="the safetensors to write (default: beside the INI, "
                    "same name)")
    ap.add_argument("--dtype", default="keep", choices=["keep", "f32", "f16", "bf16"],
                    help="storage of the tensors (default: as the folder stores them)")
    a = ap.parse_args(argv)
    weights = a.weights or os.path.splitext(a.ini)[0] + ".safetensors"
    for out in (a.ini, weights):
        d = os.path.dirname(os.path.abspath(out))
        if not os.path.isdir(d):
            print(f"hf_import: {out}: no folder {d}", file=sys.stderr)
            return 1
    try:
        keys, tensors, tok = read_folder(a.folder)
    except ImportError_ as e:
        print(f"hf_import: {e}", file=sys.stderr)
        return 1
    ini_dir = os.path.dirname(os.path.abspath(a.ini))
    write_safetensors(weights, tensors, a.dtype.upper() if a.dtype != "keep" else "keep")
    rel = os.path.relpath(os.path.abspath(weights), ini_dir)
    if tok:
        tok = "hf:" + os.path.relpath(tok[3:], ini_dir)
    text = ini_text(keys, rel, tok, os.path.abspath(a.folder))
    tmp = a.ini + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, a.ini)
    n = sum(int(np.prod(t[1])) for t in tensors.values())
    print(f"hf_import: {a.ini} and {weights}: {len(tensors)} tensors, {n} parameters")
    return 0


if __name__ == "__main__":
    sys.exit(main())
