#!/usr/bin/python3
"""docs/benchmarks.md's figures are what docs/mkbenchmarks.py makes of
docs/bench.json, and the script still reads what linattn-bench writes today.

Environment: LINATTN_ROOT (the source tree), LINATTN_BENCH_EXE (the bench
built with this tree). Exit 0 when every check holds, 1 otherwise.
"""

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.environ["LINATTN_ROOT"]
BENCH = os.environ["LINATTN_BENCH_EXE"]
SCRIPT = os.path.join(ROOT, "docs", "mkbenchmarks.py")
failed = 0


def check(ok, what):
    global failed
    print("%s - %s" % ("ok" if ok else "not ok", what))
    if not ok:
        failed += 1


def run(*args):
    return subprocess.run([sys.executable, SCRIPT] + list(args), capture_output=True, text=True)


# 1. The committed page is the committed JSON's.
r = run("--check")
check(r.returncode == 0, "docs/benchmarks.md matches docs/bench.json (%s)" % r.stderr.strip())

with tempfile.TemporaryDirectory() as tmp:
    page = os.path.join(tmp, "benchmarks.md")
    shutil.copy(os.path.join(ROOT, "docs", "benchmarks.md"), page)

    # 2. A hand edit inside the markers is caught, and the script puts it back.
    with open(page) as f:
        text = f.read()
    with open(page, "w") as f:
        f.write(text.replace("| linear-causal-4k | tok/s |", "| linear-causal-4k | tok/s | 1 |", 1))
    r = run("--check", "--md", page)
    check(r.returncode == 1 and "not what" in r.stderr, "an edited figure fails --check")
    r = run("--md", page)
    with open(page) as f:
        check(r.returncode == 0 and f.read() == text, "a run restores the page exactly")

    # 3. The text outside the markers is kept: the page's first and last lines.
    lines = text.splitlines()
    check(lines[0].startswith("# linattn-bench") and "Other measurements" in text,
          "the hand-written parts are kept")

    # 4. Today's bench output: a small run of this build's linattn-bench.
    js = os.path.join(tmp, "run.json")
    b = subprocess.run([BENCH, "--quick", "--suite", "ops", "--filter", "linear-causal-4k",
                        "--isa", "scalar", "--threads", "1,2", "--json", js],
                       capture_output=True, text=True)
    check(b.returncode == 0, "linattn-bench --json runs (%s)" % b.stderr.strip()[-200:])
    with open(js) as f:
        doc = json.load(f)
    r = run("--json", js, "--md", page)
    check(r.returncode == 0, "the script reads today's JSON (%s)" % r.stderr.strip())
    with open(page) as f:
        new = f.read()
    row = next(x for x in doc["rows"] if x["workload"] == "linear-causal-4k" and x["threads"] == 1)
    # the figure as the script writes it (any size: a sanitized bench is slow)
    spec = importlib.util.spec_from_file_location("mkbenchmarks", SCRIPT)
    mk = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mk)
    want = mk.num(row["median"])
    check("| linear-causal-4k | tok/s | %s" % want in new, "its median %s is in the table" % want)
    check("revision %s" % doc["header"]["revision"] in new, "its revision is in the header")
    # Targets whose rows this run lacks say so instead of a made-up figure.
    check("| causal softmax prefill L 4096, AVX2 | >= 65% of peak | not in this run | - |" in new,
          "a target without its rows says 'not in this run'")

    # 5. Bad input: one line naming the problem, exit 2, the page untouched.
    bad = os.path.join(tmp, "bad.json")
    with open(bad, "w") as f:
        json.dump({"rows": []}, f)
    r = run("--json", bad, "--md", page)
    with open(page) as f:
        check(r.returncode == 2 and "'header'" in r.stderr and f.read() == new,
              "a JSON without a header is refused and nothing is written")
    nomark = os.path.join(tmp, "plain.md")
    with open(nomark, "w") as f:
        f.write("# a page\n")
    r = run("--md", nomark)
    check(r.returncode == 2 and "marker" in r.stderr, "a page without markers is refused")

sys.exit(1 if failed else 0)
