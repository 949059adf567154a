#!/usr/bin/python3
"""serve_park.py: many parked streams in one `linattn serve`: their bytes, and the
time a random one takes to come back and give its first new token.

    /usr/bin/python3 bench/serve_park.py build/linattn configs/kjv-linear.ini \\
        [--streams 10000] [--prompt 64] [--resume 200] [--where memory,disk,redis]

For each place (--where):
  memory  a server with --park-mem large enough for every stream
  disk    --park-mem 1 MiB and a temporary --state-dir: streams past it go to disk
  redis   a redis-server started on a free local port (Debian's; stopped after),
          --store redis://127.0.0.1:PORT; the streams are made on one server, which
          then stops, and resumed on a second one, so every resume reads Redis
it creates --streams streams (POST /v1/streams, a --prompt-token prompt each, all
different) and reports bytes a stream: the server's RSS growth over the streams, its
parked bytes (GET /metrics), and on disk the state dir's bytes (or Redis' used_memory)
over the streams. Then it resumes --resume random streams, each with
POST /v1/streams/ID/generate {"prompt": " And God said", "max_tokens": 1,
"stream": true} and times the request to its first token (parked, the server at
rest), then the same request again at once ("after": it waits for whatever the
restore made the server do, such as parking another stream to make room), then
once more 0.3 s later (active: the same prefill and HTTP, no restore). Medians, p90; the difference is the restore. Run it under taskset to pin
it and the servers it starts (they inherit the CPU set). Needs a few GB of RAM for
10,000 linear streams (kjv-linear: 397,312 bytes each).
"""
import argparse
import json
import os
import random
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import serve_util as su  # noqa: E402

NEW = " And God said"
REST = 0.3  # s: the server's parking after the last request done


def make_streams(srv, n, prompt_len):
    ids, t0 = [], time.perf_counter()
    for i in range(n):
        st, o = srv.call("POST", "/v1/streams", {"prompt": su.text(prompt_len, at=i)})
        if st != 201:
            su.die(f"POST /v1/streams (stream {i}): {st} {o}")
        ids.append(o["id"])
    return ids, time.perf_counter() - t0


def resume(srv, ids, k, seed, ask=True):
    """k random parked streams resumed; ask: check with GET that each is parked
    (not with a store: a GET takes the stream from it)."""
    rng = random.Random(seed)
    parked, after, active, where = [], [], [], {}
    req = {"prompt": NEW, "max_tokens": 1, "temperature": 0}
    for sid in rng.sample(ids, len(ids)):
        if len(parked) == k:
            break
        if ask:
            st, info = srv.call("GET", f"/v1/streams/{sid}")
            if st != 200 or info["parked"] == "active":
                continue
            where[info["parked"]] = where.get(info["parked"], 0) + 1
        time.sleep(REST)
        ms, _ = srv.first_token_ms(f"/v1/streams/{sid}/generate", req)
        parked.append(ms)
        ms, _ = srv.first_token_ms(f"/v1/streams/{sid}/generate", req)
        after.append(ms)
        time.sleep(REST)
        ms, _ = srv.first_token_ms(f"/v1/streams/{sid}/generate", req)
        active.append(ms)
    return {"resumed": len(parked), "where_before": where,
            "parked_ms_median": su.median(parked), "parked_ms_p90": su.pct(parked, 0.9),
            "after_ms_median": su.median(after), "after_ms_p90": su.pct(after, 0.9),
            "active_ms_median": su.median(active), "active_ms_p90": su.pct(active, 0.9),
            "restore_ms_median": su.median([p - a for p, a in zip(parked, active)])}


def dir_bytes(d):
    total = files = 0
    for name in os.listdir(d):
        total += os.path.getsize(os.path.join(d, name))
        files += name.endswith(".state")
    return total, files


def run_local(a, where):
    tmp = tempfile.mkdtemp(prefix="linattn-park-")
    try:
        args = ["--max-streams", str(a.streams + 16)]
        if where == "memory":
            args += ["--park-mem", str(2 * 400_000 * (a.streams + 16))]
        else:
            args += ["--park-mem", str(1 << 20), "--state-dir", tmp]
        srv = su.Server(a.exe, a.config, args, a.threads)
        try:
            rss0 = srv.rss()
            ids, secs = make_streams(srv, a.streams, a.prompt)
            time.sleep(0.5)
            rss1 = srv.rss()
            out = {"where": where, "streams": len(ids), "create_s": secs,
                   "rss_before": rss0, "rss_after": rss1,
                   "rss_per_stream": (rss1 - rss0) / len(ids),
                   "parked": srv.metric("linattn_streams_parked"),
                   "parked_bytes": srv.metric("linattn_parked_bytes")}
            st, info = srv.call("GET", f"/v1/streams/{ids[0]}")
            out["state_bytes"] = info.get("state_bytes")
            if where == "disk":
                b, files = dir_bytes(tmp)
                out.update(disk_bytes=b, disk_states=files,
                           disk_per_stream=b / files if files else float("nan"))
            out.update(resume(srv, ids, a.resume, a.seed))
            out["rss_end"] = srv.rss()
        finally:
            srv.stop()
        return out
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def run_redis(a):
    r = su.Redis()
    try:
        store = ["--store", f"redis://127.0.0.1:{r.port}", "--max-streams", str(a.streams + 16)]
        used0 = r.used_memory()
        srv = su.Server(a.exe, a.config, store, a.threads)
        try:
            rss0 = srv.rss()
            ids, secs = make_streams(srv, a.streams, a.prompt)
            rss1 = srv.rss()
        finally:
            srv.stop()
        used1 = r.used_memory()
        out = {"where": "redis", "streams": len(ids), "create_s": secs,
               "rss_per_stream_maker": (rss1 - rss0) / len(ids),
               "redis_used_memory": used1, "redis_per_stream": (used1 - used0) / len(ids)}
        srv = su.Server(a.exe, a.config, store, a.threads)  # every stream is in Redis alone
        try:
            out.update(resume(srv, ids, a.resume, a.seed, ask=False))
            out["rss_end"] = srv.rss()
        finally:
            srv.stop()
        return out
    finally:
        r.stop()


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("exe")
    ap.add_argument("config")
    ap.add_argument("--streams", type=int, default=10000)
    ap.add_argument("--prompt", type=int, default=64, help="prompt tokens (bytes) a stream")
    ap.add_argument("--resume", type=int, default=200, help="random streams resumed")
    ap.add_argument("--where", default="memory,disk,redis")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", default=None, help="write the figures here")
    a = ap.parse_args()
    rows = []
    for where in a.where.split(","):
        if where not in ("memory", "disk", "redis"):
            su.die(f"--where: unknown place '{where}' (memory, disk, redis)")
        row = run_redis(a) if where == "redis" else run_local(a, where)
        rows.append(row)
        print(json.dumps(row), flush=True)
    print(f"\n{'where':>6} {'streams':>7} {'B/stream':>10} {'first token ms':>15} "
          f"{'after ms':>9} {'active ms':>10} {'restore ms':>10}")
    for r in rows:
        per = r.get("disk_per_stream") or r.get("redis_per_stream") or r.get("rss_per_stream")
        print(f"{r['where']:>6} {r['streams']:7d} {per:10.0f} {r['parked_ms_median']:15.2f} "
              f"{r['after_ms_median']:9.2f} {r['active_ms_median']:10.2f} "
              f"{r['restore_ms_median']:10.2f}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"config": a.config, "prompt": a.prompt, "new": NEW, "rows": rows}, f,
                      indent=1)


if __name__ == "__main__":
    main()
