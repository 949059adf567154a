"""linattn from Python: ctypes over liblinattn.so, no compiler needed.

    import linattn
    model = linattn.Model("configs/kjv-linear.ini")
    for piece in model.generate("In the beginning", max_tokens=200, temperature=0.8, seed=1):
        print(piece, end="", flush=True)

Objects follow the C library's rules: a Model may be shared by threads; a
Session, Sampler or Tokenizer use belongs to one thread at a time. Every
failure raises linattn.Error carrying the library's message. numpy is
optional: with it, logits come as float32 arrays (Session.logits is a
zero-copy view of the session's own buffer, valid until its next feed);
without it, as memoryviews of float32.
"""

import codecs
import ctypes
import ctypes.util
import os

try:
    import numpy as _np
except ImportError:  # numpy is optional
    _np = None

__all__ = ["Error", "Model", "Session", "Sampler", "Tokenizer", "sessions_step", "version",
           "library_path"]


class Error(Exception):
    """A linattn call failed: status is the C status code, message the library's text."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status
        self.message = message


def _find_library():
    """LINATTN_LIB, then the library this package was installed with, then the loader's search."""
    env = os.environ.get("LINATTN_LIB")
    if env:
        return env
    try:
        from . import _paths  # written by meson install
        path = os.path.join(_paths.LIBDIR, "liblinattn.so")
        if os.path.exists(path):
            return path
    except ImportError:
        pass
    found = ctypes.util.find_library("linattn")
    if found:
        return found
    return "liblinattn.so"


library_path = _find_library()
try:
    _lib = ctypes.CDLL(library_path)
except OSError as e:
    raise ImportError("linattn: cannot load %s (set LINATTN_LIB to the liblinattn.so to use): %s"
                      % (library_path, e)) from None

_p = ctypes.c_void_p
_i = ctypes.c_int
_f = ctypes.c_float
_sz = ctypes.c_size_t
_u64 = ctypes.c_uint64
_fp = ctypes.POINTER(ctypes.c_float)
_ip = ctypes.POINTER(ctypes.c_int)


def _fn(name, res, *args):
    f = getattr(_lib, name)
    f.restype = res
    f.argtypes = list(args)
    return f


_last_error = _fn("linattn_last_error", ctypes.c_char_p)
_status_str = _fn("linattn_status_str", ctypes.c_char_p, _i)
_version = _fn("linattn_version", ctypes.c_char_p)
_model_load = _fn("linattn_model_load", _i, ctypes.c_char_p, ctypes.POINTER(_p))
_model_free = _fn("linattn_model_free", None, _p)
_model_tokenizer = _fn("linattn_model_tokenizer", _p, _p)
_model_params = _fn("linattn_model_params", _u64, _p)
_model_state_bytes = _fn("linattn_model_state_bytes", _sz, _p, _u64)
_session_new = _fn("linattn_session_new", _i, _p, ctypes.POINTER(_p))
_session_free = _fn("linattn_session_free", None, _p)
_session_reset = _fn("linattn_session_reset", None, _p)
_session_set_threads = _fn("linattn_session_set_threads", None, _p, _i)
_session_feed = _fn("linattn_session_feed", _i, _p, _ip, _i, _fp)
_session_feed_all = _fn("linattn_session_feed_all", _i, _p, _ip, _i, _fp)
_session_tokens = _fn("linattn_session_tokens", _u64, _p)
_session_tokens_left = _fn("linattn_session_tokens_left", _u64, _p)
_session_logits = _fn("linattn_session_logits", _fp, _p)
_session_fork = _fn("linattn_session_fork", _i, _p, ctypes.POINTER(_p))
_session_truncate = _fn("linattn_session_truncate", _i, _p, _u64)
_session_state_bytes = _fn("linattn_session_state_bytes", _sz, _p)
_session_save = _fn("linattn_session_save", _i, _p, ctypes.c_char_p, ctypes.c_char_p, _sz)
_session_load = _fn("linattn_session_load", _i, _p, ctypes.c_char_p, ctypes.c_char_p, _sz,
                    ctypes.POINTER(_sz))
_session_save_size = _fn("linattn_session_save_size", _sz, _p, _sz)
_session_save_mem = _fn("linattn_session_save_mem", _i, _p, ctypes.c_char_p, _sz, ctypes.c_char_p,
                        _sz)
_session_load_mem = _fn("linattn_session_load_mem", _i, _p, ctypes.c_char_p, _sz, ctypes.c_char_p,
                        _sz, ctypes.POINTER(_sz))
_sessions_step = _fn("linattn_sessions_step", _i, ctypes.POINTER(_p), _ip, _i,
                     ctypes.POINTER(_fp))
_tokenizer_load = _fn("linattn_tokenizer_load", _i, ctypes.c_char_p, ctypes.POINTER(_p))
_tokenizer_free = _fn("linattn_tokenizer_free", None, _p)
_tokenizer_name = _fn("linattn_tokenizer_name", ctypes.c_char_p, _p)
_tokenizer_vocab = _fn("linattn_tokenizer_vocab", _i, _p)
_tokenizer_bos = _fn("linattn_tokenizer_bos", _i, _p)
_tokenizer_eos = _fn("linattn_tokenizer_eos", _i, _p)
_tokenizer_adds_bos = _fn("linattn_tokenizer_adds_bos", _i, _p)
_tokenizer_encode = _fn("linattn_tokenizer_encode", _i, _p, ctypes.c_char_p, _sz, _i, _ip, _sz,
                        ctypes.POINTER(_sz))
_tokenizer_decode = _fn("linattn_tokenizer_decode", _i, _p, _i, _i,
                        ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(_sz))
_sampler_new = _fn("linattn_sampler_new", _i, _i, _f, _i, _f, _u64, ctypes.POINTER(_p))
_sampler_free = _fn("linattn_sampler_free", None, _p)
_sample = _fn("linattn_sample", _i, _p, _fp, _ip)
_sampler_accept = _fn("linattn_sampler_accept", _i, _p, _i)
_sampler_reset = _fn("linattn_sampler_reset", None, _p)
_sampler_get_state = _fn("linattn_sampler_get_state", _u64, _p)
_sampler_set_state = _fn("linattn_sampler_set_state", None, _p, _u64)
_sampler_set_min_p = _fn("linattn_sampler_set_min_p", _i, _p, _f)
_sampler_set_rep = _fn("linattn_sampler_set_repetition_penalty", _i, _p, _f, _i)
_sampler_set_bias = _fn("linattn_sampler_set_logit_bias", _i, _p, _i, _f)


def _check(status):
    if status != 0:
        msg = _last_error().decode("utf-8", "replace") or _status_str(status).decode()
        raise Error(status, msg)


def _path(p):
    return os.fsencode(p)


def version():
    """The library's version string."""
    return _version().decode()


def _float_view(ptr, n, copy):
    """n floats at ptr: a numpy array (a view unless copy) or a memoryview of float32."""
    arr = (ctypes.c_float * n).from_address(ctypes.addressof(ptr.contents))
    if _np is not None:
        a = _np.ctypeslib.as_array(arr)
        return a.copy() if copy else a
    mv = memoryview(arr).cast("B").cast("f")
    return memoryview(bytearray(mv)).cast("f") if copy else mv


def _as_floats(logits, vocab):
    """A ctypes float pointer to vocab float32 values given as numpy, memoryview or a sequence."""
    if _np is not None and isinstance(logits, _np.ndarray):
        a = _np.ascontiguousarray(logits, dtype=_np.float32)
        if a.size != vocab:
            raise ValueError("logits: expected %d values, got %d" % (vocab, a.size))
        return a, a.ctypes.data_as(_fp)
    buf = (ctypes.c_float * vocab)()
    vals = list(logits)
    if len(vals) != vocab:
        raise ValueError("logits: expected %d values, got %d" % (vocab, len(vals)))
    for i, v in enumerate(vals):
        buf[i] = v
    return buf, ctypes.cast(buf, _fp)


def _int_array(tokens):
    toks = list(tokens)
    arr = (ctypes.c_int * max(len(toks), 1))(*toks)
    return arr, len(toks)


class Tokenizer:
    """Text <-> token ids. Model.tokenizer is the model's own; Tokenizer(spec) loads one
    ("bytes", "llama2c:PATH", "hf:PATH")."""

    def __init__(self, spec=None, _handle=None, _owner=None):
        if _handle is not None:
            self._h, self._owned, self._owner = _handle, False, _owner
        else:
            h = _p()
            _check(_tokenizer_load(spec.encode() if spec else None, ctypes.byref(h)))
            self._h, self._owned, self._owner = h, True, None

    def __del__(self):
        if getattr(self, "_owned", False) and self._h:
            _tokenizer_free(self._h)
            self._h = None

    @property
    def name(self):
        return _tokenizer_name(self._h).decode()

    @property
    def vocab(self):
        return _tokenizer_vocab(self._h)

    @property
    def bos(self):
        """The begin-of-text id, or None."""
        b = _tokenizer_bos(self._h)
        return None if b < 0 else b

    @property
    def eos(self):
        """The end-of-text id, or None."""
        e = _tokenizer_eos(self._h)
        return None if e < 0 else e

    @property
    def adds_bos(self):
        return bool(_tokenizer_adds_bos(self._h))

    def encode(self, text, add_bos=None):
        """Token ids of text (str or bytes); add_bos None follows the tokenizer's own rule."""
        data = text.encode("utf-8") if isinstance(text, str) else bytes(text)
        bos = self.adds_bos if add_bos is None else bool(add_bos)
        n = _sz()
        _check(_tokenizer_encode(self._h, data, len(data), int(bos), None, 0, ctypes.byref(n)))
        out = (ctypes.c_int * max(n.value, 1))()
        _check(_tokenizer_encode(self._h, data, len(data), int(bos), out, n.value,
                                 ctypes.byref(n)))
        return list(out[:n.value])

    def token_bytes(self, token, prev=-1):
        """The bytes of token when it follows prev (-1: at the start of a text)."""
        ptr, n = ctypes.c_void_p(), _sz()
        _check(_tokenizer_decode(self._h, prev, token, ctypes.byref(ptr), ctypes.byref(n)))
        return ctypes.string_at(ptr, n.value) if n.value else b""

    def decode(self, tokens, errors="replace"):
        """The text of tokens (bytes joined, then UTF-8 decoded)."""
        return self.decode_bytes(tokens).decode("utf-8", errors)

    def decode_bytes(self, tokens):
        out, prev = [], -1
        for t in tokens:
            out.append(self.token_bytes(t, prev))
            prev = t
        return b"".join(out)


class Sampler:
    """Picks tokens from logits with its own seeded generator (temperature 0: greedy)."""

    def __init__(self, vocab, temperature=0.8, top_k=0, top_p=1.0, seed=0, min_p=0.0,
                 repetition_penalty=1.0, repeat_last_n=64, logit_bias=None):
        h = _p()
        _check(_sampler_new(vocab, temperature, top_k, top_p, seed, ctypes.byref(h)))
        self._h, self.vocab = h, vocab
        if min_p:
            _check(_sampler_set_min_p(h, min_p))
        if repetition_penalty != 1.0:
            _check(_sampler_set_rep(h, repetition_penalty, repeat_last_n))
        for tok, bias in (logit_bias or {}).items():
            _check(_sampler_set_bias(h, int(tok), float(bias)))

    def __del__(self):
        if getattr(self, "_h", None):
            _sampler_free(self._h)
            self._h = None

    def sample(self, logits):
        """A token from logits (vocab float32 values); not accepted (see accept)."""
        keep, ptr = _as_floats(logits, self.vocab)
        tok = ctypes.c_int()
        _check(_sample(self._h, ptr, ctypes.byref(tok)))
        del keep
        return tok.value

    def accept(self, token):
        """Counts token for the repetition penalty."""
        _check(_sampler_accept(self._h, token))

    def reset(self):
        _sampler_reset(self._h)

    @property
    def state(self):
        """The generator's state (save it with a stream to resume the same draws)."""
        return _sampler_get_state(self._h)

    @state.setter
    def state(self, value):
        _sampler_set_state(self._h, value)


class Model:
    """A model loaded from a config file (INI). Read-only, shareable by threads."""

    def __init__(self, config):
        h = _p()
        _check(_model_load(_path(config), ctypes.byref(h)))
        self._h = h
        self.tokenizer = Tokenizer(_handle=_model_tokenizer(h), _owner=self)
        self.vocab = self.tokenizer.vocab

    def __del__(self):
        if getattr(self, "_h", None):
            _model_free(self._h)
            self._h = None

    @property
    def params(self):
        return _model_params(self._h)

    def state_bytes(self, tokens=1):
        """Decode state bytes of one stream at a length (constant for linear attention)."""
        return _model_state_bytes(self._h, tokens)

    def session(self, threads=0):
        """A new empty stream (threads 0: the config's, then the free cores)."""
        return Session(self, threads)

    def sampler(self, **kw):
        """A Sampler for this model's vocabulary (keywords as Sampler's)."""
        return Sampler(self.vocab, **kw)

    def generate(self, prompt, max_tokens=100, temperature=0.8, seed=0, stop_at_eos=True,
                 session=None, **sampler_kw):
        """Yields the text of each generated token as it comes (str pieces; a UTF-8 character
        split across tokens comes out whole). Feeds prompt into session (a new one if None)."""
        s = session or self.session()
        sampler = Sampler(self.vocab, temperature=temperature, seed=seed, **sampler_kw)
        toks = self.tokenizer.encode(prompt)
        for t in toks:
            sampler.accept(t)
        logits = s.feed(toks) if toks else s.logits
        if logits is None:
            raise Error(1, "generate: an empty prompt on an empty stream has no logits")
        dec = codecs.getincrementaldecoder("utf-8")("replace")
        prev, eos = (toks[-1] if toks else -1), self.tokenizer.eos
        for _ in range(max_tokens):
            tok = sampler.sample(logits)
            if stop_at_eos and eos is not None and tok == eos:
                break
            sampler.accept(tok)
            piece = dec.decode(self.tokenizer.token_bytes(tok, prev))
            if piece:
                yield piece
            prev = tok
            logits = s.feed([tok])
        tail = dec.decode(b"", final=True)
        if tail:
            yield tail


class Session:
    """One stream's decode state: feed tokens, read logits, save, load, fork."""

    def __init__(self, model, threads=0, _handle=None):
        self.model = model  # keeps the model alive while the session lives
        if _handle is None:
            h = _p()
            _check(_session_new(model._h, ctypes.byref(h)))
            _handle = h
        self._h = _handle
        if threads:
            _session_set_threads(self._h, threads)

    def __del__(self):
        if getattr(self, "_h", None):
            _session_free(self._h)
            self._h = None

    def reset(self):
        _session_reset(self._h)

    def set_threads(self, threads):
        _session_set_threads(self._h, threads)

    def feed(self, tokens):
        """Feeds tokens (a prefill when more than one); returns a copy of the logits after
        the last one."""
        arr, n = _int_array(tokens)
        _check(_session_feed(self._h, arr, n, None))
        return self.logits_copy()

    def feed_all(self, tokens):
        """Feeds tokens and returns the logits after every one: [n][vocab] (a numpy array with
        numpy, else a list of memoryviews)."""
        arr, n = _int_array(tokens)
        V = self.model.vocab
        out = (ctypes.c_float * (n * V))()
        _check(_session_feed_all(self._h, arr, n, ctypes.cast(out, _fp)))
        if _np is not None:
            return _np.ctypeslib.as_array(out).reshape(n, V).copy()
        mv = memoryview(out).cast("B").cast("f")
        return [mv[i * V:(i + 1) * V] for i in range(n)]

    @property
    def logits(self):
        """The logits after the last token fed, as a view of the session's own buffer (valid
        until the next feed, reset or load); None before any token."""
        ptr = _session_logits(self._h)
        return _float_view(ptr, self.model.vocab, copy=False) if ptr else None

    def logits_copy(self):
        ptr = _session_logits(self._h)
        return _float_view(ptr, self.model.vocab, copy=True) if ptr else None

    @property
    def tokens(self):
        """Tokens fed since new, reset or load."""
        return _session_tokens(self._h)

    @property
    def tokens_left(self):
        """Tokens it can still take (2**64 - 1: unbounded)."""
        return _session_tokens_left(self._h)

    @property
    def state_bytes(self):
        return _session_state_bytes(self._h)

    def fork(self):
        """A new session continuing from where this one stands."""
        h = _p()
        _check(_session_fork(self._h, ctypes.byref(h)))
        return Session(self.model, _handle=h)

    def truncate(self, n_tokens):
        """Cuts a plain softmax stream back to its first n_tokens tokens (its logits
        read zeros until the next feed); linear, hybrid and windowed streams raise."""
        _check(_session_truncate(self._h, n_tokens))

    def save(self, path, extra=b""):
        """Saves the stream to path (temp file, fsync, rename); extra bytes are kept with it."""
        _check(_session_save(self._h, _path(path), bytes(extra), len(extra)))

    def load(self, path, extra_cap=65536):
        """Loads a stream saved by a model of the same shape; returns its extra bytes."""
        buf = ctypes.create_string_buffer(max(extra_cap, 1))
        n = _sz()
        _check(_session_load(self._h, _path(path), buf, extra_cap, ctypes.byref(n)))
        return buf.raw[:min(n.value, extra_cap)]

    def to_bytes(self, extra=b""):
        """The state file's bytes, in memory."""
        size = _session_save_size(self._h, len(extra))
        buf = ctypes.create_string_buffer(size)
        _check(_session_save_mem(self._h, bytes(extra), len(extra), buf, size))
        return buf.raw

    def from_bytes(self, data, extra_cap=65536):
        """Loads state bytes (from to_bytes or a state file); returns their extra bytes."""
        buf = ctypes.create_string_buffer(max(extra_cap, 1))
        n = _sz()
        _check(_session_load_mem(self._h, bytes(data), len(data), buf, extra_cap,
                                 ctypes.byref(n)))
        return buf.raw[:min(n.value, extra_cap)]


def sessions_step(sessions, tokens):
    """One token into each session in one batched step (the weights read once for all);
    returns each one's new logits (copies)."""
    if len(sessions) != len(tokens):
        raise ValueError("sessions_step: %d sessions but %d tokens" % (len(sessions), len(tokens)))
    n = len(sessions)
    if n == 0:
        return []
    hs = (_p * n)(*[s._h for s in sessions])
    toks = (ctypes.c_int * n)(*tokens)
    _check(_sessions_step(hs, toks, n, None))
    return [s.logits_copy() for s in sessions]
