"""The Python bindings (python/linattn) against the library and the CLI.

Run by meson test with Debian's /usr/bin/python3: PYTHONPATH holds
python/, LINATTN_LIB the built liblinattn.so, LINATTN_EXE the linattn
program, LINATTN_ROOT the source tree. numpy is used when present; the
same checks also run with numpy hidden (LINATTN_TEST_NO_NUMPY=1).
"""
import os
import subprocess
import sys
import tempfile
import unittest

if os.environ.get("LINATTN_TEST_NO_NUMPY"):
    sys.modules["numpy"] = None  # makes "import numpy" fail inside linattn

import linattn  # noqa: E402

ROOT = os.environ.get("LINATTN_ROOT", os.path.join(os.path.dirname(__file__), ".."))
EXE = os.environ.get("LINATTN_EXE")
LINEAR = os.path.join(ROOT, "configs", "kjv-linear.ini")
SOFTMAX = os.path.join(ROOT, "configs", "kjv-softmax.ini")
PROMPT = "In the beginning God"


def argmax(xs):
    best = 0
    for i in range(1, len(xs)):
        if xs[i] > xs[best]:
            best = i
    return best


class Bindings(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.model = linattn.Model(LINEAR)

    def test_numpy_or_not(self):
        s = self.model.session()
        s.feed([65])
        have = not os.environ.get("LINATTN_TEST_NO_NUMPY")
        self.assertEqual(type(s.logits).__name__, "ndarray" if have else "memoryview")
        self.assertEqual(len(s.logits), 256)

    def test_greedy_text_equals_the_cli(self):
        # the same model, prompt and greedy decoding: the bytes the CLI writes
        text = "".join(self.model.generate(PROMPT, max_tokens=60, temperature=0))
        self.assertEqual(len(text.encode()), 60)
        if EXE:
            out = subprocess.run([EXE, "generate", LINEAR, "-p", PROMPT, "-n", "60",
                                  "--temperature", "0", "--no-display-prompt"],
                                 capture_output=True, check=True).stdout
            self.assertEqual(out.rstrip(b"\n"), text.encode())

    def test_tokenizer_round_trip(self):
        tok = self.model.tokenizer
        self.assertEqual(tok.name, "bytes")
        self.assertEqual(tok.vocab, 256)
        ids = tok.encode("Let there be light")
        self.assertEqual(ids, list(b"Let there be light"))
        self.assertEqual(tok.decode(ids), "Let there be light")
        self.assertEqual(tok.decode(tok.encode("é½")), "é½")  # two bytes a character
        self.assertIsNone(tok.bos)

    def test_prefill_equals_steps_and_feed_all(self):
        ids = self.model.tokenizer.encode(PROMPT)
        a, b = self.model.session(), self.model.session()
        la = a.feed(ids)
        for t in ids:
            lb = b.feed([t])
        self.assertEqual(a.tokens, len(ids))
        self.assertLess(max(abs(x - y) for x, y in zip(la, lb)), 1e-4)
        c = self.model.session()
        rows = c.feed_all(ids)
        self.assertEqual(len(rows), len(ids))
        self.assertEqual(list(rows[-1]), list(c.logits))
        self.assertLess(max(abs(x - y) for x, y in zip(rows[-1], la)), 1e-4)

    def test_save_load_fork_and_bytes(self):
        s = self.model.session()
        s.feed(self.model.tokenizer.encode(PROMPT))
        self.assertEqual(s.state_bytes, 397312)
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "s.state")
            s.save(path, extra=b"host data")
            r = self.model.session()
            self.assertEqual(r.load(path), b"host data")
        self.assertEqual(list(r.logits), list(s.logits))
        self.assertEqual(r.tokens, s.tokens)
        f = s.fork()
        m = self.model.session()
        self.assertEqual(m.from_bytes(s.to_bytes(b"x")), b"x")
        nxt = argmax(s.logits)
        want = list(s.feed([nxt]))
        for other in (r, f, m):
            self.assertEqual(list(other.feed([nxt])), want)

    def test_truncate_softmax_refuse_linear(self):
        ids = self.model.tokenizer.encode(PROMPT)
        lin = self.model.session()
        lin.feed(ids)
        with self.assertRaises(linattn.Error) as e:
            lin.truncate(3)
        self.assertIn("linear stream cannot be cut", str(e.exception))
        self.assertEqual(lin.tokens, len(ids))
        sm = linattn.Model(SOFTMAX)
        long, fresh = sm.session(), sm.session()
        long.feed(ids[:10])
        long.feed(list(b" made the light"))
        long.truncate(10)
        self.assertEqual(long.tokens, 10)
        with self.assertRaises(linattn.Error):
            long.truncate(11)
        fresh.feed(ids[:10])
        self.assertEqual(list(long.feed(ids[10:])), list(fresh.feed(ids[10:])))

    def test_sessions_step_equals_each_alone(self):
        ids = self.model.tokenizer.encode(PROMPT)
        batch = [self.model.session() for _ in range(3)]
        alone = [self.model.session() for _ in range(3)]
        for i, (b, a) in enumerate(zip(batch, alone)):
            b.feed(ids[:5 + i])
            a.feed(ids[:5 + i])
        nxt = [70, 71, 72]
        got = linattn.sessions_step(batch, nxt)
        for i, a in enumerate(alone):
            want = a.feed([nxt[i]])
            self.assertLess(max(abs(x - y) for x, y in zip(got[i], want)), 1e-5)

    def test_sampler_seeded_and_greedy(self):
        s = self.model.session()
        logits = s.feed(self.model.tokenizer.encode(PROMPT))
        g = self.model.sampler(temperature=0)
        self.assertEqual(g.sample(logits), argmax(logits))
        a = self.model.sampler(temperature=1.0, seed=7)
        b = self.model.sampler(temperature=1.0, seed=7)
        da = [a.sample(logits) for _ in range(20)]
        self.assertEqual(da, [b.sample(logits) for _ in range(20)])
        self.assertGreater(len(set(da)), 1)
        banned = self.model.sampler(temperature=0, logit_bias={argmax(logits): float("-inf")})
        self.assertNotEqual(banned.sample(logits), argmax(logits))
        st = a.state
        x = a.sample(logits)
        a.state = st
        self.assertEqual(a.sample(logits), x)

    def test_errors_carry_the_message(self):
        with self.assertRaises(linattn.Error) as e:
            linattn.Model("/nonexistent/model.ini")
        self.assertIn("/nonexistent/model.ini", str(e.exception))
        s = self.model.session()
        with self.assertRaises(linattn.Error) as e:
            s.feed([300])
        self.assertIn("300", str(e.exception))
        with self.assertRaises(linattn.Error) as e:
            s.load("/nonexistent/state")
        self.assertIn("/nonexistent/state", str(e.exception))
        soft = linattn.Model(SOFTMAX).session()
        soft.feed([65])
        with self.assertRaises(linattn.Error) as e:
            self.model.session().from_bytes(soft.to_bytes())
        self.assertTrue(e.exception.message)
        with self.assertRaises(linattn.Error):
            self.model.sampler(temperature=-1)


if __name__ == "__main__":
    unittest.main(verbosity=2)
