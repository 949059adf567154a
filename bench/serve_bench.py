#!/usr/bin/python3
"""serve_bench.py: linattn serve under N concurrent streaming clients.

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
"""
import argparse
import http.client
import json
import statistics
import subprocess
import sys
import threading
import time

TEXT = ("In the beginning God created the heaven and the earth. And the earth was without "
        "form, and void; and darkness was upon the face of the deep. And the Spirit of God "
        "moved upon the face of the waters. ")


def start(exe, config, threads, extra):
    p = subprocess.Popen([exe, "serve", config, "--port", "0", "--threads", str(threads)] + extra,
                         stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
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


def run(port, n, prompt, tokens, seed0):
    out, threads = [], []
    for i in range(n):
        t = threading.Thread(target=client, args=(port, prompt, tokens, seed0 + i, out))
        threads.append(t)
    for t in threads:
        t.start()
    for t in threads:
        t.join()
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


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("exe")
    ap.add_argument("config")
    ap.add_argument("--streams", default="1,8,32,128")
    ap.add_argument("--prompt", type=int, default=128, help="prompt tokens (bytes)")
    ap.add_argument("--tokens", type=int, default=128, help="generated tokens a client")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    prompt = (TEXT * (a.prompt // len(TEXT) + 1))[:a.prompt]
    p, port = start(a.exe, a.config, a.threads, ["--prefix-cache", "0"])
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
