#!/usr/bin/env python3
"""gguf_byte_vocab.py: give a vocabulary-less GGUF (linattn quantize of a byte model) a
sentencepiece vocabulary of bytes only, so that llama.cpp can tokenize text for it.

Token i is byte i: with no piece longer than one character, every character falls back to its
UTF-8 bytes, so llama.cpp and linattn both turn a text into its bytes, after sentencepiece's
space prefix (one byte 0x20 first, as both engines did when this was written). No BOS (the byte
model has none).

usage: PYTHONPATH=LLAMA_CPP/gguf-py python3 tools/gguf_byte_vocab.py IN.gguf OUT.gguf
"""
import sys

import gguf  # llama.cpp's gguf-py


def byte_pieces():
    # sentencepiece's byte fallback: byte b is the piece <0xBB>; the space is the piece U+2581,
    # because a sentencepiece tokenizer turns every space into U+2581 before it looks for pieces
    return ["\u2581" if b == 0x20 else "<0x%02X>" % b for b in range(256)]


def main(src, dst):
    r = gguf.GGUFReader(src)
    arch = r.fields["general.architecture"].contents()
    w = gguf.GGUFWriter(dst, arch)
    for name, f in r.fields.items():
        if name.startswith("GGUF.") or name == "general.architecture" or name.startswith("tokenizer."):
            continue
        vt = f.types[0]
        if vt == gguf.GGUFValueType.ARRAY:
            w.add_key_value(name, f.contents(), vt, sub_type=f.types[-1])
        else:
            w.add_key_value(name, f.contents(), vt)
    vocab = int(r.fields[arch + ".vocab_size"].contents()) if arch + ".vocab_size" in r.fields else 256
    if vocab != 256:
        sys.exit(f"{src}: vocab_size {vocab}, not a byte model")
    w.add_tokenizer_model("llama")
    w.add_token_list(byte_pieces())
    w.add_token_scores([0.0] * 256)
    w.add_token_types([gguf.TokenType.NORMAL if b == 0x20 else gguf.TokenType.BYTE for b in range(256)])
    w.add_add_bos_token(False)
    w.add_add_eos_token(False)
    w.add_bos_token_id(1)  # never added (add_bos false), but llama.cpp wants an id
    w.add_eos_token_id(2)
    for t in r.tensors:
        w.add_tensor_info(t.name, t.data.shape if t.tensor_type in (gguf.GGMLQuantizationType.F32,
                          gguf.GGMLQuantizationType.F16) else gguf.quant_shape_from_byte_shape(t.data.shape, t.tensor_type),
                          t.data.dtype, t.data.nbytes, t.tensor_type)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    for t in r.tensors:
        w.write_tensor_data(t.data)
    w.close()


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__.strip().splitlines()[-1])
    main(sys.argv[1], sys.argv[2])
