#!/bin/sh
# mkman.sh LINATTN OUT VERSION: writes the linattn(1) man page from the program's own --help texts,
# so the page cannot drift from the flags.
set -eu
exe=$1
out=$2
version=$3
# every --help first, so a program that cannot run fails the build here
help=$(mktemp)
trap 'rm -f "$help"' EXIT
cmds="generate eval info attend tokenize detokenize"
# serve only where it is built (libmicrohttpd)
"$exe" serve --help >/dev/null 2>&1 && cmds="$cmds serve"
for cmd in "" $cmds; do
    # shellcheck disable=SC2086
    "$exe" $cmd --help >"$help.$cmd" || { echo "mkman: '$exe $cmd --help' failed" >&2; exit 1; }
done
trap 'rm -f "$help" "$help".*' EXIT
# roff: escape backslashes, and a line starting with '.' or "'" must not read as a request
esc() { sed -e 's/\\/\\e/g' -e "s/^\([.']\)/\\\\\&\1/" -e 's/^-/\\-/'; }
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
