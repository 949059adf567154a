#!/usr/bin/python3
"""serve_long.py: one long conversation on one stream of `linattn serve`: time per
generated token and the server's RSS as the stream grows.

    /usr/bin/python3 bench/serve_long.py build/linattn configs/kjv-linear.ini \\
        [--total 100000] [--turn 400] [--answer 100] [--threads 1]

Starts the server (and stops it), makes one stream (POST /v1/streams), then turn after
turn appends --turn tokens of text (POST /v1/streams/ID/append: the user) and draws
--answer tokens (POST /v1/streams/ID/generate, temperature 0.8, a seed a turn: the
model) until the stream holds --total tokens. Each turn records the answer's wall
time over its tokens (ms a generated token, HTTP included), the server's own time
between tokens (linattn_inter_token_seconds from GET /metrics) and the server's RSS.
Prints them by tenths of the conversation (medians) and the RSS range: for a linear
stream both should stay flat. A softmax model stops at its max_seq_len (the script
says where). Run it under taskset to pin it and the server.
"""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import serve_util as su  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("exe")
    ap.add_argument("config")
    ap.add_argument("--total", type=int, default=100000, help="tokens in the stream at the end")
    ap.add_argument("--turn", type=int, default=400, help="tokens appended a turn")
    ap.add_argument("--answer", type=int, default=100, help="tokens generated a turn")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--json", default=None, help="write every turn's figures here")
    a = ap.parse_args()
    if a.turn < 1 or a.answer < 1 or a.total < a.turn + a.answer:
        su.die("--turn and --answer must be >= 1 and --total at least one turn")
    srv = su.Server(a.exe, a.config, ["--prefix-cache", "0"], a.threads)
    turns = []
    try:
        st, o = srv.call("POST", "/v1/streams", {})
        if st != 201:
            su.die(f"POST /v1/streams: {st} {o}")
        sid, tokens, k = o["id"], 0, 0
        while tokens + a.turn + a.answer <= a.total:
            st, o = srv.call("POST", f"/v1/streams/{sid}/append",
                             {"text": su.text(a.turn, at=tokens)})
            if st != 200:
                print(f"stopped at {tokens} tokens: append: {st} {o}")
                break
            s0 = srv.metric("linattn_inter_token_seconds_sum")
            n0 = srv.metric("linattn_inter_token_seconds_count")
            t0 = time.perf_counter()
            st, o = srv.call("POST", f"/v1/streams/{sid}/generate",
                             {"max_tokens": a.answer, "temperature": 0.8, "seed": k})
            wall = time.perf_counter() - t0
            if st != 200:
                print(f"stopped at {tokens} tokens: generate: {st} {o}")
                break
            got = o["usage"]["completion_tokens"]
            s1 = srv.metric("linattn_inter_token_seconds_sum")
            n1 = srv.metric("linattn_inter_token_seconds_count")
            st, info = srv.call("GET", f"/v1/streams/{sid}")
            tokens = int(info["tokens"])
            turns.append({"tokens": tokens, "generated": got, "ms_token": 1e3 * wall / got,
                          "itl_ms": 1e3 * (s1 - s0) / (n1 - n0) if n1 > n0 else float("nan"),
                          "rss": srv.rss()})
            k += 1
    finally:
        srv.stop()
    if not turns:
        su.die("no turn completed")
    print(f"{'tokens up to':>12} {'ms/token':>9} {'server itl ms':>14} {'RSS MiB':>8}")
    tenth = max(1, len(turns) // 10)
    for i in range(0, len(turns), tenth):
        part = turns[i:i + tenth]
        print(f"{part[-1]['tokens']:12d} {su.median([t['ms_token'] for t in part]):9.3f} "
              f"{su.median([t['itl_ms'] for t in part]):14.3f} "
              f"{max(t['rss'] for t in part) / 2**20:8.1f}")
    rss = [t["rss"] for t in turns]
    first, last = turns[:tenth], turns[-tenth:]
    summary = {"turns": len(turns), "tokens": turns[-1]["tokens"],
               "ms_token_first_tenth": su.median([t["ms_token"] for t in first]),
               "ms_token_last_tenth": su.median([t["ms_token"] for t in last]),
               "itl_ms_first_tenth": su.median([t["itl_ms"] for t in first]),
               "itl_ms_last_tenth": su.median([t["itl_ms"] for t in last]),
               "rss_min": min(rss), "rss_max": max(rss),
               "rss_after_first_turn": rss[0], "rss_end": rss[-1]}
    print(json.dumps(summary))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"config": a.config, "summary": summary, "turns": turns}, f, indent=1)


if __name__ == "__main__":
    main()
