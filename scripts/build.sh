#!/bin/sh
# build.sh: configures (once) and builds linattn in build/ (args: extra meson options).
set -eu
cd "$(dirname "$0")/.."
if [ ! -f build/build.ninja ]; then
    meson setup build "$@"
elif [ $# -gt 0 ]; then
    meson configure build "$@"
fi
ninja -C build
