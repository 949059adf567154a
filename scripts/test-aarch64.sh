#!/bin/sh
# test-aarch64.sh: cross-builds for aarch64, runs the NEON kernel checker and `linattn info` under qemu.
# Needs: scripts/install-deps.sh --cross. Extra arguments go to checkasm (e.g. --seed N).
set -eu
cd "$(dirname "$0")/.."
build=build-aarch64
cross=cross/aarch64-linux-gnu.ini

for tool in aarch64-linux-gnu-gcc aarch64-linux-gnu-pkg-config qemu-aarch64; do
    command -v "$tool" >/dev/null || {
        echo "test-aarch64: $tool not found (run scripts/install-deps.sh --cross)" >&2
        exit 1
    }
done
# qemu-aarch64 runs without -L only when the arm64 loader is where the binaries look for it.
[ -e /lib/ld-linux-aarch64.so.1 ] || {
    echo "test-aarch64: /lib/ld-linux-aarch64.so.1 missing (install libc6:arm64)" >&2
    exit 1
}

# Reuse a configured cross build; wipe one that is broken or was configured natively.
if [ -f "$build/build.ninja" ] && grep -q "aarch64-linux-gnu-gcc" "$build/build.ninja"; then
    meson setup --reconfigure "$build" --cross-file "$cross" -Dwerror=true >/dev/null
else
    rm -rf "$build"
    meson setup "$build" --cross-file "$cross" -Dwerror=true >/dev/null
fi
ninja -C "$build"

status=0
echo "--- checkasm --require neon --require neon+dotprod (qemu-aarch64)"
# the inline exp on every 64th run of floats: every float would take minutes under qemu;
# qemu's default CPU (max) has dotprod
qemu-aarch64 "$build/tests/checkasm" --require neon --require neon+dotprod --exp-step 64 "$@" ||
    status=1

echo "--- linattn info on a CPU without dotprod (qemu-aarch64 -cpu cortex-a53)"
if info=$(qemu-aarch64 -cpu cortex-a53 "$build/linattn" info); then
    echo "$info" | grep -qx 'cpu features: neon' && echo "$info" | grep -q '^isa: neon' || {
        echo "test-aarch64: without dotprod, linattn info says: $info" >&2
        status=1
    }
else
    echo "test-aarch64: linattn info failed under qemu -cpu cortex-a53" >&2
    status=1
fi

echo "--- linattn info (qemu-aarch64)"
if info=$(qemu-aarch64 "$build/linattn" info); then
    echo "$info"
    echo "$info" | grep -q '^isa: neon' || {
        echo "test-aarch64: linattn info does not report isa neon" >&2
        status=1
    }
else
    echo "test-aarch64: linattn info failed under qemu" >&2
    status=1
fi

echo "--- meson test (everything that runs without Criterion, under qemu)"
meson test -C "$build" --print-errorlogs --num-processes 2 || status=1

echo "--- linattn generate on a golden model (qemu-aarch64, NEON kernels)"
qemu-aarch64 "$build/linattn" generate tests/data/tiny-linear-pre-ln-gelu-sincos.ini \
    --prompt "Hello" --tokens 16 --temperature 0 --stats || status=1

# Decayed linear and hybrid models through the NEON kernels, prefill and step paths: bits per
# byte of their golden stream against PyTorch's (float64 logits, 1e-3).
for m in tiny-linear-pre-rms-gelu-none-decay tiny-linear-post-ln-relu-sincos-retnet-f16 \
         tiny-hybrid-rope-gqa tiny-hybrid-fmap-rope-gqa; do
    echo "--- linattn eval $m (qemu-aarch64, NEON kernels)"
    want=$(cat "tests/data/$m.stream_bpb.txt")
    for w in "" "--window 7"; do
        # shellcheck disable=SC2086
        if out=$(qemu-aarch64 "$build/linattn" eval "tests/data/$m.ini" \
                 --text "tests/data/$m.stream.txt" $w); then
            got=$(echo "$out" | sed -n 's/^bits\/byte \([0-9.]*\) .*/\1/p')
            echo "${w:-one stream}: $got bits/byte, PyTorch (one stream) $want"
            # windows score other contexts: only the one stream must match
            if [ -z "$w" ] && ! awk -v a="$got" -v b="$want" \
                    'BEGIN { d = a - b; exit !(a != "" && d < 1e-3 && d > -1e-3) }'; then
                echo "test-aarch64: $m: eval gave '$got', PyTorch $want" >&2
                status=1
            fi
        else
            echo "test-aarch64: linattn eval failed under qemu" >&2
            status=1
        fi
    done
done

[ "$status" -eq 0 ] && echo "test-aarch64: ok" || echo "test-aarch64: FAILED" >&2
exit "$status"
