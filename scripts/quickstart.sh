#!/bin/sh
# quickstart.sh: installs what is missing, builds, and runs the main job.
set -eu
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
exec build/linattn info
