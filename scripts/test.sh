#!/bin/sh
# test.sh: installs what is missing, builds with -Werror, runs every native test.
set -eu
cd "$(dirname "$0")/.."
scripts/install-deps.sh --tests
if [ ! -f build-test/build.ninja ]; then
    meson setup build-test -Dwerror=true -Dtests=enabled
fi
ninja -C build-test
meson test -C build-test --print-errorlogs --num-processes 2 "$@"
