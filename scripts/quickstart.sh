#!/bin/sh
# quickstart.sh: installs what is missing, builds, and runs the main job:
# the linear-attention demo model writing text from its config's prompt.
set -eu
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
exec build/linattn generate configs/kjv-linear.ini --stats "$@"
