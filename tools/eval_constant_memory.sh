#!/bin/sh
# eval_constant_memory.sh: the C engine's bits/byte of a softmax teacher, its sliding windows
# (no training) and its constant-memory conversions, on held-out text, as tools/TRAINING.md
# reports them.
#
#   tools/eval_constant_memory.sh [LINATTN] [TEACHER.ini] [CONVERTED.ini ...]
#
# Defaults: build/linattn, configs/kjv-llama.ini, and every configs/kjv-llama-*.ini.
# For the teacher and each window W in $WINDOWS (16 64 256): fresh windows of the teacher's
# context (max_seq_len); the windows and conversions also as one stream over the whole text.
# Prints one markdown row per model (overall, per-4-KiB-block figures in the JSON files) and
# writes the JSON of every run to $OUT (default /tmp/constant-memory).
set -eu
cd "$(dirname "$0")/.."
exe=${1:-build/linattn}
teacher=${2:-configs/kjv-llama.ini}
[ $# -ge 2 ] && shift 2 || shift $#
text=${TEXT:-tests/data/kjv-heldout-64k.txt}
out=${OUT:-/tmp/constant-memory}
windows=${WINDOWS:-16 64 256}
mkdir -p "$out"

ctx=$(sed -n 's/^max_seq_len *= *//p' "$teacher" | head -1)
weights=$(sed -n 's/^weights *= *//p' "$teacher" | head -1)
case "$weights" in /*) ;; *) weights="$(cd "$(dirname "$teacher")" && pwd)/$weights" ;; esac

bpb() { /usr/bin/python3 -c 'import json,sys; print("%.4f" % json.load(open(sys.argv[1]))["bits_per_byte"])' "$1"; }
state() { "$exe" info "$1" | sed -n 's/.*\(state\|kv-cache\) bytes[^:]*: \([0-9]*\).*/\2/p' | head -1; }

echo "| model | state bytes per stream | fresh windows of $ctx | one stream |"
echo "| --- | --- | --- | --- |"
name=$(basename "$teacher" .ini)
"$exe" eval "$teacher" --text "$text" --window "$ctx" --json "$out/$name.windows.json" >/dev/null
echo "| $name (softmax, KV cache at $ctx) | $(( $(state "$teacher") * ctx )) | $(bpb "$out/$name.windows.json") | (context $ctx) |"

for w in $windows; do
    cfg="$out/$name-window$w.ini"
    # the teacher's config with a window, its weights by absolute path
    sed -e "s|^weights *=.*|weights = $weights|" -e "s|^\[model\]|[model]\nwindow = $w|" \
        "$teacher" >"$cfg"
    "$exe" eval "$cfg" --text "$text" --window "$ctx" --json "$out/$name-window$w.windows.json" >/dev/null
    "$exe" eval "$cfg" --text "$text" --json "$out/$name-window$w.stream.json" >/dev/null
    echo "| window $w (no training) | $(state "$cfg") | $(bpb "$out/$name-window$w.windows.json") | $(bpb "$out/$name-window$w.stream.json") |"
done

if [ $# -eq 0 ]; then
    set -- $(ls configs/"$name"-*.ini 2>/dev/null || true)
fi
for cfg in "$@"; do
    n=$(basename "$cfg" .ini)
    "$exe" eval "$cfg" --text "$text" --window "$ctx" --json "$out/$n.windows.json" >/dev/null
    "$exe" eval "$cfg" --text "$text" --json "$out/$n.stream.json" >/dev/null
    echo "| $n | $(state "$cfg") | $(bpb "$out/$n.windows.json") | $(bpb "$out/$n.stream.json") |"
done
