#!/usr/bin/python3
"""Every fenced block of README.md is run, or checked against the tree, and
the sampled texts of docs/models.md are what the demo models write today.

A block this test does not know fails it: a new command in README needs a
check here. Environment: LINATTN_ROOT (the source tree), LINATTN_EXE,
LINATTN_LIB (this build's liblinattn.so), LINATTN_INCLUDE (the public
header's folder). The commands run in a scratch folder whose configs/,
models/ and tests/ point into the tree, so what they write lands there.
TAP output; exit 0 when every check holds, 77 when the tools a block needs
(cc, curl, jq) are missing, 1 otherwise.
"""

import json
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time

ROOT = os.environ["LINATTN_ROOT"]
EXE = os.environ["LINATTN_EXE"]
LIB = os.environ["LINATTN_LIB"]
INCLUDE = os.environ["LINATTN_INCLUDE"]
failed = 0
count = 0


def check(ok, what):
    global failed, count
    count += 1
    print("%s %d - %s" % ("ok" if ok else "not ok", count, what), flush=True)
    if not ok:
        failed += 1
    return ok


def skip(what, why):
    global count
    count += 1
    print("ok %d - %s # SKIP %s" % (count, what, why), flush=True)


for tool in ("cc", "curl", "jq"):
    if shutil.which(tool) is None:
        print("1..0 # SKIP %s is not installed (scripts/install-deps.sh --tests installs it)" % tool)
        sys.exit(77)


def blocks(path):
    """(language, first line number, text) of every fenced block, indented or not."""
    out, cur = [], None
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            m = re.match(r"^(\s*)```(\w*)\s*$", line)
            if m and cur is None:
                cur = (m.group(2), n, len(m.group(1)), [])
            elif m and cur is not None:
                out.append((cur[0], cur[1], "".join(cur[3])))
                cur = None
            elif cur is not None:
                cur[3].append(line[cur[2]:] if line[:cur[2]].isspace() else line)
    return out


scratch = tempfile.mkdtemp(prefix="linattn-readme.")
bindir = os.path.join(scratch, "bin")
os.mkdir(bindir)
os.symlink(EXE, os.path.join(bindir, "linattn"))
os.mkdir(os.path.join(scratch, "build"))
os.symlink(EXE, os.path.join(scratch, "build", "linattn"))
for d in ("configs", "models", "tests"):
    os.symlink(os.path.join(ROOT, d), os.path.join(scratch, d))
env = dict(os.environ, PATH=bindir + os.pathsep + os.environ["PATH"],
           PYTHONPATH=os.path.join(ROOT, "python"), LINATTN_LIB=LIB)


def sh(script, stdin=None, timeout=120):
    return subprocess.run(["sh", "-eu", "-c", script], cwd=scratch, env=env, input=stdin,
                          capture_output=True, text=True, timeout=timeout)


def write_npy(path, shape, values):
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }" % \
        "".join("%d, " % s for s in shape)
    header += " " * (63 - (len(header) + 10) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
        f.write(struct.pack("<%df" % len(values), *values))


def npy_shape(path):
    with open(path, "rb") as f:
        head = f.read(128).decode("latin-1")
    m = re.search(r"'shape': \(([^)]*)\)", head)
    return tuple(int(x) for x in m.group(1).split(",") if x.strip()) if m else None


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --- one function per kind of block; each returns True when it took it ----

def quickstart(lang, text):
    if "scripts/quickstart.sh" not in text:
        return False
    skip("README quickstart: scripts/test.sh", "it is what runs this test")
    # quickstart.sh installs and builds, then execs one command: run that one
    with open(os.path.join(ROOT, "scripts", "quickstart.sh")) as f:
        m = re.search(r"^exec build/linattn (.*?) \"\$@\"$", f.read(), re.M)
    if not check(m is not None, "scripts/quickstart.sh ends with exec build/linattn ..."):
        return True
    r = sh("build/linattn " + m.group(1))
    stats = re.search(r"stats: prompt (\d+) tokens, .*decode (\d+) tokens .*state (\d+) bytes", r.stderr)
    check(r.returncode == 0 and stats is not None, "quickstart's command runs and prints its stats line")
    if stats:
        # README: 1,000 bytes from the config's prompt (echoed), one newline to end
        check(int(stats.group(2)) == 1000 and
              len(r.stdout.encode()) == int(stats.group(1)) + 1000 + 1,
              "it writes the prompt and 1,000 bytes (%d bytes out)" % len(r.stdout.encode()))
        check(stats.group(3) == "397312", "its state is 397,312 bytes, as README says")
    return True


def install(lang, text):
    if "meson setup build-install" not in text:
        return False
    # It installs into /usr/local as root; .ci/run's install step runs each
    # of these commands with a temporary prefix (build, install, pkg-config,
    # examples/stream.c, the CLI by bare config name, the man pages).
    skip("README install block", ".ci/run's install step runs it with a temporary prefix")
    with open(os.path.join(ROOT, ".ci", "run")) as f:
        ci = f.read()
    for piece in ("meson setup build-install --prefix=", "ninja -C build-install install",
                  "examples/stream.c", "share/linattn/configs/kjv-linear.ini", "kjv-linear; do",
                  "man1/linattn.1"):
        check(piece in ci, "README install: .ci/run does %r" % piece)
    return True


def cli(lang, text):
    lines = [l for l in text.splitlines() if l.strip()]
    if lang != "sh" or len(lines) != 1 or not lines[0].startswith("linattn "):
        return False
    cmd = lines[0]
    verb = cmd.split()[1]
    if verb == "attend":
        # the block's tensors: (B, H, L, D) = (1, 2, 5, 4)
        for name, seed in (("q", 1), ("k", 2), ("v", 3)):
            write_npy(os.path.join(scratch, name + ".npy"), (1, 2, 5, 4),
                      [((i * 7 + seed * 13) % 17 - 8) / 8.0 for i in range(40)])
    stdin = "And God said\n" if verb == "chat" else None
    r = sh(cmd, stdin=stdin)
    ok = check(r.returncode == 0, "README: %s (exit %d%s)" % (cmd, r.returncode,
                                                              ", " + r.stderr.strip()[-160:] if r.returncode else ""))
    if not ok:
        return True
    if verb == "generate":
        check(r.stdout.startswith("In the beginning") and len(r.stdout) > 200 and "stats:" in r.stderr,
              "generate wrote its text after the prompt and a stats line")
    elif verb == "chat":
        st = os.path.join(scratch, "talk.state")
        check(len(r.stdout) > 0 and os.path.getsize(st) > 0, "chat answered and saved talk.state")
    elif verb == "eval":
        m = re.search(r"^bits/byte ([0-9.]+) over (\d+) bytes", r.stdout, re.M)
        # docs/models.md: kjv-linear scores about 1.5 bits a byte on held-out text
        check(m is not None and 1.0 < float(m.group(1)) < 2.0 and int(m.group(2)) > 60000,
              "eval printed the whole text's bits per byte (%s)" % (m.group(0) if m else "none"))
    elif verb == "info":
        check("parameters" in r.stdout and "isa" in r.stdout.lower(), "info named the parameters and the ISA")
    elif verb == "attend":
        check(npy_shape(os.path.join(scratch, "out.npy")) == (1, 2, 5, 4), "attend wrote out.npy (1, 2, 5, 4)")
    elif verb == "tokenize":
        check(len(r.stdout.split()) >= 2, "tokenize printed the pieces")
    else:
        check(False, "README: no check for the command %r" % verb)
    return True


def quantize(lang, text):
    lines = [l for l in text.splitlines() if l.strip()]
    if lang != "sh" or len(lines) != 2 or not lines[0].startswith("linattn quantize "):
        return False
    r = sh(lines[0])
    out = lines[0].split()[3]
    check(r.returncode == 0 and os.path.getsize(os.path.join(scratch, out)) > 1000,
          "README: %s wrote %s (exit %d%s)" % (lines[0], out, r.returncode,
                                              ", " + r.stderr.strip()[-160:] if r.returncode else ""))
    r = sh(lines[1])
    check(r.returncode == 0 and r.stdout.startswith("In the beginning") and len(r.stdout) > 60,
          "README: %s ran the quantized file (exit %d)" % (lines[1], r.returncode))
    return True


def serve(lang, text):
    if "serve configs/" not in text or lang != "sh":
        return False
    port = free_port()
    first, rest = text.split("\n", 1)
    m = re.match(r"^build/linattn (serve \S+) &$", first)
    if not check(m is not None, "README serve block starts the server in the background"):
        return True
    log = open(os.path.join(scratch, "serve.log"), "w")
    srv = subprocess.Popen([EXE] + m.group(1).split() + ["--port", str(port)], cwd=scratch,
                           stdout=log, stderr=subprocess.STDOUT)
    try:
        for _ in range(300):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        # every command of the block as written, on this test's port
        script = rest.replace("localhost:8080", "localhost:%d" % port)
        r = sh(script)
        out = r.stdout
        check(r.returncode == 0, "the README serve block runs (exit %d, %s)" % (r.returncode, r.stderr[-200:]))
        objs = []
        dec = json.JSONDecoder()
        i = 0
        while i < len(out):
            if out[i] == "{":
                try:
                    o, j = dec.raw_decode(out, i)
                    objs.append(o)
                    i = j
                    continue
                except ValueError:
                    pass
            i += 1
        texts = [c.get("text") for o in objs for c in o.get("choices", []) if "text" in c]
        check(len(texts) >= 1 and texts[0], "the completion came back with text")
        check("data: [DONE]" in out, "the chat completion streamed to data: [DONE]")
        st = os.path.join(scratch, "stream.bin")
        check(os.path.exists(st) and os.path.getsize(st) > 0, "the stream's state file was written")
        check(any(o.get("id") == "moved" for o in objs), "the state file was put back as stream 'moved'")
    finally:
        srv.send_signal(signal.SIGTERM)
        try:
            srv.wait(timeout=30)
        except subprocess.TimeoutExpired:
            srv.kill()
        log.close()
    return True


def c_api(lang, text):
    if lang != "c":
        return False
    src = os.path.join(scratch, "readme.c")
    with open(src, "w") as f:
        f.write('#include <stdio.h>\n#include "linattn.h"\nint main(void)\n{\n')
        f.write(text)
        f.write('    printf("%d %d\\n", n, next);\n    linattn_session_free(s);\n'
                '    linattn_model_free(model);\n    return 0;\n}\n')
    exe = os.path.join(scratch, "readme-c")
    r = subprocess.run(["cc", "-std=c11", "-Wall", "-Werror", "-I", INCLUDE, src, LIB,
                        "-Wl,-rpath," + os.path.dirname(LIB), "-o", exe], capture_output=True, text=True)
    if check(r.returncode == 0, "README's C block compiles in a main() (%s)" % r.stderr.strip()[-300:]):
        r = subprocess.run([exe], cwd=scratch, capture_output=True, text=True, timeout=60)
        check(r.returncode == 0 and r.stdout.split() == ["16", "0"] and
              os.path.getsize(os.path.join(scratch, "stream.state")) > 0,
              "and runs: 16 prompt tokens, stream.state saved (%s)" % r.stdout.strip())
    return True


def python(lang, text):
    if lang != "python":
        return False
    r = subprocess.run([sys.executable, "-c", text], cwd=scratch, env=env, capture_output=True,
                       text=True, timeout=120)
    check(r.returncode == 0 and len(r.stdout.encode()) >= 190,  # 200 byte tokens, a few may join into one UTF-8 char
          "README's Python block runs and streams text (%s)" % r.stderr.strip()[-300:])
    return True


def ini(lang, text):
    if lang != "ini":
        return False
    with open(os.path.join(ROOT, "configs", "kjv-linear.ini")) as f:
        conf = {}
        for l in f:
            l = l.split(";")[0].strip()
            if "=" in l:
                k, v = l.split("=", 1)
                conf[k.strip()] = v.strip()
    for l in text.splitlines():
        l = l.split(";")[0].strip()
        if "=" in l:
            k, v = (x.strip() for x in l.split("=", 1))
            check(conf.get(k) == v, "README's config: %s = %s is configs/kjv-linear.ini's" % (k, v))
    return True


def layout(lang, text):
    if lang != "" or "include/linattn.h" not in text:
        return False
    for l in text.splitlines():
        if l[:1].isspace() or not l.strip():
            continue
        for path in l[:20].split():
            check(os.path.exists(os.path.join(ROOT, path)), "README layout: %s exists" % path)
    return True


KINDS = [quickstart, install, cli, quantize, serve, c_api, python, ini, layout]

try:
    for lang, line, text in blocks(os.path.join(ROOT, "README.md")):
        if not any(k(lang, text) for k in KINDS):
            check(False, "README.md line %d: a ```%s block no check knows" % (line, lang))

    # docs/models.md's sampled texts: `linattn generate CONFIG --tokens 200`
    # with the configs' sampling, newlines shown as spaces, cut with "...".
    with open(os.path.join(ROOT, "docs", "models.md"), encoding="utf-8") as f:
        rows = re.findall(r"^\| `(kjv-[\w-]+)` \| (In the beginning.*?)\.\.\. \|$", f.read(), re.M)
    check(len(rows) == 3, "docs/models.md shows three sampled texts")
    for name, shown in rows:
        r = sh("linattn generate configs/%s.ini --tokens 200" % name)
        got = " ".join(r.stdout.split("\n"))
        check(r.returncode == 0 and got.startswith(shown),
              "docs/models.md's %s sample is what it writes: %r" % (name, got[:len(shown) + 3]))
finally:
    shutil.rmtree(scratch, ignore_errors=True)

print("1..%d" % count)
sys.exit(1 if failed else 0)
