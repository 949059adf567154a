#!/bin/sh
# vs_llamacpp.sh: decode and prefill speed of linattn against llama.cpp on the
# same GGUF files, same machine, same run.
#
#   tools/vs_llamacpp.sh [BUILD_DIR]        (default: build)
#
# Writes random llama2.c checkpoints (legacy v0, weights N(0, (2/sqrt(fan_in))^2),
# embedding std 0.2, norms 1 + N(0, 0.1^2)) of the stories15M shape (dim 288,
# hidden 768, 6 layers, 6 heads), the stories42M shape (512, 1376, 8, 8) and a
# d=2048 shape (2048, 5632, 2 layers, 16 heads), all vocab 32000, and a
# 32000-token tokenizer.bin (byte tokens at 3..258, the rest synthetic unique
# pieces) into a temporary folder removed at the end (KEEP=1 keeps it).
# Converts each with llama.cpp's llama-convert-llama2c-to-ggml to F32 GGUF
# (rope.dimension_count patched to the head size: the converter writes
# min(64, head size), a partial rotation linattn refuses; d=2048 has heads of
# 128), then llama-quantize to F16 Q8_0 Q4_0 Q4_K_M Q5_K_M Q6_K, and prints
# the type each tensor got (K-quants need rows that are multiples of 256:
# llama-quantize falls back to other types otherwise).
#
# Decode: for each file, at 1 thread (pinned: taskset -c $PIN1, both programs)
# and 2 threads, REPEAT rounds of, in turn,
#     linattn generate -n 128 (K/V cache f16, as llama.cpp's default)
#     llama-bench -p 0 -n 128 -r LB_REPS           (tg128)
#     linattn generate -n 128 (K/V cache f32, linattn's default)
# Each figure is the median of its timed 128-token runs (linattn: the decode
# tokens/s of --stats, one per round; llama.cpp: llama-bench's samples_ts,
# LB_REPS per round). Ratios are linattn / llama.cpp. Beside them: the weight
# bytes one token reads (every tensor but token_embd, which is read one row a
# token) and the floor tokens/s that STREAM triad bandwidth allows
# (linattn-bench --suite bandwidth, best of its runs, 1 thread on $PIN1;
# measured before and after the timing, the higher kept), each program's share
# of it, the spread of each median's figures and the load average.
# Prefill: for PREFILL_TYPES, llama-bench -p 512 -n 0 against linattn's
# prefill tokens/s of a 512-token prompt (BOS, the space prefix and 510 byte
# tokens), -n 0, K/V cache f16, same rounds.
#
# Environment: LLAMACPP_BIN (default /work/llamacpp/build/bin), PY (default
# /usr/bin/python3, with numpy), REPEAT (rounds, default 3), LB_REPS
# (llama-bench -r, default 3), SHAPES (default "15m 42m d2048"), TYPES
# (default "F32 F16 Q8_0 Q4_0 Q4_K_M Q5_K_M Q6_K"), PREFILL_TYPES (default
# "F32 F16 Q8_0 Q4_0 Q4_K_M"), THREADS (default "1 2"), NO_2T (shapes without
# 2-thread runs, default none), KV32 (1: the f32-cache linattn column, default 1),
# RAW (a file for every round's figure: phase shape type threads program t/s),
# PIN1 (CPU of 1-thread runs, default 1), KEEP (keep the temporary folder).
#
# Streams stepped together (issue 20), when NPL is set (e.g. NPL="1 8 32 128"):
# for BATCHED_TYPES (default F32) of the 15m shape, at each of $THREADS,
# llama-batched-bench -npp 128 -ntg 128 -npl $NPL (its defaults otherwise:
# f16 K/V cache, one unified cache of every sequence; S_TG, the aggregate
# generation tokens/s) against linattn-bench's step<N> rows on the same file
# (N streams each fed its own 128-token prompt, then 128 sessions_step
# calls; K/V cache f16; the median over REPEAT runs). Skips the decode and
# prefill phases when ONLY_BATCHED=1.
set -eu

BUILD=${1:-build}
LLAMACPP_BIN=${LLAMACPP_BIN:-/work/llamacpp/build/bin}
PY=${PY:-/usr/bin/python3}
REPEAT=${REPEAT:-3}
LB_REPS=${LB_REPS:-3}
SHAPES=${SHAPES:-"15m 42m d2048"}
TYPES=${TYPES:-"F32 F16 Q8_0 Q4_0 Q4_K_M Q5_K_M Q6_K"}
PREFILL_TYPES=${PREFILL_TYPES:-"F32 F16 Q8_0 Q4_0 Q4_K_M"}
THREADS=${THREADS:-"1 2"}
NO_2T=${NO_2T:-}
KV32=${KV32:-1}
PIN1=${PIN1:-1}
NGEN=128
NPROMPT=512
LINATTN=$BUILD/linattn
BENCH=$BUILD/bench/linattn-bench
LB=$LLAMACPP_BIN/llama-bench
[ -x "$LINATTN" ] || { echo "vs_llamacpp: $LINATTN not built" >&2; exit 1; }
NPL=${NPL:-}
BATCHED_TYPES=${BATCHED_TYPES:-F32}
ONLY_BATCHED=${ONLY_BATCHED:-0}
for b in llama-bench llama-convert-llama2c-to-ggml llama-quantize ${NPL:+llama-batched-bench}; do
    [ -x "$LLAMACPP_BIN/$b" ] || { echo "vs_llamacpp: no $LLAMACPP_BIN/$b" >&2; exit 1; }
done
command -v taskset >/dev/null 2>&1 || PIN1=

TMP=$(mktemp -d "${TMPDIR:-/tmp}/vs-llamacpp.XXXXXX")
[ -n "${KEEP:-}" ] || trap 'rm -rf "$TMP"' EXIT INT TERM
T0=$(date +%s)

# --- helper: checkpoints, tokenizer, GGUF tensor types and bytes -----------
cat > "$TMP/helper.py" <<'EOF'
import struct, sys
from collections import Counter, OrderedDict
import numpy as np

# dim, hidden, layers, heads, kv heads, vocab, seq
SHAPES = {"15m": (288, 768, 6, 6, 6, 32000, 256),
          "42m": (512, 1376, 8, 8, 8, 32000, 1024),
          "d2048": (2048, 5632, 2, 16, 16, 32000, 256)}

def make(out, names):
    rng = np.random.default_rng(1)
    for name in names:
        dim, hid, L, H, G, V, seq = SHAPES[name]
        hs = dim // H
        with open(f"{out}/{name}.bin", "wb") as f:
            f.write(struct.pack("<7i", dim, hid, L, H, G, V, seq))  # V > 0: shared classifier
            def put(a):
                f.write(np.ascontiguousarray(a, dtype="<f4").tobytes())
            def mat(*shape):  # [.., out, in]: N(0, (2/sqrt(fan_in))^2)
                a = rng.standard_normal(shape, dtype=np.float32)
                a *= np.float32(2.0 / np.sqrt(shape[-1]))
                put(a)
            def norm(*shape):
                put(1.0 + 0.1 * rng.standard_normal(shape, dtype=np.float32))
            put(0.2 * rng.standard_normal((V, dim), dtype=np.float32))  # token embedding
            norm(L, dim)                       # rms_att
            mat(L, dim, dim)                   # wq
            mat(L, G * hs, dim)                # wk
            mat(L, G * hs, dim)                # wv
            mat(L, dim, dim)                   # wo
            norm(L, dim)                       # rms_ffn
            mat(L, hid, dim)                   # w1 (gate)
            mat(L, dim, hid)                   # w2 (down)
            mat(L, hid, dim)                   # w3 (up)
            norm(dim)                          # rms_final
            f.write(np.zeros(seq * hs, "<f4").tobytes())  # freq_cis_real, _imag (unused)
    # llama2.c's tokenizer.bin: max_token_length, then per token: score, length, bytes
    with open(f"{out}/tokenizer.bin", "wb") as f:
        pieces = [b"<unk>", b"<s>", b"</s>"] + [b"<0x%02X>" % i for i in range(256)] + [b" "]
        pieces += [b"t%d" % i for i in range(len(pieces), 32000)]
        assert len(set(pieces)) == 32000
        f.write(struct.pack("<i", max(len(p) for p in pieces)))
        for i, p in enumerate(pieces):
            f.write(struct.pack("<fi", -float(i), len(p)) + p)

# ggml type: name, block elements, block bytes
GG = {0: ("F32", 1, 4), 1: ("F16", 1, 2), 2: ("Q4_0", 32, 18), 3: ("Q4_1", 32, 20),
      6: ("Q5_0", 32, 22), 7: ("Q5_1", 32, 24), 8: ("Q8_0", 32, 34), 9: ("Q8_1", 32, 36),
      10: ("Q2_K", 256, 84), 11: ("Q3_K", 256, 110), 12: ("Q4_K", 256, 144),
      13: ("Q5_K", 256, 176), 14: ("Q6_K", 256, 210), 15: ("Q8_K", 256, 292), 30: ("BF16", 1, 2)}
SZ = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}

def read_gguf(path):
    kv, tensors = {}, []
    with open(path, "rb") as f:
        assert f.read(4) == b"GGUF", path
        _, nt, nkv = struct.unpack("<IQQ", f.read(20))
        def rstr():
            n, = struct.unpack("<Q", f.read(8))
            return f.read(n)
        def rval(t):
            if t == 8:
                return rstr()
            if t == 9:
                et, n = struct.unpack("<IQ", f.read(12))
                if et == 8:
                    for _ in range(n):
                        m, = struct.unpack("<Q", f.read(8)); f.seek(m, 1)
                else:
                    f.seek(struct.calcsize(SZ[et]) * n, 1)
                return None
            return struct.unpack("<" + SZ[t], f.read(struct.calcsize(SZ[t])))[0]
        for _ in range(nkv):
            k = rstr().decode()
            t, = struct.unpack("<I", f.read(4))
            pos = f.tell()
            kv[k] = (t, pos, rval(t))
        for _ in range(nt):
            name = rstr().decode()
            nd, = struct.unpack("<I", f.read(4))
            dims = struct.unpack(f"<{nd}Q", f.read(8 * nd))
            typ, _ = struct.unpack("<IQ", f.read(12))
            n = int(np.prod(dims))
            tname, be, bb = GG.get(typ, (f"type{typ}", 1, 0))
            tensors.append((name, dims, tname, n // be * bb))
    return kv, tensors

def patch_rope(path, head):
    kv, _ = read_gguf(path)
    t, pos, v = kv["llama.rope.dimension_count"]
    assert t == 4
    if v != head:
        with open(path, "r+b") as f:
            f.seek(pos); f.write(struct.pack("<I", head))
    print(f"rope.dimension_count {v} -> {head}" if v != head else f"rope.dimension_count {v}")

def token_bytes(path):  # weight bytes one decoded token reads
    _, ts = read_gguf(path)
    tot = 0
    for name, dims, _, nb in ts:
        tot += nb // dims[-1] if name == "token_embd.weight" else nb
    print(tot)

def types(path):  # tensor class: its types (with counts over the layers)
    _, ts = read_gguf(path)
    cls = OrderedDict()
    for name, dims, tn, _ in ts:
        if len(dims) < 2:
            continue  # the norms: always F32
        c = name.split(".")[2] if name.startswith("blk.") else name.split(".")[0]
        cls.setdefault(c, Counter())[tn] += 1
    order = ["token_embd", "output", "attn_q", "attn_k", "attn_v", "attn_output",
             "ffn_gate", "ffn_up", "ffn_down"]
    out = []
    for c in order + [c for c in cls if c not in order]:
        if c in cls:
            out.append(c + " " + "+".join(f"{t}" if n == 1 or len(cls[c]) == 1 else f"{t}x{n}"
                                           for t, n in sorted(cls[c].items())))
        # one type over all layers: the type alone; mixed: each with its count
    print(", ".join(out))

cmd = sys.argv[1]
if cmd == "make":
    make(sys.argv[2], sys.argv[3:])
elif cmd == "patch":
    patch_rope(sys.argv[2], int(sys.argv[3]))
elif cmd == "bytes":
    token_bytes(sys.argv[2])
elif cmd == "types":
    types(sys.argv[2])
EOF

head_size() { case $1 in 15m) echo 48 ;; 42m) echo 64 ;; d2048) echo 128 ;; esac; }

echo "== files"
# shellcheck disable=SC2086
"$PY" "$TMP/helper.py" make "$TMP" $SHAPES
for s in $SHAPES; do
    "$LLAMACPP_BIN/llama-convert-llama2c-to-ggml" --copy-vocab-from-model "$TMP/tokenizer.bin" \
        --llama2c-model "$TMP/$s.bin" --llama2c-output-model "$TMP/$s-F32.gguf" \
        > "$TMP/convert-$s.log" 2>&1 || { echo "convert $s failed" >&2; tail "$TMP/convert-$s.log" >&2; exit 1; }
    rm -f "$TMP/$s.bin"
    echo "$s: $("$PY" "$TMP/helper.py" patch "$TMP/$s-F32.gguf" "$(head_size "$s")")"
    for ty in $TYPES; do
        [ "$ty" = F32 ] && continue
        "$LLAMACPP_BIN/llama-quantize" "$TMP/$s-F32.gguf" "$TMP/$s-$ty.gguf" "$ty" 2 \
            > "$TMP/quantize-$s-$ty.log" 2>&1 ||
            { echo "quantize $s $ty failed:" >&2; tail -3 "$TMP/quantize-$s-$ty.log" >&2; }
    done
    # F32 last among the files used: drop it if not timed
    for ty in $TYPES; do
        f=$TMP/$s-$ty.gguf
        [ -f "$f" ] || continue
        printf '%-6s %-7s %6.1f MB: %s\n' "$s" "$ty" "$(stat -c %s "$f" | awk '{print $1 / 1e6}')" \
            "$("$PY" "$TMP/helper.py" types "$f")"
    done
    case " $TYPES " in *" F32 "*) ;; *) rm -f "$TMP/$s-F32.gguf" ;; esac
done
echo "files written in $(( $(date +%s) - T0 )) s"

# linattn's view of each file (the weights line of `linattn info`)
echo "== linattn info (weights as stored / as used)"
for s in $SHAPES; do
    for ty in $TYPES; do
        f=$TMP/$s-$ty.gguf
        [ -f "$f" ] || continue
        w=$("$LINATTN" info "$f" 2>&1 | sed -n 's/^ *weights: gguf:[^,]*, //p' | head -1)
        [ -n "$w" ] || w="REFUSED: $("$LINATTN" info "$f" 2>&1 | grep -i -m1 'error\|linattn:' || true)"
        printf '%-6s %-7s %s\n' "$s" "$ty" "$w"
    done
done

# --- machine -----------------------------------------------------------------
# triad GB/s at 1 thread (on $PIN1) and 2: measured before the timing and
# after it; the floors use the higher of the two (another tenant lowers it)
bw() { # tag -> "triad1 triad2"
    if [ -n "$PIN1" ]; then cpu="--cpu $PIN1"; else cpu=; fi
    # shellcheck disable=SC2086
    "$BENCH" --suite bandwidth --threads 1,2 $cpu --csv "$TMP/bw-$1.csv" >/dev/null 2>&1 || true
    [ -f "$TMP/bw-$1.csv" ] || { echo "0 0"; return; }
    grep -v '^#' "$TMP/bw-$1.csv" | awk -F, '$2 == "triad" && $4 == 1 {a = $8}
        $2 == "triad" && $4 == 2 {b = $8} END {printf "%.1f %.1f\n", a, b}'
}
BW0="0 0"
[ -x "$BENCH" ] && BW0=$(bw before)
TRIAD1=${BW0% *}; TRIAD2=${BW0#* }
echo "== machine"
echo "cpu: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs;" \
    "flags: $(for fl in avx2 fma f16c avx512f avx512bw avx512vl avx512_vnni avx_vnni avx512_bf16; do
        grep -qw "$fl" /proc/cpuinfo && printf '%s ' "$fl"; done)"
echo "memory bandwidth (triad, best of linattn-bench's 9 runs), before: $TRIAD1 GB/s at 1 thread, $TRIAD2 GB/s at 2"
if [ -n "$PIN1" ]; then p1="taskset -c $PIN1 (both programs)"; else p1="not pinned"; fi
echo "one-thread runs: $p1; two-thread runs unpinned"
echo "llama.cpp: $LB, commit ${LLAMACPP_COMMIT:-unknown (set LLAMACPP_COMMIT)}; llama-bench defaults (K/V cache f16, no flash attention)"
echo "linattn: $("$LINATTN" --version 2>&1 | head -1), $(git -C "$(dirname "$0")" rev-parse --short HEAD 2>/dev/null || echo '?')"
echo "rounds: $REPEAT; llama-bench -r $LB_REPS per round"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"

# --- timing ------------------------------------------------------------------
printf '[runtime]\nkv_cache = f16\n' > "$TMP/kv-f16.ini"
printf '[runtime]\nkv_cache = f32\n' > "$TMP/kv-f32.ini"
PROMPT=$(awk 'BEGIN { while (n++ < 510) printf "a" }')

pin() { # threads
    if [ "$1" = 1 ] && [ -n "$PIN1" ]; then echo "taskset -c $PIN1"; fi
}
lcpp() { # file threads tg|pp -> one tokens/s a line (llama-bench's samples)
    if [ "$3" = tg ]; then a="-p 0 -n $NGEN"; else a="-p $NPROMPT -n 0"; fi
    # shellcheck disable=SC2046,SC2086
    $(pin "$2") "$LB" -m "$1" $a -t "$2" -r "$LB_REPS" -o jsonl 2>/dev/null |
        sed -n 's/.*"samples_ts": *\[\([^]]*\)\].*/\1/p' | tr ',' '\n' | tr -d ' ' | grep . || true
}
lin() { # file threads kv tg|pp -> tokens/s
    if [ "$4" = tg ]; then
        # shellcheck disable=SC2046
        OMP_NUM_THREADS=$2 $(pin "$2") "$LINATTN" generate -m "$1" --config "$TMP/kv-$3.ini" -c 256 \
            -p "a" -n "$NGEN" --temperature 0 --ignore-eos --stats -t "$2" 2>&1 >/dev/null |
            sed -n 's/.*decode [0-9]* tokens \([0-9.]*\) tokens\/s.*/\1/p'
    else
        # shellcheck disable=SC2046
        OMP_NUM_THREADS=$2 $(pin "$2") "$LINATTN" generate -m "$1" --config "$TMP/kv-$3.ini" \
            -c $((NPROMPT + 64)) -p "$PROMPT" -n 0 --temperature 0 --ignore-eos --stats -t "$2" \
            2>&1 >/dev/null | tee -a "$TMP/pp-stats.txt" |
            sed -n 's/.*prefill \([0-9.]*\) tokens\/s.*/\1/p'
    fi
}
median() { sort -g | awk '{ a[NR] = $1 } END { if (NR == 0) print 0; else if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
col() { awk -v k="$1" '$1 == k {print $2}' "$TMP/r" | median; }
spread() { # key: (max - min) / median of its figures, %
    awk -v k="$1" '$1 == k && $2 > 0 { v = $2; if (n++ == 0 || v < lo) lo = v; if (v > hi) hi = v }
        END { print n ? hi - lo : 0 }' "$TMP/r" | awk -v m="$2" '{ printf "%.0f", (m > 0 ? 100 * $1 / m : 0) }'
}
raw() { # phase shape type threads: keep the round figures
    awk -v p="$1" -v s="$2" -v ty="$3" -v t="$4" '{ print p, s, ty, t, $1, $2 }' "$TMP/r" >> "$TMP/raw.txt"
}

: > "$TMP/decode.txt"; : > "$TMP/prefill.txt"; : > "$TMP/raw.txt"
[ "$ONLY_BATCHED" = 1 ] && SHAPES_DP= || SHAPES_DP=$SHAPES
for s in $SHAPES_DP; do
    for ty in $TYPES; do
        f=$TMP/$s-$ty.gguf
        [ -f "$f" ] || continue
        by=$("$PY" "$TMP/helper.py" bytes "$f")
        for t in $THREADS; do
            case " $NO_2T " in *" $s "*) [ "$t" = 1 ] || continue ;; esac
            : > "$TMP/r"
            for _ in $(seq "$REPEAT"); do
                echo "a $(lin "$f" "$t" f16 tg)" >> "$TMP/r"
                lcpp "$f" "$t" tg | sed 's/^/b /' >> "$TMP/r"
                [ "$KV32" = 1 ] && echo "c $(lin "$f" "$t" f32 tg)" >> "$TMP/r"
            done
            a=$(col a); b=$(col b); c=$(col c)
            raw decode "$s" "$ty" "$t"
            sa=$(spread a "$a"); sb=$(spread b "$b")
            la=$(cut -d' ' -f1 /proc/loadavg)
            echo "$s $ty $t ${b:-0} ${a:-0} ${c:-0} $by $sb $sa $la" >> "$TMP/decode.txt"
            echo "decode $(tail -1 "$TMP/decode.txt")" >&2
            case " $PREFILL_TYPES " in *" $ty "*) ;; *) continue ;; esac
            : > "$TMP/r"
            for _ in $(seq "$REPEAT"); do
                echo "a $(lin "$f" "$t" f16 pp)" >> "$TMP/r"
                lcpp "$f" "$t" pp | sed 's/^/b /' >> "$TMP/r"
            done
            a=$(col a); b=$(col b)
            raw prefill "$s" "$ty" "$t"
            sa=$(spread a "$a"); sb=$(spread b "$b")
            la=$(cut -d' ' -f1 /proc/loadavg)
            echo "$s $ty $t ${b:-0} ${a:-0} $sb $sa $la" >> "$TMP/prefill.txt"
            echo "prefill $(tail -1 "$TMP/prefill.txt")" >&2
        done
    done
done

if [ -n "$NPL" ]; then
    echo "== streams stepped together: 128 prompt + 128 generated tokens a stream (aggregate generation tokens/s)"
    maxn=$(echo $NPL | tr ' ' '\n' | sort -g | tail -1)
    filt=$(echo $NPL | tr ' ' '\n' | sed 's/^/step/; s/$/-/' | paste -sd, -)
    printf '%-6s %-7s %-3s %-5s %10s %10s %6s  %s\n' shape type thr streams "llama.cpp" linattn ratio \
        "linattn: % of FMA peak, % of memory floor, step p50/p99, worst run"
    for ty in $BATCHED_TYPES; do
        f=$TMP/15m-$ty.gguf
        [ -f "$f" ] || { echo "no $f (add $ty and 15m to TYPES and SHAPES)" >&2; continue; }
        printf '[model]\nweights = gguf:%s\nmax_seq_len = 256\n[runtime]\nkv_cache = f16\n' "$f" \
            > "$TMP/b-$ty.ini"
        for t in $THREADS; do
            OMP_NUM_THREADS=$t $(pin "$t") "$LLAMACPP_BIN/llama-batched-bench" -m "$f" \
                -c $((maxn * 256)) -npp 128 -ntg 128 -npl "$(echo $NPL | tr ' ' ,)" -t "$t" \
                --output-format jsonl > "$TMP/bb.jsonl" 2> "$TMP/bb.log" ||
                { echo "llama-batched-bench failed:" >&2; tail -3 "$TMP/bb.log" >&2; }
            if [ "$t" = 1 ] && [ -n "$PIN1" ]; then cpu="--cpu $PIN1"; else cpu=; fi
            "$BENCH" --suite model --config "$TMP/b-$ty.ini" --isa auto --threads "$t" $cpu \
                --repeat "$REPEAT" --filter "$filt" --csv "$TMP/st.csv" > "$TMP/st.txt" 2>&1 ||
                { echo "linattn-bench failed:" >&2; tail -3 "$TMP/st.txt" >&2; }
            for n in $NPL; do
                b=$(sed -n "s/.*\"pl\": *$n,.*\"speed_tg\": *\([0-9.]*\).*/\1/p" "$TMP/bb.jsonl" | head -1)
                a=$(grep -E "^step$n-" "$TMP/st.txt" | awk '{print $4}' | head -1)
                note=$(grep -E "^step$n-" "$TMP/st.txt" | sed 's/.* \([0-9]*% of peak [0-9.]*, [0-9]*% of floor\).*p50 \([0-9.]*\) ms, p99 \([0-9.]*\) ms; worst run \([0-9.]*\).*/\1, \2\/\3 ms, \4/' | head -1)
                printf '%-6s %-7s %-3s %-5s %10s %10s %6s  %s\n' 15m "$ty" "$t" "$n" "${b:-?}" "${a:-?}" \
                    "$(awk -v a="${a:-0}" -v b="${b:-0}" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }')" \
                    "$note"
            done
        done
    done
    echo "(llama.cpp: one run of llama-batched-bench; linattn: median of $REPEAT runs of the 128 steps)"
fi

BW1="0 0"
[ -x "$BENCH" ] && BW1=$(bw after)
echo "memory bandwidth (triad) after: ${BW1% *} GB/s at 1 thread, ${BW1#* } GB/s at 2"
F1=$(printf '%s\n%s\n' "$TRIAD1" "${BW1% *}" | sort -g | tail -1)
F2=$(printf '%s\n%s\n' "$TRIAD2" "${BW1#* }" | sort -g | tail -1)
echo "== decode, $NGEN tokens (tokens/s, median; ratio = linattn / llama.cpp)"
printf '%-6s %-7s %-3s %10s %10s %6s %10s %6s %9s %10s %5s %9s %6s %6s\n' shape type thr "llama.cpp" \
    "lin-kv16" ratio "lin-kv32" ratio "MB/token" "spread" "load" "floor" "l.cpp" "lin16"
awk -v f1="$F1" -v f2="$F2" '{
    fl = ($3 == 1 ? f1 : f2) * 1e9 / $7; if (fl <= 0) fl = 1e-9
    printf "%-6s %-7s %-3s %10.1f %10.1f %6.2f %10.1f %6.2f %9.2f %10s %5s %9.1f %5.0f%% %5.0f%%\n",
        $1, $2, $3, $4, $5, ($4 > 0 ? $5 / $4 : 0), $6, ($4 > 0 ? $6 / $4 : 0), $7 / 1e6,
        $8 "%/" $9 "%", $10, fl, 100 * $4 / fl, 100 * $5 / fl }' "$TMP/decode.txt"
echo "(median of each program's timed 128-token runs: linattn $REPEAT, llama.cpp $((REPEAT * LB_REPS));"
echo " spread: (max - min) / median, llama.cpp/linattn-kv16; load: 1-minute load average"
echo " after the row; floor: tokens/s at the triad bandwidth, the higher of before and after"
echo " ($F1 GB/s at 1 thread, $F2 at 2), over the MB a token reads; the last two columns:"
echo " each program's share of it; files under the 32 MiB L3 and read-only streams can pass it)"
echo "== prefill, $NPROMPT-token prompt (tokens/s, median; linattn K/V cache f16)"
printf '%-6s %-7s %-3s %10s %10s %6s %10s %5s\n' shape type thr "llama.cpp" "linattn" ratio "spread" "load"
awk '{ printf "%-6s %-7s %-3s %10.1f %10.1f %6.2f %10s %5s\n", $1, $2, $3, $4, $5,
    ($4 > 0 ? $5 / $4 : 0), $6 "%/" $7 "%", $8 }' "$TMP/prefill.txt"
n=$(sed -n 's/.*prompt \([0-9]*\) tokens.*/\1/p' "$TMP/pp-stats.txt" 2>/dev/null | sort -u | tr '\n' ' ')
echo "(linattn's prompt: ${n:-?}tokens, by its --stats)"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
[ -z "${RAW:-}" ] || cp "$TMP/raw.txt" "$RAW"
echo "total $(( $(date +%s) - T0 )) s"
