#!/usr/bin/python3
"""serve_bench.py: linattn serve under N concurrent streaming clients, alone
or against llama.cpp's llama-server on the same GGUF file.

    /usr/bin/python3 bench/serve_bench.py build/linattn configs/kjv-linear.ini \\
        --streams 1,8,32,128 --prompt 128 --tokens 128 --threads 1

Starts `linattn serve CONFIG --port 0` (and stops it), then for each N runs
N clients at once, each a POST /v1/completions with stream: true, a prompt
of --prompt tokens (bytes of KJV-like text: the demo models are byte-level)
and max_tokens --tokens, its own seed. Reports, per N: aggregate generated
tokens/s (all clients' tokens over the wall time from the first request to
the last token), the time to the first token (median) and the time between
a client's tokens (p50, p99), over --repeat runs (the median run by
aggregate speed). Python's standard library only; the figures are the
server's (a client thread only reads its socket).

Against llama.cpp (issue 20):

    /usr/bin/python3 bench/serve_bench.py build/linattn MODEL.gguf \\
        --llama-server /work/llamacpp/build/bin/llama-server \\
        --streams 1,8,32,128 --threads 1 --cpus 1

CONFIG is then a GGUF file. linattn serves it through a temporary config
(weights = gguf:FILE, max_seq_len = --ctx, kv_cache = --kv); for each N a
llama-server is started on the same file with --parallel N, -c N x --ctx,
--threads and --threads-batch as linattn's --threads, -fa off (llama-bench's
default), -ctk/-ctv as --kv, --cache-ram 0, -fit off, on 127.0.0.1. Then
--repeat rounds, each one run on each server, their order swapped every
round (linattn first in even rounds); the same requests, seeds and lengths
go to both. How the two are kept doing the same work:

 1. Prompt tokens: the prompt goes as a list of token ids, which both
    servers feed as they are (no BOS added, no tokenizer involved): the
    first --prompt ids of llama-server's POST /tokenize of the KJV-like text
    (BOS first; on llama2.c-style vocabularies with byte fallback, about a
    token a byte). Each reply's usage.prompt_tokens is checked against
    --prompt, on both (llama-server sends usage in its last event when
    asked: "stream_options": {"include_usage": true}).
 2. Generated tokens: "ignore_eos": true (llama-server: the end-of-
    generation tokens' logits to -inf) and "logit_bias": {EOS: -100} (linattn
    has no ignore_eos; its sampler makes -100 -inf; the EOS id from the
    GGUF's tokenizer.ggml.eos_token_id) in every request, so both make
    exactly --tokens tokens (a random model samples its EOS about once in
    32000 tokens: an N = 128 round would lose some otherwise). Each reply's
    usage.completion_tokens and finish_reason are checked.
    llama-server's requests also bias the byte tokens <0x80>..<0xFF> to
    -inf: llama-server (at 0253fb2) runs its chat parser over the text
    after every token, also for /v1/completions, and a lone high byte (an
    invalid UTF-8 text, which a random model makes in about a third of its
    128-token replies) fails it: the stream ends early with a 500 "Failed
    to parse input". linattn sends such a byte as U+FFFD and takes at most
    64 biases, so it gets the EOS one only; which tokens are sampled does
    not change the work of either.
    Context: llama-server caps a slot's context at the file's
    {arch}.context_length (128 for llama.cpp's llama2.c converter) and
    refuses a longer request, so the key is overridden to --ctx
    (--override-kv) when smaller; --ctx defaults to --prompt + --tokens
    rounded up to 256.
 3. Caches and defaults: "cache_prompt": false in every request and
    --cache-ram 0 (llama-server keeps no prompt between requests and saves
    no slot to RAM after one), linattn --prefix-cache 0; K/V cache f16 on
    both by default (--kv; llama.cpp's default); flash attention off (as
    llama-bench runs it); sampling given in every request, llama-server's
    defaults (temperature 0.8, top_k 40, top_p 0.95, min_p 0.05; linattn's
    own min_p default is 0). Each server stays up through the rounds of an
    N and sleeps while the other runs (llama-server's threads poll for
    work briefly, --poll 50, then wait). linattn runs with OMP_NUM_THREADS
    = --threads; its threads follow the free cores (engine/threads.c: with
    the client loading a core it may use fewer than asked;
    LINATTN_THREADS_FOLLOW=0 in the environment turns that off).
    --llama-args adds llama-server arguments (e.g. "-kvu": one unified K/V
    cache; without it each of the N slots has its own).
 4. Pinning only when asked: --cpus CPUS runs both servers under
    taskset -c CPUS and moves this script (the clients) to the other CPUs
    when there are any.

Token times: a client stamps each event that carries text with its arrival
time, and counts the tokens a reply holds from its usage (both servers
stream a token an event unless text is held back, e.g. an unfinished UTF-8
character, or the client lags; the few tokens that shared an event count
as gaps of 0, wherever they fell: the set of gaps is the same). The
"check" line after each N says the prompt and generated token counts both
servers reported and how many tokens shared an event.
"""
import argparse
import http.client
import json
import os
import re
import shlex
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time

from serve_util import free_port

TEXT = ("In the beginning God created the heaven and the earth. And the earth was without "
        "form, and void; and darkness was upon the face of the deep. And the Spirit of God "
        "moved upon the face of the waters. ")


def start(exe, config, threads, extra, pin=(), env=None):
    p = subprocess.Popen(list(pin) + [exe, "serve", config, "--port", "0", "--threads",
                                      str(threads)] + extra,
                         stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, env=env)
    line = p.stderr.readline()
    if "http://" not in line:
        p.kill()
        sys.exit(f"serve_bench: the server did not start: {line.strip()}")
    port = int(line.split("http://127.0.0.1:")[1].split()[0])
    return p, port


def client(port, prompt, tokens, seed, out):
    t0 = time.perf_counter()
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    body = json.dumps({"prompt": prompt, "max_tokens": tokens, "temperature": 0.8,
                       "seed": seed, "stream": True})
    c.request("POST", "/v1/completions", body, {"Content-Type": "application/json"})
    r = c.getresponse()
    times = []
    for raw in r:
        line = raw.decode().strip()
        if not line.startswith("data: ") or line == "data: [DONE]":
            continue
        ev = json.loads(line[6:])
        n = len(ev["choices"][0]["text"])  # a byte-level model: a byte a token
        times += [time.perf_counter()] * n
    c.close()
    out.append((t0, times))


def summary(n, out):
    """The figures of one run: out holds each client's (start, token times)."""
    start = min(t0 for t0, _ in out)
    end = max(ts[-1] for _, ts in out if ts)
    total = sum(len(ts) for _, ts in out)
    ttft = [ts[0] - t0 for t0, ts in out if ts]
    gaps = [b - a for _, ts in out for a, b in zip(ts, ts[1:])]  # tokens of one event: 0
    gaps.sort()

    def pct(p):
        return gaps[min(len(gaps) - 1, int(p * len(gaps)))] if gaps else float("nan")

    return {"streams": n, "tokens": total, "seconds": end - start,
            "tok_s": total / (end - start), "ttft_ms": 1e3 * statistics.median(ttft),
            "itl_p50_ms": 1e3 * pct(0.5), "itl_p99_ms": 1e3 * pct(0.99)}


def run(port, n, prompt, tokens, seed0):
    out, threads = [], []
    for i in range(n):
        t = threading.Thread(target=client, args=(port, prompt, tokens, seed0 + i, out))
        threads.append(t)
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return summary(n, out)


# ---- against llama-server ---------------------------------------------------------

def gguf_meta(path, keep=()):
    """The key/value pairs of a GGUF file's header (arrays: None, but those
    of strings named in keep: lists)."""
    scalar = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q",
              12: "d"}
    kv = {}
    with open(path, "rb") as f:
        if f.read(4) != b"GGUF":
            sys.exit(f"serve_bench: {path}: not a GGUF file")
        _, _, nkv = struct.unpack("<IQQ", f.read(20))

        def string():
            n, = struct.unpack("<Q", f.read(8))
            return f.read(n)

        def value(t, k=None):
            if t == 8:
                return string().decode(errors="replace")
            if t == 9:
                et, n = struct.unpack("<IQ", f.read(12))
                if et == 8 and k in keep:
                    return [value(8) for _ in range(n)]
                for _ in range(n):
                    value(et) if et in (8, 9) else f.seek(struct.calcsize(scalar[et]), 1)
                return None
            fmt = "<" + scalar[t]
            return struct.unpack(fmt, f.read(struct.calcsize(fmt)))[0]

        for _ in range(nkv):
            k = string().decode()
            t, = struct.unpack("<I", f.read(4))
            kv[k] = value(t, k)
    return kv


def post(port, path, body):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    c.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
    r = c.getresponse()
    data = r.read()
    c.close()
    if r.status != 200:
        sys.exit(f"serve_bench: POST {path}: {r.status} {data[:300]!r}")
    return json.loads(data)


class LlamaServer:
    """llama-server on the GGUF file with n slots of ctx tokens each, up once
    GET /health answers 200."""

    def __init__(self, exe, gguf, n, ctx, threads, kv, pin, extra, ctx_key):
        self.log = tempfile.NamedTemporaryFile(prefix="llama-server-", suffix=".log")
        self.port = free_port()
        args = [exe, "-m", gguf, "--host", "127.0.0.1", "--port", str(self.port),
                "--parallel", str(n), "-c", str(n * ctx), "-t", str(threads),
                "-tb", str(threads), "-fa", "off", "-ctk", kv, "-ctv", kv,
                "--cache-ram", "0", "-fit", "off"]
        if ctx_key:
            args += ["--override-kv", f"{ctx_key}=int:{ctx}"]
        self.args = args + extra
        self.p = subprocess.Popen(list(pin) + self.args, stdout=self.log, stderr=self.log)
        for _ in range(3000):
            if self.p.poll() is not None:
                self.fail(f"llama-server exited ({self.p.returncode})")
            try:
                c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
                c.request("GET", "/health")
                ok = c.getresponse().status == 200
                c.close()
                if ok:
                    return
            except OSError:
                pass
            time.sleep(0.05)
        self.fail("llama-server did not answer /health")

    def fail(self, msg):
        self.stop(keep_log=True)
        with open(self.log.name, errors="replace") as f:
            tail = "".join(f.readlines()[-15:])
        sys.exit(f"serve_bench: {msg}: {' '.join(self.args)}\n{tail}")

    def stop(self, keep_log=False):
        if self.p.poll() is None:
            self.p.terminate()
            try:
                self.p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
        if not keep_log:
            self.log.close()


def stream_client(port, body, out):
    """One streaming completion: (start, a time per token, prompt tokens,
    events that carried text, finish_reason or the error)."""
    t0 = time.perf_counter()
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    c.request("POST", "/v1/completions", json.dumps(body), {"Content-Type": "application/json"})
    r = c.getresponse()
    times, usage, finish = [], None, None
    if r.status != 200:
        finish = f"HTTP {r.status}: {r.read()[:200]!r}"
    else:
        for raw in r:
            line = raw.decode(errors="replace").strip()
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            ev = json.loads(line[6:])
            now = time.perf_counter()
            if "error" in ev:
                finish = f"error: {ev['error']}"
                continue
            ch = ev["choices"][0] if ev.get("choices") else {}
            if ch.get("text"):
                times.append(now)
            finish = ch.get("finish_reason") or finish
            usage = ev.get("usage") or usage
    c.close()
    events = len(times)
    made = usage["completion_tokens"] if usage else events
    times += times[-1:] * (made - events)  # tokens that shared an event: gaps of 0
    out.append((t0, times, usage["prompt_tokens"] if usage else -1, events, finish))


def run_cmp(port, n, body, seed0):
    out, threads = [], []
    for i in range(n):
        t = threading.Thread(target=stream_client, args=(port, dict(body, seed=seed0 + i), out))
        threads.append(t)
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    s = summary(n, [(t0, ts) for t0, ts, *_ in out])
    s["made"] = sorted({len(ts) for _, ts, *_ in out})
    s["prompt_tokens"] = sorted({pt for _, _, pt, _, _ in out})
    s["shared"] = sum(len(ts) - ev for _, ts, _, ev, _ in out)
    s["finish"] = sorted({str(f) for *_, f in out})
    return s


def compare(a, pin):
    gguf = os.path.abspath(a.config)
    meta = gguf_meta(gguf, keep=("tokenizer.ggml.tokens",))
    high = [i for i, t in enumerate(meta.get("tokenizer.ggml.tokens") or [])
            if re.fullmatch(r"<0x[89A-F][0-9A-F]>", t)]
    arch = meta.get("general.architecture", "llama")
    ctx = a.ctx or -(-(a.prompt + a.tokens) // 256) * 256
    ctx_key = f"{arch}.context_length"
    if (meta.get(ctx_key) or 0) >= ctx:
        ctx_key = None
    eos = meta.get("tokenizer.ggml.eos_token_id")
    ini = tempfile.NamedTemporaryFile("w", prefix="serve-bench-", suffix=".ini")
    ini.write(f"[model]\nweights = gguf:{gguf}\nmax_seq_len = {ctx}\n"
              f"[runtime]\nkv_cache = {a.kv}\n")
    ini.flush()
    env = dict(os.environ, OMP_NUM_THREADS=str(a.threads))
    streams = [int(x) for x in a.streams.split(",")]
    extra = shlex.split(a.llama_args)
    rows = {"linattn": [], "llama.cpp": []}
    lin, lport = start(a.exe, ini.name, a.threads, ["--prefix-cache", "0"], pin, env)
    body, lbody, ids = None, None, None
    print(f"linattn serve {ini.name} (weights = gguf:{gguf}, max_seq_len {ctx}, kv_cache "
          f"{a.kv}) --threads {a.threads} --prefix-cache 0")
    try:
        print(f"{'streams':>7} {'server':<9} {'tok/s':>9} {'ttft ms':>8} {'itl p50':>8} "
              f"{'itl p99':>8}  runs", flush=True)
        for n in streams:
            ls = LlamaServer(a.llama_server, gguf, n, ctx, a.threads, a.kv, pin, extra, ctx_key)
            try:
                if n == streams[0]:
                    print("llama-server " + " ".join(ls.args[1:]).replace(f"--parallel {n} -c {n * ctx}",
                          "--parallel N -c N*%d" % ctx), flush=True)
                if ids is None:
                    text = TEXT * (4 * a.prompt // len(TEXT) + 2)
                    ids = post(ls.port, "/tokenize", {"content": text, "add_special": True})
                    ids = ids["tokens"][:a.prompt]
                    if len(ids) < a.prompt:
                        sys.exit(f"serve_bench: the text makes only {len(ids)} tokens")
                    body = {"prompt": ids, "max_tokens": a.tokens, "stream": True,
                            "stream_options": {"include_usage": True}, "temperature": 0.8,
                            "top_k": 40, "top_p": 0.95, "min_p": 0.05, "ignore_eos": True,
                            "cache_prompt": False}
                    if eos is not None:
                        body["logit_bias"] = {str(eos): -100}
                    lbody = dict(body, logit_bias=dict(body.get("logit_bias", {}),
                                                       **{str(i): False for i in high}))
                ports = {"linattn": lport, "llama.cpp": ls.port}
                bodies = {"linattn": body, "llama.cpp": lbody}
                for name, port in ports.items():  # warm-up
                    run_cmp(port, 1, dict(bodies[name], max_tokens=8), 0)
                runs = {"linattn": [], "llama.cpp": []}
                for k in range(a.repeat):
                    order = ["linattn", "llama.cpp"] if k % 2 == 0 else ["llama.cpp", "linattn"]
                    for name in order:
                        runs[name].append(run_cmp(ports[name], n, bodies[name], 1000 * k))
            finally:
                ls.stop()
            med = {}
            for name in ("linattn", "llama.cpp"):
                rs = sorted(runs[name], key=lambda r: r["tok_s"])
                m = rs[len(rs) // 2]
                m["runs_tok_s"] = [round(r["tok_s"], 1) for r in rs]
                med[name] = m
                rows[name].append(m)
                print(f"{n:7d} {name:<9} {m['tok_s']:9.1f} {m['ttft_ms']:8.1f} "
                      f"{m['itl_p50_ms']:8.2f} {m['itl_p99_ms']:8.2f}  {m['runs_tok_s']}")
            x, y = med["linattn"], med["llama.cpp"]
            r = [x[k] / y[k] if y[k] else float("nan")
                 for k in ("tok_s", "ttft_ms", "itl_p50_ms", "itl_p99_ms")]
            print(f"{n:7d} {'ratio':<9} {r[0]:9.2f} {r[1]:8.2f} {r[2]:8.2f} {r[3]:8.2f}")
            chk = []
            for name in ("linattn", "llama.cpp"):
                rs = runs[name]
                pt = sorted({p for q in rs for p in q["prompt_tokens"]})
                made = sorted({t for q in rs for t in q["made"]})
                fin = sorted({f for q in rs for f in q["finish"]})
                shared = sum(q["shared"] for q in rs)
                bad = pt != [a.prompt] or made != [a.tokens] or fin != ["length"]
                chk.append(f"{name} prompt {pt} made {made} finish {fin}, {shared} of "
                           f"{sum(q['tokens'] for q in rs)} tokens shared an event"
                           + (" MISMATCH" if bad else ""))
            print("        check: " + "; ".join(chk), flush=True)
    finally:
        lin.terminate()
        lin.wait()
        ini.close()
    print("(ratio = linattn / llama.cpp: above 1 is faster for tok/s, slower for the ms)")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"config": a.config, "llama_server": a.llama_server, "threads": a.threads,
                       "cpus": a.cpus, "prompt": a.prompt, "tokens": a.tokens, "ctx": ctx,
                       "kv": a.kv, "llama_args": a.llama_args, "prompt_ids": ids,
                       "body": body, "llama_body": lbody,
                       "rows": rows["linattn"], "llama_rows": rows["llama.cpp"]}, f, indent=1)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("exe")
    ap.add_argument("config", help="linattn's config; with --llama-server, a GGUF file")
    ap.add_argument("--streams", default="1,8,32,128")
    ap.add_argument("--prompt", type=int, default=128, help="prompt tokens (bytes)")
    ap.add_argument("--tokens", type=int, default=128, help="generated tokens a client")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", default=None)
    ap.add_argument("--cpus", default=None,
                    help="run the server(s) under taskset -c CPUS (e.g. 1 or 0,1), the "
                         "clients on the other CPUs")
    ap.add_argument("--llama-server", default=None, metavar="PATH",
                    help="llama.cpp's llama-server: the same runs against it, rounds alternating")
    ap.add_argument("--llama-args", default="", help="more llama-server arguments")
    ap.add_argument("--ctx", type=int, default=0,
                    help="context of a stream (default: prompt + tokens rounded up to 256)")
    ap.add_argument("--kv", default="f16", help="K/V cache type of both servers (f16, f32)")
    a = ap.parse_args()
    pin = []
    if a.cpus:
        pin = ["taskset", "-c", a.cpus]
        mine = set(os.sched_getaffinity(0))
        cpus = set()
        for part in a.cpus.split(","):
            lo, _, hi = part.partition("-")
            cpus |= set(range(int(lo), int(hi or lo) + 1))
        if mine - cpus:
            os.sched_setaffinity(0, mine - cpus)
    if a.llama_server:
        if not os.access(a.llama_server, os.X_OK):
            sys.exit(f"serve_bench: {a.llama_server}: not an executable")
        return compare(a, pin)
    prompt = (TEXT * (a.prompt // len(TEXT) + 1))[:a.prompt]
    p, port = start(a.exe, a.config, a.threads, ["--prefix-cache", "0"], pin)
    rows = []
    try:
        run(port, 1, prompt, 8, 0)  # warm-up
        print(f"{'streams':>7} {'tok/s':>9} {'ttft ms':>8} {'itl p50':>8} {'itl p99':>8}  runs")
        for n in [int(x) for x in a.streams.split(",")]:
            runs = sorted((run(port, n, prompt, a.tokens, 1000 * k) for k in range(a.repeat)),
                          key=lambda r: r["tok_s"])
            m = runs[len(runs) // 2]
            m["runs_tok_s"] = [round(r["tok_s"], 1) for r in runs]
            rows.append(m)
            print(f"{n:7d} {m['tok_s']:9.1f} {m['ttft_ms']:8.1f} {m['itl_p50_ms']:8.2f} "
                  f"{m['itl_p99_ms']:8.2f}  {m['runs_tok_s']}", flush=True)
    finally:
        p.terminate()
        p.wait()
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"config": a.config, "threads": a.threads, "prompt": a.prompt,
                       "tokens": a.tokens, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
