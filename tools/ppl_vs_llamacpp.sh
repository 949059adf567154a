#!/usr/bin/env bash
# ppl_vs_llamacpp.sh: linattn eval --ctx N beside llama.cpp's llama-perplexity -c N, per quant type
# (the table in docs/perplexity.md). Not used by CI: it needs a llama.cpp build and its gguf-py.
#
# usage: tools/ppl_vs_llamacpp.sh LLAMA_CPP_SRC LLAMA_CPP_BIN [LINATTN] [WORKDIR]
#   LLAMA_CPP_SRC  llama.cpp's source tree (for gguf-py)
#   LLAMA_CPP_BIN  its build/bin (llama-quantize, llama-perplexity, llama-tokenize)
#   LINATTN        the linattn program (default build/linattn)
#   WORKDIR        where the GGUF files go (default a temporary folder, removed at the end)
# Environment: CTX (default 512), TEXT (default tests/data/kjv-heldout-64k.txt),
# TYPES (default "f32 f16 q8_0 q4_0 q4_k_m q5_k_m q6_k"), PYTHON (default python3; needs numpy).
set -euo pipefail
src=${1:?llama.cpp source tree}
bin=${2:?llama.cpp build/bin}
here=$(cd "$(dirname "$0")/.." && pwd)
linattn=${3:-$here/build/linattn}
ctx=${CTX:-512}
text=${TEXT:-$here/tests/data/kjv-heldout-64k.txt}
types=${TYPES:-f32 f16 q8_0 q4_0 q4_k_m q5_k_m q6_k}
python=${PYTHON:-python3} # with numpy, for gguf-py
if [ -n "${4:-}" ]; then work=$4; mkdir -p "$work"; else work=$(mktemp -d); trap 'rm -rf "$work"' EXIT; fi

# The model: kjv-llama (trained on the KJV, bytes), written as GGUF by linattn and given a byte
# vocabulary llama.cpp can tokenize with; llama-quantize makes the other types from it.
"$linattn" quantize "$here/configs/kjv-llama.ini" "$work/bare.gguf" --type f32 >/dev/null 2>&1
PYTHONPATH="$src/gguf-py" "$python" "$here/tools/gguf_byte_vocab.py" "$work/bare.gguf" "$work/kjv-f32.gguf"
for t in $types; do
    [ "$t" = f32 ] || [ -e "$work/kjv-$t.gguf" ] ||
        "$bin/llama-quantize" "$work/kjv-f32.gguf" "$work/kjv-$t.gguf" "$t" 1 >/dev/null 2>&1
done

# Both engines must see the same tokens.
"$bin/llama-tokenize" -m "$work/kjv-f32.gguf" -f "$text" --ids --log-disable 2>/dev/null | tail -1 |
    tr -d '[] ' | tr ',' ' ' > "$work/ids-llama.txt"
"$linattn" tokenize "$work/kjv-f32.gguf" -f "$text" --ids > "$work/ids-linattn.txt"
if [ "$(cat "$work/ids-llama.txt")" != "$(cat "$work/ids-linattn.txt")" ]; then
    echo "ppl_vs_llamacpp: the two tokenizations of $text differ" >&2
    exit 1
fi

lin() { # FILE KV -> perplexity
    printf '[model]\nweights = gguf:%s\n[runtime]\nkv_cache = %s\n' "$1" "$2" > "$work/kv.ini"
    "$linattn" eval "$work/kv.ini" --text "$text" --ctx "$ctx" --threads 1 | sed -n 's/^perplexity \([0-9.]*\) .*/\1/p'
}
lcp() { # FILE KV -> perplexity
    "$bin/llama-perplexity" -m "$1" -f "$text" -c "$ctx" -b "$ctx" -t 1 -ctk "$2" -ctv "$2" 2>&1 |
        sed -n 's/.*Final estimate: PPL = \([0-9.]*\) .*/\1/p'
}
rel() { "$python" -c "print('%+.1e' % ($1 / $2 - 1))"; }

echo "| type | MiB | linattn | llama.cpp | rel. diff | linattn, F16 KV | llama.cpp, F16 KV | rel. diff |"
echo "|---|---|---|---|---|---|---|---|"
for t in $types; do
    f=$work/kjv-$t.gguf
    mib=$("$python" -c "import os; print('%.2f' % (os.path.getsize('$f') / 2**20))")
    a=$(lin "$f" f32); b=$(lcp "$f" f32); c=$(lin "$f" f16); d=$(lcp "$f" f16)
    echo "| $t | $mib | $a | $b | $(rel "$a" "$b") | $c | $d | $(rel "$c" "$d") |"
done
