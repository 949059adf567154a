#!/bin/sh
# run.sh LINATTN: installs the npm `openai` client in a temporary folder (the
# test client only: the engine never needs node), starts `linattn serve` on
# 127.0.0.1 with kjv-linear and an API key, runs client.mjs, stops the server.
set -eu
exe=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
work=$(mktemp -d /tmp/linattn-openai.XXXXXX)
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT INT TERM
cp "$here/client.mjs" "$work/"
# openai 4.x runs on Debian 12's node 18
(cd "$work" && npm init -y >/dev/null && npm install --no-audit --no-fund --silent openai@4 >/dev/null)
"$exe" serve "$root/configs/kjv-linear.ini" --port 0 --threads 1 --api-key sesame 2>"$work/serve.err" &
pid=$!
port=
for _ in $(seq 1 500); do
    port=$(sed -n 's|.*http://127.0.0.1:\([0-9]*\).*|\1|p' "$work/serve.err" | head -1)
    [ -n "$port" ] && break
    kill -0 "$pid" 2>/dev/null || { cat "$work/serve.err" >&2; exit 1; }
    sleep 0.02
done
[ -n "$port" ] || { echo "run.sh: the server did not say where it listens" >&2; exit 1; }
(cd "$work" && node client.mjs "http://127.0.0.1:$port/v1")
