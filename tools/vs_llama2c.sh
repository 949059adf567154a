#!/bin/sh
# vs_llama2c.sh: decode speed of linattn against llama2.c's run.c, same machine, same run.
#
#   tools/vs_llama2c.sh [BUILD_DIR]        (default: build)
#
# Builds run.c (from $LLAMA2C_RUN_C, else the llama2.c mirror, else
# $LLAMA2C_DIR/run.c) with `gcc -Ofast -march=native -fopenmp`, writes random
# legacy llama2.c checkpoints of the stories15M and stories42M shapes (and a
# minimal valid tokenizer.bin of 32000 entries) into a temporary folder that
# is removed at the end (nothing is committed), then times 256 decoded
# positions at temperature 0 with 1 thread (pinned, see PIN1) and 2 threads:
# run.c's "achieved tok/s" beside `linattn generate --stats` (the decode tokens/s) on the same
# checkpoints, loaded as `weights = llama2c:PATH`, with softmax attention
# (the checkpoint as trained) and linear attention, and the same weights as
# an F16 safetensors file and as int8 (tools/convert_dtype.py --dtype q8;
# softmax, used as stored). Prints the ratios, the
# weight bytes each token reads and the memory-bandwidth floor from
# `linattn-bench --suite bandwidth` (triad).
#
# Environment: PY (default /usr/bin/python3, with numpy), REPEAT (runs per
# figure, best kept; default 3), SIZES (default "15m 42m").
set -eu

BUILD=${1:-build}
PY=${PY:-/usr/bin/python3}
REPEAT=${REPEAT:-3}
SIZES=${SIZES:-"15m 42m"}
LINATTN=$BUILD/linattn
BENCH=$BUILD/bench/linattn-bench
[ -x "$LINATTN" ] || { echo "vs_llama2c: $LINATTN not built" >&2; exit 1; }

TMP=$(mktemp -d "${TMPDIR:-/tmp}/vs-llama2c.XXXXXX")
[ -n "${KEEP:-}" ] || trap 'rm -rf "$TMP"' EXIT INT TERM

# --- run.c ---------------------------------------------------------------
MIRROR=/work/.mirror/karpathy+llama2.c/repo
if [ -n "${LLAMA2C_RUN_C:-}" ]; then
    cp "$LLAMA2C_RUN_C" "$TMP/run.c"
elif [ -d "$MIRROR" ]; then
    git --git-dir="$MIRROR" show HEAD:run.c > "$TMP/run.c"
elif [ -n "${LLAMA2C_DIR:-}" ]; then
    cp "$LLAMA2C_DIR/run.c" "$TMP/run.c"
else
    echo "vs_llama2c: no run.c (set LLAMA2C_RUN_C or LLAMA2C_DIR)" >&2
    exit 1
fi
gcc -Ofast -march=native -fopenmp "$TMP/run.c" -lm -o "$TMP/run"

# --- checkpoints and tokenizer -------------------------------------------
"$PY" - "$TMP" $SIZES <<'EOF'
import json, struct, sys
import numpy as np

out, sizes = sys.argv[1], sys.argv[2:]
shapes = {"15m": (288, 768, 6, 6, 6, 32000, 256), "42m": (512, 1376, 8, 8, 8, 32000, 1024)}
rng = np.random.default_rng(1)
for name in sizes:
    dim, hid, L, H, G, V, seq = shapes[name]
    hs = dim // H
    with open(f"{out}/{name}.bin", "wb") as f:
        f.write(struct.pack("7i", dim, hid, L, H, G, V, seq))  # V > 0: shared classifier

        def w(*shape, scale=None, ones=False):
            if ones:
                a = np.ones(shape, np.float32)
            else:
                s = scale if scale is not None else shape[-1] ** -0.5
                a = (rng.standard_normal(shape, dtype=np.float32) * s).astype(np.float32)
            f.write(a.astype("<f4").tobytes())
            return a

        emb = (rng.standard_normal((V, dim), dtype=np.float32) * 0.5).astype(np.float32)
        emb[1] = 0  # token 1 (BOS) never wins the argmax: run.c stops at it
        f.write(emb.astype("<f4").tobytes())
        ra = w(L, dim, ones=True)               # rms_att
        wq = w(L, dim, dim)                     # wq
        wk = w(L, G * hs, dim)                  # wk
        wv = w(L, G * hs, dim)                  # wv
        wo = w(L, dim, dim)                     # wo
        rf = w(L, dim, ones=True)               # rms_ffn
        w1 = w(L, hid, dim)                     # w1
        w2 = w(L, dim, hid)                     # w2
        w3 = w(L, hid, dim)                     # w3
        rn = w(dim, ones=True)                  # rms_final
        f.write(np.zeros(seq * hs, "<f4").tobytes())  # the old freq_cis_real and _imag
    # The same weights under linattn's names with F16 matrices (norm weights
    # F32): what linattn runs as stored, beside llama2.c's fp32.
    t = {"tok_emb.weight": emb.astype("<f2"), "norm_f.weight": rn}
    for l in range(L):
        t.update({f"layers.{l}.norm1.weight": ra[l], f"layers.{l}.norm2.weight": rf[l],
                  f"layers.{l}.attn.q.weight": wq[l].astype("<f2"),
                  f"layers.{l}.attn.k.weight": wk[l].astype("<f2"),
                  f"layers.{l}.attn.v.weight": wv[l].astype("<f2"),
                  f"layers.{l}.attn.o.weight": wo[l].astype("<f2"),
                  f"layers.{l}.ffn.gate.weight": w1[l].astype("<f2"),
                  f"layers.{l}.ffn.down.weight": w2[l].astype("<f2"),
                  f"layers.{l}.ffn.up.weight": w3[l].astype("<f2")})
    head, blobs, at = {}, [], 0
    for k, a in t.items():
        b = np.ascontiguousarray(a).tobytes()
        head[k] = {"dtype": "F16" if a.dtype == np.float16 else "F32",
                   "shape": list(a.shape), "data_offsets": [at, at + len(b)]}
        blobs.append(b)
        at += len(b)
    hj = json.dumps(head).encode()
    hj += b" " * (-len(hj) % 8)
    with open(f"{out}/{name}-f16.safetensors", "wb") as g:
        g.write(struct.pack("<Q", len(hj)) + hj + b"".join(blobs))
    with open(f"{out}/{name}-f16.ini", "w") as g:
        g.write(f"[model]\nweights = {name}-f16.safetensors\nattention = softmax\n"
                f"vocab_size = {V}\nd_model = {dim}\nn_heads = {H}\nn_kv_heads = {G}\n"
                f"n_layers = {L}\nd_ff = {hid}\nnorm = rmsnorm\nffn = swiglu\n"
                f"positions = rope\nbias = false\nmax_seq_len = {seq}\ntie_embeddings = true\n")
# run.c's tokenizer.bin: max_token_length, then per token: score, length, bytes
with open(f"{out}/tokenizer.bin", "wb") as f:
    # byte fallbacks at 3..258 as in llama's; " " for the prompt's dummy prefix
    pieces = [b"<unk>", b"<s>", b"</s>"] + [b"<0x%02X>" % i for i in range(256)] + [b" "]
    pieces += [b"t%d" % i for i in range(len(pieces), 32000)]
    f.write(struct.pack("i", max(len(p) for p in pieces)))
    for i, p in enumerate(pieces):
        f.write(struct.pack("fi", -float(i), len(p)) + p)
EOF
for size in $SIZES; do
    "$PY" "$(dirname "$0")/convert_dtype.py" "$TMP/$size-f16.safetensors" \
        "$TMP/$size-q8.safetensors" --dtype q8
    sed "s/$size-f16.safetensors/$size-q8.safetensors/" "$TMP/$size-f16.ini" > "$TMP/$size-q8.ini"
done

# --- timing ----------------------------------------------------------------
# One figure of each program per round, rounds in turn (a passing load hits
# them alike); the best round of each is kept.
# One-thread runs are pinned to the CPU linattn-bench picks for its
# single-thread figures (its --cpu auto probe), both programs alike: on a
# shared VM the two vCPUs can differ by 10-30%, and an unpinned run lands on
# either. Two-thread runs use every CPU.
PIN1=
pin() { # threads
    if [ "$1" = 1 ] && [ -n "$PIN1" ]; then echo "taskset -c $PIN1"; fi
}
llama2c_tps() { # size threads
    OMP_NUM_THREADS=$2 $(pin "$2") "$TMP/run" "$TMP/$1.bin" -z "$TMP/tokenizer.bin" -t 0 -n 256 -i "a" \
        2>&1 >/dev/null | sed -n 's/^achieved tok\/s: \([0-9.]*\).*/\1/p'
}
linattn_tps() { # size threads attention
    OMP_NUM_THREADS=$2 $(pin "$2") "$LINATTN" generate "$TMP/$1-$3.ini" --temperature 0 -n 255 -p "a" \
        --stats --threads "$2" 2>&1 >/dev/null |
        sed -n 's/.*decode [0-9]* tokens \([0-9.]*\) tokens\/s.*/\1/p'
}
best() { sort -g | tail -1; }

TRIAD1=; TRIAD2=
if [ -x "$BENCH" ]; then
    "$BENCH" --suite bandwidth --threads 1,2 --csv "$TMP/bw.csv" >/dev/null 2>&1 || true
    if [ -f "$TMP/bw.csv" ]; then
        PIN1=$(sed -n 's/^# cpu_single_thread: \([0-9][0-9]*\).*/\1/p' "$TMP/bw.csv")
        command -v taskset >/dev/null 2>&1 || PIN1=
        TRIAD1=$(grep -v '^#' "$TMP/bw.csv" | awk -F, '/triad/ && $4 == 1 {print $6; exit}')
        TRIAD2=$(grep -v '^#' "$TMP/bw.csv" | awk -F, '/triad/ && $4 == 2 {print $6; exit}')
    fi
fi
echo "memory bandwidth (triad): ${TRIAD1:-?} GB/s at 1 thread, ${TRIAD2:-?} GB/s at 2"
echo "one-thread runs on CPU ${PIN1:-any (not pinned)}"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"

printf '%-5s %-7s %-10s %-10s %-10s %-10s %-10s %-7s %-7s %-7s %-7s %-9s %s\n' model threads \
    "llama2.c" "linattn-sm" "linattn-li" "sm-f16" "sm-q8" "sm/l2c" "li/l2c" "f16/l2c" "q8/l2c" \
    "MB/token" "floor tok/s (triad), softmax at"
for size in $SIZES; do
    for att in softmax linear; do
        printf '[model]\nweights = llama2c:%s.bin\nattention = %s\n' "$size" "$att" \
            > "$TMP/$size-$att.ini"
    done
    bytes=$("$LINATTN" info "$TMP/$size-softmax.ini" |
            sed -n 's/.*weight bytes: *\([0-9][0-9]*\).*/\1/p' | head -1)
    for t in 1 2; do
        : > "$TMP/r"
        for _ in $(seq "$REPEAT"); do
            echo "a $(llama2c_tps "$size" "$t")" >> "$TMP/r"
            echo "b $(linattn_tps "$size" "$t" softmax)" >> "$TMP/r"
            echo "c $(linattn_tps "$size" "$t" linear)" >> "$TMP/r"
            echo "d $(linattn_tps "$size" "$t" f16)" >> "$TMP/r"
            echo "e $(linattn_tps "$size" "$t" q8)" >> "$TMP/r"
        done
        a=$(awk '$1 == "a" {print $2}' "$TMP/r" | best)
        b=$(awk '$1 == "b" {print $2}' "$TMP/r" | best)
        c=$(awk '$1 == "c" {print $2}' "$TMP/r" | best)
        d=$(awk '$1 == "d" {print $2}' "$TMP/r" | best)
        e=$(awk '$1 == "e" {print $2}' "$TMP/r" | best)
        tri=$([ "$t" = 1 ] && echo "${TRIAD1:-}" || echo "${TRIAD2:-}")
        awk -v s="$size" -v t="$t" -v a="${a:-0}" -v b="${b:-0}" -v c="${c:-0}" -v d="${d:-0}" \
            -v e="${e:-0}" -v by="${bytes:-0}" -v tri="${tri:-0}" 'BEGIN {
            floor = (by > 0 && tri > 0) ? tri * 1e9 / by : 0;
            printf "%-5s %-7s %-10.1f %-10.1f %-10.1f %-10.1f %-10.1f %-7.2f %-7.2f %-7.2f %-7.2f %-9.1f %s\n",
                   s, t, a, b, c, d, e, (a > 0 ? b / a : 0), (a > 0 ? c / a : 0),
                   (a > 0 ? d / a : 0), (a > 0 ? e / a : 0), by / 1e6,
                   (floor > 0 ? sprintf("%.1f, %.0f%%", floor, 100 * b / floor) : "?")
        }'
    done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
