#!/usr/bin/env python3
"""Writes the seed corpus of fuzz_llama2c (tests/fuzz/corpus/llama2c/): tiny valid llama2.c
checkpoints (legacy shared, legacy unshared, version 1) with a tokenizer.bin, each laid out as
the target reads its input: u32 LE (checkpoint length | softmax << 31), checkpoint, tokenizer."""
import os
import random
import struct
import sys

DIM, HID, L, H, KV, V, SEQ = 8, 16, 1, 2, 2, 264, 8


def floats(n, rng):
    return struct.pack('<%df' % n, *[rng.uniform(-0.3, 0.3) for _ in range(n)])


def weights(shared, legacy, rng):
    hs = DIM // H
    n = V * DIM + L * DIM + L * DIM * DIM + 2 * L * hs * KV * DIM + L * DIM * DIM + L * DIM \
        + 3 * L * HID * DIM + DIM
    if legacy:
        n += SEQ * hs // 2 * 2       # freq_cis_real and _imag
    if not shared:
        n += V * DIM
    return floats(n, rng)


def checkpoint(shared, legacy, rng):
    if legacy:
        head = struct.pack('<7i', DIM, HID, L, H, KV, V if shared else -V, SEQ)
    else:
        head = struct.pack('<Ii7iB', 0x616b3432, 1, DIM, HID, L, H, KV, V, SEQ, 1 if shared else 0)
        head += b'\0' * (256 - len(head))
    return head + weights(shared, legacy, rng)


def tokenizer():
    ent = [(0.0, b'<unk>'), (0.0, b'\n<s>\n'), (0.0, b'\n</s>\n')]
    ent += [(0.0, b'<0x%02X>' % b) for b in range(256)]
    ent += [(-1.0, b' '), (-2.0, b'l'), (-3.0, b'o'), (-1.5, b'lo'), (-0.5, b' lo')]
    assert len(ent) == V
    out = struct.pack('<I', max(len(p) for _, p in ent))
    for s, p in ent:
        out += struct.pack('<fi', s, len(p)) + p
    return out


def main():
    d = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), 'corpus', 'llama2c')
    os.makedirs(d, exist_ok=True)
    rng = random.Random(1)
    tok = tokenizer()
    for name, shared, legacy, softmax in [('legacy-shared-linear', 1, 1, 0),
                                          ('legacy-unshared-softmax', 0, 1, 1),
                                          ('v1-shared-softmax', 1, 0, 1),
                                          ('v1-unshared-linear', 0, 0, 0)]:
        ck = checkpoint(shared, legacy, rng)
        with open(os.path.join(d, name + '.bin'), 'wb') as f:
            f.write(struct.pack('<I', len(ck) | softmax << 31) + ck + tok)


main()
