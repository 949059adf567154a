"""serve_util.py: what the serve benchmarks share: start and stop `linattn serve`
(and a redis-server) on 127.0.0.1, its RSS, small HTTP calls. Standard library only."""
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

TEXT = ("In the beginning God created the heaven and the earth. And the earth was without "
        "form, and void; and darkness was upon the face of the deep. And the Spirit of God "
        "moved upon the face of the waters. ")


def text(n, at=0):
    """n bytes of KJV-like text (a token each: the demo models are byte-level)."""
    s = TEXT * ((at + n) // len(TEXT) + 2)
    return s[at % len(TEXT):at % len(TEXT) + n]


def die(msg):
    sys.exit(f"{os.path.basename(sys.argv[0])}: {msg}")


class Server:
    """linattn serve CONFIG --port 0 ARGS, up once it says where it listens."""

    def __init__(self, exe, config, args=(), threads=1):
        if not os.access(exe, os.X_OK):
            die(f"{exe}: not an executable (build first: ninja -C build)")
        if not os.path.exists(config):
            die(f"{config}: no such config")
        self.err = tempfile.NamedTemporaryFile(prefix="linattn-serve-", suffix=".err")
        self.p = subprocess.Popen([exe, "serve", config, "--port", "0", "--threads",
                                   str(threads)] + list(args),
                                  stdout=subprocess.DEVNULL, stderr=self.err)
        self.port = 0
        for _ in range(3000):
            with open(self.err.name) as f:
                log = f.read()
            if "http://127.0.0.1:" in log:
                self.port = int(log.split("http://127.0.0.1:")[1].split()[0])
                break
            if self.p.poll() is not None:
                die(f"the server exited ({self.p.returncode}): {log.strip()}")
            time.sleep(0.01)
        if not self.port:
            self.stop()
            die("the server did not say where it listens")
        self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=600)

    def call(self, method, path, body=None, raw=False):
        """One request on the kept connection: (status, parsed JSON or bytes)."""
        data = json.dumps(body) if isinstance(body, (dict, list)) else body
        for attempt in range(2):
            try:
                self.conn.request(method, path, data, {"Content-Type": "application/json"})
                r = self.conn.getresponse()
                out = r.read()
                break
            except (http.client.HTTPException, ConnectionError):
                if attempt:
                    raise
                self.conn.close()
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=600)
        return r.status, out if raw else json.loads(out or b"null")

    def first_token_ms(self, path, body):
        """ms from sending body (stream: true) on a new connection to the first
        event that carries text; and the reply's whole text."""
        t0 = time.perf_counter()
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=600)
        c.request("POST", path, json.dumps(dict(body, stream=True)),
                  {"Content-Type": "application/json"})
        r = c.getresponse()
        if r.status != 200:
            die(f"POST {path}: {r.status} {r.read().decode(errors='replace')}")
        first, got = None, ""
        for raw in r:
            line = raw.decode().strip()
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            piece = json.loads(line[6:])["choices"][0].get("text", "")
            if piece and first is None:
                first = time.perf_counter()
            got += piece
        c.close()
        return 1e3 * ((first or time.perf_counter()) - t0), got

    def rss(self):
        """The server's resident set, bytes."""
        with open(f"/proc/{self.p.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
        return 0

    def metric(self, name):
        st, body = self.call("GET", "/metrics", raw=True)
        for line in body.decode().splitlines():
            if line.startswith(name + " "):
                return float(line.split()[1])
        return float("nan")

    def stop(self):
        self.conn.close() if getattr(self, "conn", None) else None
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
            try:
                self.p.wait(timeout=600)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
        self.err.close()


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Redis:
    """Debian's redis-server on a free local port, nothing saved, stopped by stop()."""

    def __init__(self):
        exe = shutil.which("redis-server")
        if not exe:
            die("no redis-server (Debian: apt-get install redis-server, or "
                "scripts/install-deps.sh --tests)")
        self.dir = tempfile.mkdtemp(prefix="linattn-redis-")
        self.port = free_port()
        self.p = subprocess.Popen([exe, "--port", str(self.port), "--bind", "127.0.0.1",
                                   "--save", "", "--appendonly", "no", "--dir", self.dir],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(500):
            try:
                if self.command("PING") == "PONG":
                    return
            except OSError:
                time.sleep(0.01)
        self.stop()
        die("redis-server did not answer")

    def command(self, *words):
        """One RESP command; a simple or bulk string reply."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=10) as s:
            msg = f"*{len(words)}\r\n" + "".join(f"${len(w)}\r\n{w}\r\n" for w in words)
            s.sendall(msg.encode())
            buf = b""
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                buf += chunk
                if buf.startswith(b"+") and buf.endswith(b"\r\n"):
                    return buf[1:-2].decode()
                if buf.startswith(b"$"):
                    n, _, rest = buf[1:].partition(b"\r\n")
                    if len(rest) >= int(n) + 2:
                        return rest[:int(n)].decode()
            return buf.decode()

    def used_memory(self):
        for line in self.command("INFO", "memory").splitlines():
            if line.startswith("used_memory:"):
                return int(line.split(":")[1])
        return 0

    def stop(self):
        if self.p.poll() is None:
            self.p.terminate()
            self.p.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2] if len(xs) % 2 else 0.5 * (xs[len(xs) // 2 - 1] + xs[len(xs) // 2])


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * len(xs)))]
