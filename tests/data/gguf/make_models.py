#!/usr/bin/python3
"""Write synthetic llama2.c test files (deterministic).

  tok512.bin     llama2.c tokenizer.bin (512 tokens, synthetic BPE vocab)
  tiny.bin       llama2.c legacy (v0) checkpoint, dim=64  hidden=176 L=2 H=4 KV=4 V=512 seq=256, shared cls
  tiny-gqa.bin   same but n_kv_heads=2
  tiny-h192.bin  as tiny.bin but hidden=192 (multiple of 32, so Q8_0/Q4_0 work)
  small.bin      dim=256 hidden=768 L=2 H=4 KV=4 V=512 seq=256, shared cls
  vocab512.txt   human-readable listing of the vocabulary (id, score, repr)

tokenizer.bin format (llama2.c tokenizer.py export):
  u32 max_token_length; then per token: f32 score, i32 len, len bytes.
  bos -> "\n<s>\n", eos -> "\n</s>\n", U+2581 replaced by ' '.

legacy checkpoint format (llama2.c export.py legacy_export / run.c):
  7 x i32 header (dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len)
  (vocab_size positive => classifier shared with token embedding), then f32 arrays:
  token_embedding[V,D], rms_att[L,D], wq[L,D,D], wk[L,KV,D], wv[L,KV,D], wo[L,D,D],
  rms_ffn[L,D], w1[L,H,D], w2[L,D,H], w3[L,H,D], rms_final[D],
  freq_cis_real[seq,hs/2], freq_cis_imag[seq,hs/2], [wcls[V,D] if not shared]
  (matrices are row-major [out][in], as run.c's matmul(xout, x, w, n=in, d=out) reads them)
"""
import os
import re
import struct
import sys
from collections import Counter

import numpy as np

OUT = sys.argv[1] if len(sys.argv) > 1 else "."  # where the files go
VOCAB_SIZE = 512
N_PIECES = VOCAB_SIZE - 3 - 256  # 253
GAIN = 2.0      # matrix weights ~ N(0, (GAIN/sqrt(fan_in))^2)
EMB_STD = 0.2   # token embedding (= shared classifier) ~ N(0, 0.2^2)
NORM_STD = 0.1  # rmsnorm weights ~ 1 + N(0, 0.1^2)

CORPUS = """
Once upon a time, there was a little girl named Lily. She loved to play in the park with her friends.
One day, the cat sat on the mat and looked at the sun. The dog ran to the tree and the bird sang a song.
Tom and Lily went to the big house. They saw a red ball in the garden. Lily said, "Can I have the ball?"
Her mom smiled and said, "Yes, you can play with it." The children were happy and they played all day.
There was a small boy who wanted to find a treasure. He looked under the bed and in the box, but it was not there.
Then he went outside and saw his friend. They talked and laughed, and then they went home for dinner.
The sun was shining and the sky was blue. Everyone in the town was happy. The end.
"""

# single-character base pieces (each also reachable via byte fallback)
BASE_CHARS = (
    [" "]
    + [chr(c) for c in range(ord("a"), ord("z") + 1)]
    + [chr(c) for c in range(ord("A"), ord("Z") + 1)]
    + list(".,!?'\"-:;")
)


def train_bpe(text, n_merges):
    """Word-level BPE (pieces never contain an inner space; a space may only lead)."""
    words = re.findall(r" ?[A-Za-z]+| ?[^A-Za-z ]", " " + " ".join(text.split()))
    wc = Counter(tuple(w) for w in words)
    vocab = set(BASE_CHARS)
    merges = []
    while len(merges) < n_merges:
        pairs = Counter()
        for w, c in wc.items():
            for a, b in zip(w, w[1:]):
                if a + b not in vocab:
                    pairs[(a, b)] += c
        if not pairs:
            break
        # deterministic: highest count, then lexicographic
        (a, b), _ = min(pairs.items(), key=lambda kv: (-kv[1], kv[0]))
        m = a + b
        merges.append((a, b, m))
        vocab.add(m)
        nwc = Counter()
        for w, c in wc.items():
            out = []
            i = 0
            while i < len(w):
                if i + 1 < len(w) and w[i] == a and w[i + 1] == b:
                    out.append(m)
                    i += 2
                else:
                    out.append(w[i])
                    i += 1
            nwc[tuple(out)] += c
        wc = nwc
    return merges


def build_vocab():
    merges = train_bpe(CORPUS, N_PIECES - len(BASE_CHARS))
    pieces = list(BASE_CHARS) + [m for (_, _, m) in merges]
    assert len(pieces) == N_PIECES, len(pieces)
    assert len(set(pieces)) == N_PIECES
    known = set(BASE_CHARS)
    for a, b, m in merges:  # every merged piece is a concat of two earlier pieces
        assert a in known and b in known
        known.add(m)
    toks = [("<unk>", 0.0), ("\n<s>\n", 0.0), ("\n</s>\n", 0.0)]
    toks += [("<0x%02X>" % i, 0.0) for i in range(256)]
    toks += [(p, float(-i)) for i, p in enumerate(pieces)]  # decreasing scores 0, -1, -2, ...
    assert len(toks) == VOCAB_SIZE
    return toks


def write_tokenizer(path, toks):
    bs = [t.encode("utf-8") for t, _ in toks]
    with open(path, "wb") as f:
        f.write(struct.pack("<I", max(len(b) for b in bs)))
        for b, (_, s) in zip(bs, toks):
            f.write(struct.pack("<fi", s, len(b)))
            f.write(b)


def write_checkpoint(path, dim, hidden, n_layers, n_heads, n_kv_heads, vocab, seq_len, seed):
    rng = np.random.default_rng(seed)
    hs = dim // n_heads
    kv_dim = hs * n_kv_heads

    # std = GAIN/sqrt(fan_in) (0.25 for fan_in 64, 0.15 for 176, 0.125 for 256, 0.072 for 768).
    # Smaller weights (std 0.02..0.1) make the tied-embedding model repeat one token forever
    # under greedy decoding (the current token's own embedding dominates the residual stream).
    def mat(*shape, fan_in):
        std = GAIN / np.sqrt(fan_in)
        return rng.normal(0.0, std, size=shape).astype(np.float32)

    def norm(*shape):
        return (1.0 + NORM_STD * rng.normal(size=shape)).astype(np.float32)

    emb_std = EMB_STD
    arrays = [
        rng.normal(0.0, emb_std, size=(vocab, dim)).astype(np.float32),  # token_embedding
        norm(n_layers, dim),                                               # rms_att
        mat(n_layers, dim, dim, fan_in=dim),                               # wq
        mat(n_layers, kv_dim, dim, fan_in=dim),                            # wk
        mat(n_layers, kv_dim, dim, fan_in=dim),                            # wv
        mat(n_layers, dim, dim, fan_in=dim),                               # wo
        norm(n_layers, dim),                                               # rms_ffn
        mat(n_layers, hidden, dim, fan_in=dim),                            # w1
        mat(n_layers, dim, hidden, fan_in=hidden),                         # w2
        mat(n_layers, hidden, dim, fan_in=dim),                            # w3
        norm(dim),                                                         # rms_final
    ]
    freqs = 1.0 / (10000.0 ** (np.arange(0, hs, 2, dtype=np.float64) / hs))
    ang = np.outer(np.arange(seq_len, dtype=np.float64), freqs)
    arrays.append(np.cos(ang).astype(np.float32))                          # freq_cis_real
    arrays.append(np.sin(ang).astype(np.float32))                          # freq_cis_imag
    with open(path, "wb") as f:
        # positive vocab_size => shared classifier
        f.write(struct.pack("<7i", dim, hidden, n_layers, n_heads, n_kv_heads, vocab, seq_len))
        for a in arrays:
            f.write(np.ascontiguousarray(a, dtype="<f4").tobytes())


def main():
    toks = build_vocab()
    write_tokenizer(os.path.join(OUT, "tok512.bin"), toks)
    with open(os.path.join(OUT, "vocab512.txt"), "w") as f:
        for i, (t, s) in enumerate(toks):
            f.write("%d\t%g\t%r\n" % (i, s, t))
    write_checkpoint(os.path.join(OUT, "tiny.bin"), 64, 176, 2, 4, 4, VOCAB_SIZE, 256, seed=1234)
    write_checkpoint(os.path.join(OUT, "tiny-gqa.bin"), 64, 176, 2, 4, 2, VOCAB_SIZE, 256, seed=1235)
    write_checkpoint(os.path.join(OUT, "small.bin"), 256, 768, 2, 4, 4, VOCAB_SIZE, 256, seed=1236)
    # hidden_dim=176 is not a multiple of 32, so llama-quantize cannot make Q8_0/Q4_0 of tiny.bin
    # (ffn_down rows have 176 columns); tiny-h192 is the same shape but hidden_dim=192.
    write_checkpoint(os.path.join(OUT, "tiny-h192.bin"), 64, 192, 2, 4, 4, VOCAB_SIZE, 256, seed=1237)
    for n in ("tok512.bin", "tiny.bin", "tiny-gqa.bin", "small.bin", "tiny-h192.bin"):
        print(n, os.path.getsize(os.path.join(OUT, n)))


if __name__ == "__main__":
    sys.exit(main())
