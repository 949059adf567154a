#!/bin/sh
# install-deps.sh: installs the Debian 12 packages linattn needs, only those missing.
#   scripts/install-deps.sh            build + test dependencies (native)
#   scripts/install-deps.sh --tests    also numpy (the tools' tests), redis-server (serve --store's), curl and jq (README's serve example),
#                                      wrk (bench/serve_load.sh's HTTP load)
#   scripts/install-deps.sh --cross    also the aarch64 cross toolchain and qemu
#   scripts/install-deps.sh --python   also PyTorch, numpy and the KJV text (tools/ only)
#   scripts/install-deps.sh --check    also clang + libFuzzer, valgrind and node + npm (.ci/run's fuzz,
#                                      memcheck and OpenAI-client steps; npm fetches the client only)
# Idempotent; waits for the apt lock instead of failing. Run as root.
set -eu

native="meson ninja-build pkg-config gcc libc6-dev libsleef-dev libcriterion-dev
        libinih-dev libcjson-dev zlib1g-dev libpcre2-dev libmicrohttpd-dev libhiredis-dev"
cross="gcc-aarch64-linux-gnu qemu-user libc6-dev:arm64 libgomp1:arm64 libsleef-dev:arm64
       pkg-config:arm64 libinih-dev:arm64 libcjson-dev:arm64 zlib1g-dev:arm64 libpcre2-dev:arm64"
python="python3 python3-numpy python3-torch bible-kjv-text bible-kjv libopenblas0-pthread"
check="clang libclang-rt-14-dev valgrind nodejs"
tests="python3 python3-numpy redis-server curl jq wrk"

want="$native"
for arg in "$@"; do
    case "$arg" in
    --tests) want="$want $tests" ;;
    --cross) want="$want $cross" ;;
    --python) want="$want $python" ;;
    --check) want="$want $check"
        # Debian's npm, unless a node that brings its own npm is there
        command -v npm >/dev/null 2>&1 || want="$want npm" ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    *) echo "install-deps.sh: unknown option '$arg'" >&2; exit 2 ;;
    esac
done

missing=""
for p in $want; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing="$missing $p"
    fi
done
[ -z "$missing" ] && exit 0

if [ "$(id -u)" != 0 ]; then
    echo "install-deps.sh: missing packages:$missing; run as root to install them" >&2
    exit 1
fi

apt_get() {
    DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=900 "$@"
}
case "$missing" in
*:arm64*)
    dpkg --print-foreign-architectures | grep -qx arm64 || dpkg --add-architecture arm64 ;;
esac
echo "install-deps.sh: installing$missing" >&2
apt_get update -q
# shellcheck disable=SC2086
apt_get install -y -q --no-install-recommends $missing
