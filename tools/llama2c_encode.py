#!/usr/bin/env python3
"""llama2c_encode.py: run.c's encode, re-done in plain Python, to check linattn's llama2c tokenizer.

Reads a llama2.c tokenizer.bin (u32 max_token_length, then per token f32
score, i32 length, bytes; little-endian; every token to the end of the file)
and prints the ids of each text given, one line of space-separated ids per
text. The algorithm is run.c's as written: BOS (1) when asked, a dummy " "
when the text is not empty, UTF-8 code points (at most 4 bytes) looked up or
sent as byte tokens (byte + 3), then the adjacent pair whose joined string
has the best score merges, the leftmost on ties, until none does; a score
must beat -1e10. Quadratic, for checking only.

    tools/llama2c_encode.py tokenizer.bin [--bos] TEXT ...
"""
import struct
import sys


def read_tokenizer(path):
    data = open(path, "rb").read()
    (max_len,) = struct.unpack_from("<I", data, 0)
    pos, pieces, scores = 4, [], []
    while pos < len(data):
        score, n = struct.unpack_from("<fi", data, pos)
        pieces.append(data[pos + 8:pos + 8 + n])
        scores.append(score)
        pos += 8 + n
    return max_len, pieces, scores


def encode(pieces, scores, text, bos):
    index = {}
    for i, p in enumerate(pieces):
        index.setdefault(p, i)  # a repeated string: the first id (linattn's rule)
    ids = [1] if bos else []
    if text:
        ids.append(index.get(b" ", ord(" ") + 3))
    i = 0
    while i < len(text):
        j = i + 1
        while j < len(text) and j - i < 4 and (text[j] & 0xC0) == 0x80:
            j += 1
        chunk = text[i:j]
        if chunk in index:
            ids.append(index[chunk])
        else:
            ids.extend(b + 3 for b in chunk)
        i = j
    while True:
        best, best_id, best_at = -1e10, -1, -1
        for k in range(len(ids) - 1):
            m = index.get(pieces[ids[k]] + pieces[ids[k + 1]])
            if m is not None and scores[m] > best:
                best, best_id, best_at = scores[m], m, k
        if best_at < 0:
            return ids
        ids[best_at:best_at + 2] = [best_id]


def main(argv):
    if len(argv) < 2:
        sys.exit(__doc__)
    bos = "--bos" in argv
    args = [a for a in argv[1:] if a != "--bos"]
    _, pieces, scores = read_tokenizer(args[0])
    for text in args[1:]:
        print(" ".join(map(str, encode(pieces, scores, text.encode("utf-8", "surrogateescape"),
                                       bos))))


if __name__ == "__main__":
    main(sys.argv)
