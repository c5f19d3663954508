"""One JSON POST over HTTP(S) for the OpenAI-compatible backend, with the guarantees a long unattended run needs.

A deadline over the whole exchange (a watchdog shuts the socket, so a server that drips bytes cannot outlast it); a
size cap on the body; no redirect to another origin (the key is an unredirected header; a same-origin 307/308 is
followed, 301/302/303 refused); failures classified (:class:`Failure`) with messages that never contain the key
(:func:`redact`). Standard library only.
"""
from __future__ import annotations

import email.utils
import functools
import http.client
import re
import socket
import ssl
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Optional

#: bytes read per call
CHUNK = 1 << 16
#: bytes of an error answer read for its message
ERROR_BODY_BYTES = 1 << 16
#: statuses worth another attempt: request timeout, conflict, rate limit, server errors
RETRY_STATUS = frozenset((408, 409, 429, *range(500, 600)))
#: statuses no request to this server and model can get past: bad key, no access, no such endpoint or model
REFUSED_STATUS = frozenset((401, 403, 404))
#: how much of a server's message an error quotes
DETAIL_CHARS = 500

_BEARER = re.compile(r"(?i)(bearer\s+)[^\s\"',;]+")


class Failure(Exception):
    """A failed exchange. ``kind``: ``'retry'`` (HTTP 408/409/429/5xx, a connection reset, a truncated body: another
    attempt may succeed), ``'connect'`` (nothing answers at the address: refused, unknown host, no route),
    ``'fatal'`` (no request can succeed: a redirect to another origin, HTTP 401/403/404, TLS failure, a bad URL) or
    ``'final'`` (this request failed: another status, the deadline, an oversized or malformed answer)."""

    def __init__(self, kind: str, message: str, status: Optional[int] = None, retry_after: Optional[float] = None):
        super().__init__(message)
        self.kind, self.message, self.status, self.retry_after = kind, message, status, retry_after

    def __str__(self) -> str:
        return self.message


@functools.lru_cache(maxsize=8)
def _secret_pattern(secret: str) -> "re.Pattern":
    """``secret`` also when a server wraps or escapes it: whitespace or a JSON escape (``\\n``) between any two of its
    characters."""
    return re.compile(r"(?:\s|\\[nrt])*".join(re.escape(c) for c in secret))


def redact(text: str, secret: Optional[str], bearer: bool = True) -> str:
    """``text`` without ``secret`` (also split across lines) and, with ``bearer``, without any ``Bearer <token>``."""
    if secret:
        text = _secret_pattern(secret).sub("***", text.replace(secret, "***"))
    return _BEARER.sub(r"\1***", text) if bearer else text


def origin(url: str) -> str:
    """``scheme://host:port`` of ``url`` (the default port written out), lower-cased."""
    parts = urllib.parse.urlsplit(url)
    scheme = parts.scheme.lower()
    port = parts.port or {"http": 80, "https": 443}.get(scheme)
    return f"{scheme}://{(parts.hostname or '').lower()}:{port}"


def retry_after(value: Optional[str], now: Optional[float] = None) -> Optional[float]:
    """Seconds from a ``Retry-After`` header (a number of seconds or an HTTP date); None when absent or unreadable."""
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


class _Watchdog:
    """Shuts down the registered socket when ``seconds`` have passed (``expired`` tells the reader why it stopped)."""

    def __init__(self, seconds: float):
        self.expired, self._sock, self._lock = False, None, threading.Lock()
        self._timer = threading.Timer(seconds, self._fire)
        self._timer.daemon = True
        self._timer.start()

    def attach(self, sock):
        with self._lock:
            self._sock = sock
            if self.expired:
                _shutdown(sock)
        return sock

    def _fire(self) -> None:
        with self._lock:
            self.expired = True
            if self._sock is not None:
                _shutdown(self._sock)

    def cancel(self) -> None:
        with self._lock:
            self._timer.cancel()
            self._sock = None


def _shutdown(sock) -> None:
    """Ends the connection under ``sock`` (a blocked read returns at once) through a duplicate of its descriptor, which
    works for plain and TLS sockets alike without touching the reading thread's objects."""
    try:
        dup = socket.fromfd(sock.fileno(), getattr(sock, "family", socket.AF_INET), socket.SOCK_STREAM)
    except (OSError, ValueError):
        return
    with dup:
        try:
            dup.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


class _Watched:
    """A connection whose sockets (the TCP one, then the TLS one) are registered with a watchdog."""

    def _watch(self, watchdog: _Watchdog) -> None:
        self._watchdog, create = watchdog, self._create_connection
        self._create_connection = lambda *args, **kwargs: watchdog.attach(create(*args, **kwargs))

    def connect(self):
        super().connect()
        self._watchdog.attach(self.sock)


class _HTTPConnection(_Watched, http.client.HTTPConnection):
    def __init__(self, *args, watchdog: _Watchdog, **kwargs):
        super().__init__(*args, **kwargs)
        self._watch(watchdog)


class _HTTPSConnection(_Watched, http.client.HTTPSConnection):
    def __init__(self, *args, watchdog: _Watchdog, **kwargs):
        super().__init__(*args, **kwargs)
        self._watch(watchdog)


class _HTTPHandler(urllib.request.HTTPHandler):
    def __init__(self, watchdog: _Watchdog):
        super().__init__()
        self.watchdog = watchdog

    def http_open(self, req):
        return self.do_open(lambda *a, **k: _HTTPConnection(*a, watchdog=self.watchdog, **k), req)


@functools.lru_cache(maxsize=1)
def _tls_context() -> ssl.SSLContext:
    """One default TLS context for every request (building one loads the system's CA certificates)."""
    return ssl.create_default_context()


class _HTTPSHandler(urllib.request.HTTPSHandler):
    def __init__(self, watchdog: _Watchdog):
        super().__init__(context=_tls_context())
        self.watchdog = watchdog

    def https_open(self, req):
        return self.do_open(lambda *a, **k: _HTTPSConnection(*a, watchdog=self.watchdog, **k), req,
                            context=self._context)


class _SameOriginRedirects(urllib.request.HTTPRedirectHandler):
    """Follows a 307/308 within the origin (the POST, its body and headers, the key included); refuses the rest."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        fp.close()
        here, there = origin(req.full_url), origin(newurl)
        if there != here:
            raise Failure("fatal", f"{req.full_url} redirects (HTTP {code}) to another origin, {there}; not followed, "
                                   "so the API key is not sent there: set base_url to the server's own address")
        if code not in (307, 308):
            raise Failure("fatal", f"{req.full_url} redirects (HTTP {code}) to {urllib.parse.urlsplit(newurl).path}, "
                                   "which would turn the POST into a GET: set base_url to the address redirected to")
        return urllib.request.Request(newurl, data=req.data, headers=dict(req.header_items()), method=req.get_method())


def _read(response, limit: int, url: str) -> bytes:
    """The whole body, at most ``limit`` bytes (else a 'final' Failure); a body shorter than its Content-Length is a
    'retry' Failure."""
    length = response.headers.get("Content-Length")
    expected = int(length) if length and length.strip().isdigit() else None
    if expected is not None and expected > limit:
        raise Failure("final", f"{url} answered with {expected} bytes, more than max_response_bytes={limit}; not read")
    chunks, total = [], 0
    while True:
        chunk = response.read(CHUNK)
        if not chunk:
            break
        total += len(chunk)
        if total > limit:
            raise Failure("final", f"{url} answered with more than max_response_bytes={limit} bytes; stopped reading")
        chunks.append(chunk)
    if expected is not None and total < expected:
        raise Failure("retry", f"{url} closed the connection after {total} of {expected} bytes (a truncated answer)")
    return b"".join(chunks)


def _error_body(err: urllib.error.HTTPError) -> str:
    try:
        return err.read(ERROR_BODY_BYTES).decode("utf-8", "replace")
    except Exception:  # noqa: BLE001 - the status is the error; its body is only quoted
        return ""


def _classify(err: BaseException, url: str) -> Failure:
    """The Failure of an exception raised while connecting, sending or reading."""
    reason = err.reason if isinstance(err, urllib.error.URLError) and isinstance(err.reason, BaseException) else err
    if isinstance(reason, ssl.SSLError):
        return Failure("fatal", f"TLS with {origin(url)} failed: {reason}")
    if isinstance(reason, (ConnectionRefusedError, socket.gaierror)):
        return Failure("connect", f"{type(reason).__name__}: {reason}")
    if isinstance(reason, (ConnectionResetError, ConnectionAbortedError, BrokenPipeError, http.client.IncompleteRead)):
        return Failure("retry", f"{url}: the connection broke ({type(reason).__name__}: {reason})")
    if isinstance(reason, OSError):  # no route to host, network unreachable
        return Failure("connect", f"{type(reason).__name__}: {reason}")
    if isinstance(reason, http.client.HTTPException):
        return Failure("final", f"{url} did not answer in HTTP ({type(reason).__name__}: {reason})")
    if isinstance(err, urllib.error.URLError):
        return Failure("fatal", f"{url}: {err.reason}")
    return Failure("final", f"{url}: {type(err).__name__}: {err}")


def post_json(url: str, data: bytes, key: Optional[str], *, timeout: float, max_bytes: int) -> bytes:
    """POSTs ``data`` (JSON) to ``url`` with ``Authorization: Bearer key`` when ``key``; the body of a 2xx answer, or a
    :class:`Failure` (messages redacted of ``key``). ``timeout`` bounds the whole exchange; ``max_bytes`` the body."""
    watchdog = _Watchdog(timeout)
    opener = urllib.request.build_opener(_HTTPHandler(watchdog), _HTTPSHandler(watchdog), _SameOriginRedirects())
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"}, method="POST")
    if key:
        request.add_unredirected_header("Authorization", f"Bearer {key}")
    late = Failure("final", f"{url} did not finish answering within timeout={timeout:g} s")
    try:
        with opener.open(request, timeout=timeout) as response:
            body = _read(response, max_bytes, url)
        if watchdog.expired:  # the socket was shut mid-exchange (e.g. in the headers): what was read is not the answer
            raise late
        return body
    except urllib.error.HTTPError as err:
        detail = redact(_error_body(err), key)[:DETAIL_CHARS]
        if watchdog.expired:
            raise late from None
        kind = "retry" if err.code in RETRY_STATUS else "fatal" if err.code in REFUSED_STATUS else "final"
        raise Failure(kind, f"{url} answered HTTP {err.code}: {detail}", err.code,
                      retry_after(err.headers.get("Retry-After"))) from None
    except Failure as failure:
        if watchdog.expired:
            raise late from None
        failure.message = redact(failure.message, key)
        raise
    except Exception as err:  # noqa: BLE001 - every transport error is classified
        if watchdog.expired or isinstance(getattr(err, "reason", err), TimeoutError):  # a read waited timeout s: late
            raise late from None
        failure = _classify(err, url)
        failure.message = redact(failure.message, key)
        raise failure from None
    finally:
        watchdog.cancel()
