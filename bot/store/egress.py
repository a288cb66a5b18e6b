"""Where a fetch may connect: a CONNECT proxy on loopback that checks every tunnel it opens.

A source typed in Slack is checked once, as text (bot.store.sources). libgit2 then makes its own
connections: it follows redirects to other hosts and resolves names itself, so a server that
answers `302 Location: https://127.0.0.1/...`, or a name whose DNS answer changes after the
check (rebinding), would lead it inside the operator's network. libgit2 cannot be told which
address to use, but it can be told to use a proxy for every HTTPS connection.

`GuardProxy` is that proxy, started for one fetch (in the fetch child process, so it dies with
it). For each `CONNECT host:port` it asks a `check` function (bot.store.sources.check_connect: the
same policy as the typed URL, one lookup) for the addresses it may use and connects to exactly
one of those, so what was checked is what is connected to, redirect hops included. A refusal is
a `403` to libgit2 and a sentence kept in `refusals` for the user. Anything but CONNECT (plain
http://, which a redirect might try) is refused too.

The proxy listens on loopback, where any local process could reach it while a fetch runs and
have a tunnel opened with the fetch's policy; so it wants a secret made for this one fetch, which
only the fetch knows: libgit2 takes it from the user and password in `url` (sent as
`Proxy-Authorization: Basic` after the proxy's `407`), an http.client tunnel from `authorization`.

Hand-written rather than a proxy library: the one thing needed is a hook between resolving a
name and connecting to it, which general proxies do not expose; the rest is ~100 lines of
socket splicing over loopback.
"""

from __future__ import annotations

import base64
import hmac
import secrets
import select
import socket
import threading
import time
from collections.abc import Callable

__all__ = ["GuardProxy", "ConnectRefused"]

PROXY_USER = "gad-bot"
MAX_HEAD = 8192  # a CONNECT request is one line and a few headers
REUSE_GRACE = 2.0  # seconds a client may take to reuse a connection whose server has closed


class ConnectRefused(Exception):
    """A `check` refused a connection; str() is a sentence to show the user."""


Check = Callable[[str, int], list[str]]  # (host, port) -> addresses to use, or raises ConnectRefused


class GuardProxy:
    """A loopback CONNECT proxy for one fetch; `url` is what libgit2's proxy option takes."""

    def __init__(self, check: Check, *, connect_timeout: float = 60.0, head_timeout: float = 30.0):
        self._check = check
        self._connect_timeout, self._head_timeout = connect_timeout, head_timeout
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._secret = secrets.token_urlsafe(24)
        self.refusals: list[str] = []  # sentences, in order
        self.tunnels: list[tuple[str, int, str]] = []  # (host, port, address connected to)
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._accept, name="guard-proxy", daemon=True)

    @property
    def url(self) -> str:
        """The proxy with its secret, for libgit2 (never logged: it names a loopback port for one fetch)."""
        return f"http://{PROXY_USER}:{self._secret}@127.0.0.1:{self.port}"

    @property
    def authorization(self) -> str:
        """The `Proxy-Authorization` header value a CONNECT must carry."""
        return "Basic " + base64.b64encode(f"{PROXY_USER}:{self._secret}".encode()).decode()

    def _authorized(self, head: bytes) -> bool:
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"proxy-authorization":
                return hmac.compare_digest(value.strip(), self.authorization.encode())
        return False

    def __enter__(self) -> "GuardProxy":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._closed.set()
        try:
            self._listener.close()
        except OSError:
            pass

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), name="guard-tunnel", daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        pending, trusted = b"", [False]
        try:
            while pending is not None:
                pending = self._one_request(client, pending, trusted)
        finally:
            client.close()

    def _one_request(self, client: socket.socket, pending: bytes, trusted: list[bool]) -> bytes | None:
        """Answer one proxy request on `client`; the bytes of a next request, or None when done.

        `trusted[0]`: an earlier request on this connection carried the secret (libgit2 writes a
        redirect's next CONNECT on the same socket, and may not repeat the header there)."""
        client.settimeout(self._head_timeout)
        head = pending
        try:
            while b"\r\n\r\n" not in head:
                chunk = client.recv(4096)
                if not chunk or len(head) + len(chunk) > MAX_HEAD:
                    return None
                head += chunk
        except OSError:
            return None
        head, _, early = head.partition(b"\r\n\r\n")
        if not trusted[0] and not self._authorized(head):
            # not the fetch this proxy is for (or libgit2 before it has seen the challenge): no
            # check, no connection, nothing kept; libgit2 retries with the secret on a new connection
            try:
                client.sendall(b"HTTP/1.1 407 Proxy Authentication Required\r\n"
                               b"Proxy-Authenticate: Basic realm=\"gad-bot\"\r\nContent-Length: 0\r\n"
                               b"Connection: close\r\n\r\n")
            except OSError:
                pass
            return None
        trusted[0] = True
        request = head.split(b"\r\n", 1)[0].decode("latin-1")
        method, _, rest = request.partition(" ")
        target = rest.partition(" ")[0]
        if method != "CONNECT":
            # libgit2 sends plain http:// requests to a proxy as `GET http://...`: a redirect to http
            self._refuse(client, "403 Forbidden", "gad-bot fetches sources typed in Slack over https:// only, "
                                                  "and the server sent the fetch to a plain http:// address.")
            return None
        host, _, port_text = target.rpartition(":")
        host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
        try:
            port = int(port_text)
            addresses = self._check(host, port)
        except ValueError:
            self._refuse(client, "400 Bad Request", "The fetch asked for a connection without a valid host and port.")
            return None
        except ConnectRefused as refused:
            self._refuse(client, "403 Forbidden", str(refused))
            return None
        upstream = None
        for address in addresses:
            try:
                upstream = socket.create_connection((address, port), timeout=self._connect_timeout)
                break
            except OSError:
                continue
        if upstream is None:
            self._refuse(client, "502 Bad Gateway", f"Could not connect to {host} port {port}.")
            return None
        self.tunnels.append((host, port, address))
        try:
            client.settimeout(None)
            upstream.settimeout(None)
            client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            return _tunnel(client, upstream, early)
        except OSError:
            return None
        finally:
            upstream.close()

    def _refuse(self, client: socket.socket, status: str, sentence: str) -> None:
        self.refusals.append(sentence)
        try:
            client.sendall(f"HTTP/1.1 {status}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".encode())
        except OSError:
            pass


_TLS_RECORD_TYPES = frozenset(range(20, 25))  # change_cipher_spec, alert, handshake, application_data, heartbeat


class _TlsFramer:
    """Follows TLS record boundaries in what the client sends through a tunnel.

    libgit2 1.9 keeps using a proxy connection after the tunnel on it is done: on a redirect to
    another host it closes its TLS session and writes the next `CONNECT` on the same socket
    (libgit2/libgit2#7081). Plain text where a TLS record must start can only be that request.
    """

    def __init__(self) -> None:
        self._header = b""
        self._remaining = 0

    def plain_text_at(self, data: bytes) -> int | None:
        """Where in `data` a non-TLS request starts, or None when it is all TLS records."""
        i = 0
        while i < len(data):
            if self._remaining:
                step = min(self._remaining, len(data) - i)
                self._remaining -= step
                i += step
                continue
            if not self._header and data[i] not in _TLS_RECORD_TYPES:
                return i
            take = data[i:i + 5 - len(self._header)]
            self._header += take
            i += len(take)
            if len(self._header) == 5:
                self._remaining = int.from_bytes(self._header[3:5], "big")
                self._header = b""
        return None


def _tunnel(client: socket.socket, upstream: socket.socket, early: bytes) -> bytes | None:
    """Splice bytes both ways until either side ends (None), or the client starts a new proxy
    request inside the tunnel (its first bytes are returned; the upstream is dropped).

    When the upstream ends first, the client is given REUSE_GRACE seconds to start that new
    request before it is told (by closing): a server closes right after libgit2's TLS close, a
    moment before libgit2 writes its next CONNECT.
    """
    reused, ended = threading.Event(), threading.Event()
    back = threading.Thread(target=_pipe, args=(upstream, client, reused, ended), name="guard-tunnel-back",
                            daemon=True)
    back.start()
    framer = _TlsFramer()
    data = early
    try:
        while True:
            if not data:
                ready, _, _ = select.select([client], [], [], 0.1)
                if not ready:
                    if ended.is_set() and time.monotonic() - ended.at > REUSE_GRACE:  # type: ignore[attr-defined]
                        return None
                    continue
                data = client.recv(65536)
                if not data:
                    _shutdown(upstream, socket.SHUT_WR)
                    back.join()
                    return None
            start = framer.plain_text_at(data)
            if start is None:
                if ended.is_set():
                    return None  # more TLS for a server that has gone: nothing to carry it
                upstream.sendall(data)
                data = b""
                continue
            # What precedes the new request closes the finished TLS session: not worth forwarding,
            # and the server's answer to it must not reach the client as the proxy's reply.
            reused.set()
            _shutdown(upstream, socket.SHUT_RDWR)
            back.join()
            return data[start:]
    except OSError:
        return None
    finally:
        reused.set()
        _shutdown(upstream, socket.SHUT_RDWR)
        back.join()


def _shutdown(sock: socket.socket, how: int) -> None:
    try:
        sock.shutdown(how)
    except OSError:
        pass


def _pipe(source: socket.socket, sink: socket.socket, reused: threading.Event, ended: threading.Event) -> None:
    """Copy the server's bytes to the client until the server ends or the tunnel is given up."""
    try:
        while True:
            data = source.recv(65536)
            if not data or reused.is_set():
                break
            sink.sendall(data)
    except OSError:
        pass
    ended.at = time.monotonic()  # type: ignore[attr-defined]
    ended.set()
