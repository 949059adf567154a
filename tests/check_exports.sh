#!/bin/sh
# check_exports.sh LIB HEADER: the shared library exports exactly the functions the header
# declares with LINATTN_API (nothing internal leaks, nothing declared is missing).
set -eu
lib=$1
header=$2
want=$(mktemp)
have=$(mktemp)
trap 'rm -f "$want" "$have"' EXIT
# "LINATTN_API type *name(" -> name
sed -n 's/^LINATTN_API [^(]*[ *]\(linattn_[A-Za-z0-9_]*\)(.*/\1/p' "$header" | sort -u >"$want"
nm -D --defined-only "$lib" | awk '$2 ~ /^[TWDBR]$/ {print $3}' | sort -u >"$have"
n=$(wc -l <"$want")
if [ "$n" -lt 50 ]; then
    echo "check_exports: only $n LINATTN_API declarations found in $header" >&2
    exit 1
fi
if ! diff -u "$want" "$have"; then
    echo "check_exports: exported symbols (+) differ from the header's API (-)" >&2
    exit 1
fi
echo "check_exports: $n functions, exactly the header's"
