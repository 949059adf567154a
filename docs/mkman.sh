#!/bin/sh
# mkman.sh LINATTN OUT VERSION: writes the linattn(1) man page from the program's own --help texts,
# so the page cannot drift from the flags; given linattn-bench, its linattn-bench(1) page.
set -eu
exe=$1
out=$2
version=$3
# roff: escape backslashes, and a line starting with '.' or "'" must not read as a request
esc() { sed -e 's/\\/\\e/g' -e "s/^\([.']\)/\\\\\&\1/" -e 's/^-/\\-/'; }
if [ "$(basename "$exe")" = linattn-bench ]; then
    help=$(mktemp)
    trap 'rm -f "$help"' EXIT
    "$exe" --help >"$help" || { echo "mkman: '$exe --help' failed" >&2; exit 1; }
    # the usage lines run to the first blank line
    usage=$(awk 'NF == 0 { exit } { n++ } END { print n }' "$help")
    {
        printf '.TH LINATTN-BENCH 1 "" "linattn %s" "User Commands"\n' "$version"
        printf '.SH NAME\nlinattn-bench \\- throughput of linattn kernels, operators and models per ISA\n'
        printf '.SH SYNOPSIS\n.nf\n'
        sed -n "1,${usage}p" "$help" | sed 's/^usage: //' | esc
        printf '.fi\n.SH DESCRIPTION\n.nf\n'
        sed "1,$((usage + 1))d" "$help" | esc
        printf '.fi\n.SH SEE ALSO\nlinattn(1); docs/benchmarks.md of the linattn sources.\n'
    } >"$out"
    exit 0
fi
# every --help first, so a program that cannot run fails the build here
help=$(mktemp)
trap 'rm -f "$help"' EXIT
cmds="generate eval info quantize attend tokenize detokenize"
# serve only where it is built (libmicrohttpd)
"$exe" serve --help >/dev/null 2>&1 && cmds="$cmds serve"
for cmd in "" $cmds; do
    # shellcheck disable=SC2086
    "$exe" $cmd --help >"$help.$cmd" || { echo "mkman: '$exe $cmd --help' failed" >&2; exit 1; }
done
trap 'rm -f "$help" "$help".*' EXIT
{
    printf '.TH LINATTN 1 "" "linattn %s" "User Commands"\n' "$version"
    printf '.SH NAME\nlinattn \\- run transformer decoders with softmax or causal linear attention on a CPU\n'
    printf '.SH SYNOPSIS\n.nf\n'
    sed -n '1p' "$help." | esc
    printf '.fi\n.SH DESCRIPTION\n.nf\n'
    sed '1,2d' "$help." | esc
    printf '.fi\n'
    for cmd in $cmds; do
        printf '.SH "%s"\n.nf\n' "$(echo "linattn $cmd" | tr a-z A-Z)"
        esc <"$help.$cmd"
        printf '.fi\n'
    done
    printf '.SH FILES\n.TP\n.I share/linattn/\n'
    printf 'demo configs (configs/) and models (models/); a relative CONFIG that does not exist in the\n'
    printf 'current folder is looked for there.\n'
    printf '.SH SEE ALSO\nREADME.md of the linattn sources: config keys, the C API, benchmarks.\n'
} >"$out"
