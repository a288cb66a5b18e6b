"""Issue 11, part 1: a source typed in Slack never leads a fetch to an address the policy refuses.

The attacks run for real inside a private network namespace (tests/faults/netns.py): an
allow-listed public host `git.forge-attack.net` (1.2.3.4 on the namespace's loopback) serves
HTTPS and answers `302 Location: https://127.0.0.1:PORT/small.git/...`, where a real
`git http-backend` serves an "internal" repository; and a name server answers
`rebind.forge-attack.net` with a public address once and with 127.0.0.1 afterwards. A real
`gad-bot serve` takes signed `/gad track` commands from the Slack stand-in; syncs and reclones run
as real CLI processes. The one test that runs outside (`test_egress_attacks_in_a_network_namespace`)
starts pytest inside the namespace on this file and fails with its output if anything inside fails.
"""

from __future__ import annotations

import json
import os
import ssl
import time
from pathlib import Path

import pytest

from tests.faults import GitHttpServer, Serve, figures, index_problems, repos_json, run_cli
from tests.faults.netns import ADDRESSES, FORGE, OTHER, REBIND, RebindingDns, inside, run_pytest_inside, unavailable
from tests.gitbuild import RepoBuilder
from tests.slackstub import SlackStub

needs_namespace = pytest.mark.skipif(not inside(), reason="runs inside test_egress_attacks_in_a_network_namespace")


def test_egress_attacks_in_a_network_namespace(tmp_path):
    if inside():
        pytest.skip("already inside the namespace")
    why = unavailable()
    if why:
        pytest.skip(why)
    result = run_pytest_inside([__file__, "-q", "-rs", "-s", "-k", "not in_a_network_namespace"], tmp_path)
    print(result.stdout[-3000:])
    assert result.returncode == 0, result.stdout[-8000:] + result.stderr[-3000:]
    assert " passed" in result.stdout and "skipped" not in result.stdout.splitlines()[-1], result.stdout[-2000:]


# ----------------------------------------------------------------------------- inside the namespace

@pytest.fixture(scope="module")
def ca():
    import trustme

    return trustme.CA()


def _tls(ca, *names: str) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert(*names).configure_cert(context)
    return context


@pytest.fixture
def ca_file(ca, tmp_path) -> Path:
    path = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(path))
    return path


def _repo(path: Path, people: int, days: int) -> RepoBuilder:
    repo = RepoBuilder(path, bare=True)
    for i in range(days):
        repo.commit(name=f"P{i % people}", email=f"p{i % people}@{path.stem}.example", date=f"2024-03-{i + 1:02d}")
    return repo


@pytest.fixture
def internal(tmp_path, ca):
    """The repository an attacker wants: HTTPS on 127.0.0.1, its certificate valid for every name used here."""
    _repo(tmp_path / "internal" / "small.git", people=5, days=9)
    server = GitHttpServer(tmp_path / "internal", tls=_tls(ca, "127.0.0.1", REBIND, FORGE), hostname="127.0.0.1")
    with server:
        yield server


@pytest.fixture
def stub():
    with SlackStub() as running:
        yield running


def _serve(tmp_path: Path, stub, ca_file: Path, **env: str) -> Serve:
    env = {"GAD_ADMINS": "U123", "GAD_ALLOWED_HOSTS": "forge-attack.net", "GAD_FETCH_TIMEOUT_SECONDS": "30",
           "SSL_CERT_FILE": str(ca_file), **env}
    return Serve(tmp_path / "data", stub, logs=tmp_path / "logs", **env)


def _track(serve: Serve, stub, url: str, name: str) -> str:
    status, _, took = serve.post(stub.slash_fields(f"track {url} as:{name}", response_name=name))
    assert status == 200 and took < 3
    stub.wait_for_response(name, timeout=40)
    deadline = time.monotonic() + 40
    done = ("fully indexed", "rror", "may not", "stopped", "failed")  # the last message of a track, either way
    while not any(word in json.dumps(stub.responses(name)) for word in done) and time.monotonic() < deadline:
        time.sleep(0.1)
    return json.dumps(stub.responses(name))  # every message the admin saw, in order


def _no_mirror(data: Path) -> None:
    mirrors = data / "mirrors"
    assert not mirrors.exists() or list(mirrors.iterdir()) == [], list(mirrors.iterdir())
    assert repos_json(data) == []


@needs_namespace
def test_track_redirected_to_loopback_is_refused(tmp_path, ca, ca_file, internal, stub):
    forge = GitHttpServer(tmp_path / "empty", mode="redirect", host=ADDRESSES[FORGE], port=443, tls=_tls(ca, FORGE),
                          hostname=FORGE, redirect_to=internal.url("small.git"))
    with forge, _serve(tmp_path, stub, ca_file) as serve:
        answer = _track(serve, stub, f"https://{FORGE}/org/repo.git", "repo")
        assert serve.stop() == 0
    print("redirect answer:", answer)
    assert "Tracked" not in answer
    assert "127.0.0.1" in answer and "not a public host" in answer
    assert forge.requests, "the first hop was never asked: the test did not exercise the redirect"
    assert internal.requests == []  # not one request reached the internal server
    _no_mirror(tmp_path / "data")
    assert "Traceback" not in serve.stderr


@needs_namespace
def test_dns_rebinding_to_loopback_is_refused(tmp_path, ca_file, internal, stub):
    url = f"https://{REBIND}:{internal.port}/small.git"
    with RebindingDns({REBIND: [ADDRESSES[FORGE], "127.0.0.1"]}) as dns, _serve(tmp_path, stub, ca_file) as serve:
        answer = _track(serve, stub, url, "rebound")
        assert serve.stop() == 0
    print("rebinding answer:", answer, "A lookups:", dns.queries)
    assert "Tracked" not in answer
    assert "127.0.0.1" in answer
    assert dns.queries.get(REBIND, 0) >= 2  # checked once as public, asked again at connect time
    assert internal.requests == []
    _no_mirror(tmp_path / "data")


@needs_namespace
def test_sync_and_reclone_redirected_to_loopback_are_refused(tmp_path, ca, ca_file, internal, stub):
    """Tracked while honest, the forge later redirects: the CLI's sync and reclone (and so serve's hourly
    sync, the same Engine.sync) must not follow it."""
    _repo(tmp_path / "public" / "org" / "repo.git", people=2, days=3)
    forge = GitHttpServer(tmp_path / "public", host=ADDRESSES[FORGE], port=443, tls=_tls(ca, FORGE), hostname=FORGE,
                          redirect_to=internal.url("small.git"))
    data = tmp_path / "data"
    env = {"SSL_CERT_FILE": str(ca_file), "GAD_ALLOWED_HOSTS": "forge-attack.net"}
    with forge:
        with _serve(tmp_path, stub, ca_file) as serve:
            answer = _track(serve, stub, f"https://{FORGE}/org/repo.git", "repo")
            assert serve.stop() == 0
        assert "Tracked" in answer, answer
        assert repos_json(data, **env)[0]["guarded"] is True
        before = figures(data, "repo")
        forge.mode = "redirect"
        forge.requests.clear()
        synced = run_cli("sync", "repo", data=data, process=True, **env)
        recloned = run_cli("sync", "--reclone", "repo", data=data, process=True, **env)
    print("sync:", synced.stdout, synced.stderr, "reclone:", recloned.stdout, recloned.stderr)
    assert synced.returncode == 1 and "127.0.0.1" in synced.stdout and "not a public host" in synced.stdout
    assert recloned.returncode != 0 and "127.0.0.1" in recloned.stdout + recloned.stderr
    assert "Traceback" not in synced.stderr + recloned.stderr
    assert len(forge.requests) >= 2 and internal.requests == []
    assert figures(data, "repo") == before  # the internal repository's 5 authors never showed up
    assert index_problems(data) == []


@needs_namespace
@pytest.mark.parametrize("allowed", ["forge-attack.net,other-attack.net", "forge-attack.net"])
def test_redirect_to_another_public_host_follows_the_allow_list(tmp_path, ca, ca_file, stub, allowed):
    _repo(tmp_path / "other" / "small.git", people=3, days=4)
    other = GitHttpServer(tmp_path / "other", host=ADDRESSES[OTHER], port=443, tls=_tls(ca, OTHER), hostname=OTHER)
    forge = GitHttpServer(tmp_path / "empty", mode="redirect", host=ADDRESSES[FORGE], port=443, tls=_tls(ca, FORGE),
                          hostname=FORGE, redirect_to=f"https://{OTHER}/small.git")
    with other, forge, _serve(tmp_path, stub, ca_file, GAD_ALLOWED_HOSTS=allowed) as serve:
        answer = _track(serve, stub, f"https://{FORGE}/org/repo.git", "moved")
        assert serve.stop() == 0
    print(allowed, "->", answer)
    if "other-attack.net" in allowed:
        assert "Tracked" in answer and "4 commits" in answer
    else:
        assert "Tracked" not in answer and OTHER in answer and "GAD_ALLOWED_HOSTS" in answer
        assert other.requests == []
        _no_mirror(tmp_path / "data")


def _track_answer(serve: Serve, stub, url: str, name: str) -> str:
    """Everything the admin saw for a track: the ack, then the messages at the response_url, if any."""
    status, ack, took = serve.post(stub.slash_fields(f"track {url} as:{name}", response_name=name))
    assert status == 200 and took < 3
    if b"Tracking" not in ack and "Tracking" not in json.dumps(stub.responses(name)):
        time.sleep(1)  # refused in the ack; nothing more comes
    deadline = time.monotonic() + 40
    done = ("fully indexed", "rror", "may not", "stopped", "failed", "GAD_ALLOWED_HOSTS")
    while not any(w in ack.decode() + json.dumps(stub.responses(name)) for w in done) and time.monotonic() < deadline:
        time.sleep(0.1)
    return ack.decode() + json.dumps(stub.responses(name))


@needs_namespace
def test_ssh_from_slack_cannot_rebind_nor_tell_an_open_port_from_a_closed_one(tmp_path, ca_file, stub):
    """Issue 22: libssh2 resolves an ssh:// host itself (no proxy), so a name that rebinds to
    127.0.0.1 after the check reached loopback, and its errors told an open port from a closed
    one. Now ssh:// goes only to hosts named exactly in GAD_ALLOWED_HOSTS (`rebind.` is only a
    subdomain of the listed `forge-attack.net`), and every ssh failure is one sentence."""
    import socket
    import subprocess

    key = tmp_path / "id_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    internal, open_port = _Listener(echo=False), _Listener(ADDRESSES[FORGE], echo=False)
    with socket.create_server((ADDRESSES[FORGE], 0)) as probe:
        closed = probe.getsockname()[1]  # nothing listens there once closed
    env = {"GAD_SSH_KEY": str(key), "GAD_ALLOWED_HOSTS": f"forge-attack.net,{FORGE}"}
    with RebindingDns({REBIND: [ADDRESSES[FORGE], "127.0.0.1"]}), _serve(tmp_path, stub, ca_file, **env) as serve:
        rebound = _track_answer(serve, stub, f"ssh://git@{REBIND}:{internal.port}/x.git", "rebound")
        opened = _track_answer(serve, stub, f"ssh://git@{FORGE}:{open_port.port}/x.git", "opened")
        shut = _track_answer(serve, stub, f"ssh://git@{FORGE}:{closed}/x.git", "shut")
        assert serve.stop() == 0
    print("rebound:", rebound, "\nopen:", opened, "\nclosed:", shut)
    assert internal.accepted == 0  # before: libssh2 looked the name up again and connected to loopback
    assert "GAD_ALLOWED_HOSTS" in rebound and "Tracked" not in rebound
    assert open_port.accepted >= 1  # the open port really was reached ...
    assert "over ssh failed" in opened  # ... and answered in the same words as the closed one
    assert opened.replace(str(open_port.port), "PORT").replace("opened", "N") == \
        shut.replace(str(closed), "PORT").replace("shut", "N")
    _no_mirror(tmp_path / "data")
    assert "Traceback" not in serve.stderr


@needs_namespace
def test_the_operator_may_still_track_an_internal_host_from_the_cli(tmp_path, ca_file, internal):
    """The guard is for what strangers type in Slack: the operator's own `gad-bot track` is trusted."""
    data = tmp_path / "data"
    env = {"SSL_CERT_FILE": str(ca_file)}
    tracked = run_cli("track", internal.url("small.git"), "--name", "small", data=data, process=True, **env)
    assert tracked.returncode == 0, tracked.stdout + tracked.stderr
    assert repos_json(data, **env)[0]["guarded"] is False
    synced = run_cli("sync", "small", data=data, process=True, **env)
    assert synced.returncode == 0, synced.stdout + synced.stderr
    assert figures(data, "small")["(default)"][2] == 9


@needs_namespace
def test_an_untrusted_certificate_fails_a_guarded_fetch_at_once(tmp_path, ca, ca_file, stub):
    """A guarded fetch speaks TLS through the egress proxy's tunnel. libgit2 1.9, having rejected the forge's
    certificate there, closes (and frees) the tunnel's socket before the TLS session on it, then waits forever to
    write that session's close_notify (a poll on fd -1): the fetch child never answered, and the track, sync or
    reclone waited for GAD_FETCH_TIMEOUT_SECONDS (30 min by default) with the repository's lock held. Now each of
    the three fails with the sentence that names SSL_CERT_FILE, not the timeout's; the lock is free after: with
    the right CA file the same sync works. SSL_CERT_FILE points at another authority's certificate (unset, the
    system's authorities, fail the same way)."""
    import trustme

    stranger = tmp_path / "stranger-ca.pem"
    trustme.CA().cert_pem.write_to_path(str(stranger))
    _repo(tmp_path / "public" / "org" / "repo.git", people=2, days=3)
    forge = GitHttpServer(tmp_path / "public", host=ADDRESSES[FORGE], port=443, tls=_tls(ca, FORGE), hostname=FORGE)
    data, url = tmp_path / "data", f"https://{FORGE}/org/repo.git"
    env = {"GAD_ALLOWED_HOSTS": "forge-attack.net", "GAD_FETCH_TIMEOUT_SECONDS": "30"}
    with forge:
        with _serve(tmp_path, stub, ca_file, **{**env, "SSL_CERT_FILE": str(stranger)}) as serve:
            refused = _track(serve, stub, url, "refused")
            assert serve.stop() == 0
        assert "Traceback" not in serve.stderr
        _no_mirror(data)
        with _serve(tmp_path, stub, ca_file, **env) as serve:
            assert "Tracked" in _track(serve, stub, url, "repo")
            assert serve.stop() == 0
        before = figures(data, "repo")
        synced = run_cli("sync", "repo", data=data, process=True, SSL_CERT_FILE=str(stranger), **env)
        recloned = run_cli("sync", "--reclone", "repo", data=data, process=True, SSL_CERT_FILE=str(stranger), **env)
        again = run_cli("sync", "repo", data=data, process=True, SSL_CERT_FILE=str(ca_file), **env)
        # the operator's own track (no proxy: libgit2 failed at once there, as "user rejected certificate for HOST")
        operator = run_cli("track", url, "--name", "mine", data=tmp_path / "operator", process=True,
                           SSL_CERT_FILE=str(stranger))
    print("track:", refused, "\nsync:", synced.stdout, synced.stderr, "\nreclone:", recloned.stdout, recloned.stderr,
          "\noperator:", operator.stdout, operator.stderr)
    sentence = f"the TLS certificate of {FORGE} could not be verified"
    assert sentence in refused and "SSL_CERT_FILE" in refused and "timed out" not in refused, refused
    assert synced.returncode == 1 and recloned.returncode == operator.returncode == 2  # a failed repository; an error
    for failed in (synced.stdout + synced.stderr, recloned.stdout + recloned.stderr, operator.stdout + operator.stderr):
        assert sentence in failed and "SSL_CERT_FILE" in failed and "timed out" not in failed, failed
        assert "Traceback" not in failed
    assert again.returncode == 0, again.stdout + again.stderr  # the lock was let go; the mirror is intact
    assert figures(data, "repo") == before
    _no_mirror(tmp_path / "operator")
    assert index_problems(data) == []


# ----------------------------------------------------------------------------- the proxy itself, on loopback

def _with_secret(proxy, request: bytes) -> bytes:
    """`request` carrying the proxy's secret, as the fetch it was started for sends it."""
    line, sep, rest = request.partition(b"\r\n")
    return line + b"\r\nProxy-Authorization: " + proxy.authorization.encode() + sep + rest if sep else request


def _connect_via(proxy, request: bytes, *, secret: bool = True) -> bytes:
    import socket

    with socket.create_connection(("127.0.0.1", proxy.port), timeout=5) as sock:
        try:
            sock.sendall(_with_secret(proxy, request) if secret else request)
            return sock.recv(4096)
        except ConnectionResetError:  # closed with the rest of the request unread
            return b""


class _Listener:
    """A TCP listener on `host` that counts connections and echoes what it reads (a stand-in upstream),
    or with `echo=False` hangs up at once (an open port that is no ssh server)."""

    def __init__(self, host: str = "127.0.0.1", *, echo: bool = True):
        import socket
        import threading

        self.sock = socket.create_server((host, 0))
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        self.echo = echo
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            if self.echo:
                data = conn.recv(4096)
                conn.sendall(b"echo:" + data)
            conn.close()


def test_guard_proxy_connects_to_exactly_the_checked_address():
    """The CONNECT names a host that resolves nowhere; the check's answer alone decides where it goes."""
    from bot.store.egress import GuardProxy

    upstream = _Listener()
    asked = []

    def check(host, port):
        asked.append((host, port))
        return ["127.0.0.1"]

    with GuardProxy(check) as proxy:
        import socket

        with socket.create_connection(("127.0.0.1", proxy.port), timeout=5) as sock:
            sock.sendall(_with_secret(proxy, f"CONNECT nowhere.invalid:{upstream.port} HTTP/1.1\r\nHost: x\r\n\r\n"
                                          .encode()))
            assert sock.recv(4096).startswith(b"HTTP/1.1 200")
            sock.sendall(b"\x17\x03\x03\x00\x02hi")  # a TLS-shaped record, as libgit2 would send
            assert sock.recv(4096) == b"echo:\x17\x03\x03\x00\x02hi"
    assert asked == [("nowhere.invalid", upstream.port)]
    assert proxy.tunnels == [("nowhere.invalid", upstream.port, "127.0.0.1")]


@pytest.mark.parametrize("request_bytes, status", [
    (b"CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\n", b"403"),  # the check refuses
    (b"GET http://127.0.0.1:{port}/x HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", b"403"),  # plain http through the proxy
    (b"CONNECT 127.0.0.1:http HTTP/1.1\r\n\r\n", b"400"),
])
def test_guard_proxy_refusals_never_reach_the_target(request_bytes, status):
    from bot.store.egress import ConnectRefused, GuardProxy

    upstream = _Listener()

    def check(host, port):
        raise ConnectRefused(f"`{host}` is not a public host.")

    with GuardProxy(check) as proxy:
        answer = _connect_via(proxy, request_bytes.replace(b"{port}", str(upstream.port).encode()))
    assert answer.split(b" ")[1] == status
    assert upstream.accepted == 0 and proxy.tunnels == [] and len(proxy.refusals) == 1


@pytest.mark.parametrize("authorization", [None, "Basic Z2FkLWJvdDp3cm9uZw==", "Basic ", "Bearer x"])
def test_guard_proxy_opens_no_tunnel_for_another_local_process(authorization):
    """Issue 22: any local process could have a tunnel opened while a fetch ran. Without the
    fetch's secret (no header, a wrong password, an empty one, another scheme): 407, and neither
    the check nor the target is asked."""
    from bot.store.egress import GuardProxy

    upstream = _Listener()
    asked = []

    def check(host, port):
        asked.append((host, port))
        return ["127.0.0.1"]

    header = f"Proxy-Authorization: {authorization}\r\n" if authorization else ""
    with GuardProxy(check) as proxy:
        answer = _connect_via(proxy, f"CONNECT public.example:{upstream.port} HTTP/1.1\r\n{header}\r\n".encode(),
                              secret=False)
        assert proxy.authorization not in proxy.url and proxy.url.count(":") == 3  # the secret is in the URL
        good = _connect_via(proxy, f"CONNECT public.example:{upstream.port} HTTP/1.1\r\n\r\n".encode())
    assert answer.startswith(b"HTTP/1.1 407") and b"Proxy-Authenticate: Basic" in answer
    assert good.startswith(b"HTTP/1.1 200")  # the same request with the secret: tunnelled
    assert asked == [("public.example", upstream.port)] and proxy.tunnels == [("public.example", upstream.port,
                                                                                "127.0.0.1")]


def test_guard_proxy_drops_an_endless_request_head():
    from bot.store.egress import GuardProxy

    with GuardProxy(lambda h, p: ["127.0.0.1"]) as proxy:
        answer = _connect_via(proxy, b"CONNECT " + b"a" * 20_000)
    assert answer == b"" and proxy.tunnels == []


@pytest.mark.parametrize("source", ["https://127.0.0.1:9/x.git", "ssh://git@127.0.0.1:9/x.git", "https://localhost/x.git"])
def test_a_guarded_engine_refuses_loopback_even_when_nothing_checked_the_url(tmp_path, source):
    """Engine.track(guarded=True) is enforced at the fetch itself, not only by the face that checked the text."""
    from bot.config import Settings
    from bot.engine.engine import Engine
    from bot.errors import GadError

    engine = Engine.open(Settings.from_env({"GAD_DATA_DIR": str(tmp_path / "data"), "GAD_SSH_KEY": "/nonexistent",
                                            "GAD_FETCH_TIMEOUT_SECONDS": "10"}))
    with pytest.raises(GadError) as info:
        engine.track(source, "x", guarded=True)
    assert "is not a public host" in str(info.value)
    assert engine.repos() == [] and list((tmp_path / "data" / "mirrors").iterdir()) == []


def _track_org_answer(serve: Serve, stub, url: str, name: str, done: str) -> str:
    """Everything the admin saw for `/gad track URL` of an organization, once a message says `done`."""
    status, ack, took = serve.post(stub.slash_fields(f"track {url}", response_name=name))
    assert status == 200 and took < 3
    deadline = time.monotonic() + 60
    while done not in ack.decode() + json.dumps(stub.responses(name)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return ack.decode() + json.dumps(stub.responses(name))


@needs_namespace
def test_an_organization_whose_listing_leads_inside_tracks_nothing_from_inside(tmp_path, ca, ca_file, internal, stub):
    """`/gad track https://git.forge-attack.net/acme`, typed in Slack (guarded). The forge's API lists one
    repository whose clone URL names the internal server outright (refused: not on the forge's host) and one on
    the forge whose git side answers `302 Location: https://127.0.0.1:PORT/small.git` (refused by the egress proxy
    at the redirect). Tracked again, the API itself redirects to the internal server (refused: off its origin).
    Not one request reaches the internal server; nothing of it is tracked."""
    from tests.forgestub import ForgeStub, StubRepo

    forge = ForgeStub(tmp_path / "forge", "github", host=ADDRESSES[FORGE], port=443, tls=_tls(ca, FORGE),
                      hostname=FORGE, mode="redirect", redirect_to=internal.url("small.git"))
    web = forge.add("acme/web")
    inside_row = dict(forge._row(StubRepo(7, "acme/inside")), clone_url=internal.url("small.git"))
    forge.answers.append((200, {"Content-Type": "application/json"},
                          json.dumps([forge._row(web), inside_row]).encode()))
    with forge, _serve(tmp_path, stub, ca_file, GAD_FORGES=forge.forges_setting) as serve:
        listed = _track_org_answer(serve, stub, forge.owner_url("acme"), "listed", '"text": "acme: ')
        forge.answers.append((302, {"Location": internal.url("api/v3/orgs/acme/repos?per_page=100")}, b""))
        moved = _track_org_answer(serve, stub, forge.owner_url("acme"), "moved", "another address")
        assert serve.stop() == 0
    print("listed:", listed, "\nmoved:", moved)
    assert "acme: 0 repositories" in listed and "1 not fetched because its clone URL" in listed
    assert "1 could not be tracked (acme/web:" in listed and "127.0.0.1" in listed
    assert any("/acme/web.git" in path for _, path, _ in forge.requests), "the clone was never tried: no redirect"
    assert "sent gad-bot to another address" in moved
    assert internal.requests == []  # not one request reached the internal server
    # nothing tracked from inside; the repository that could not be cloned stays in sight, not cloned (issue 32)
    assert [(r["name"], r["state"], r["commits"]) for r in repos_json(tmp_path / "data")] == [
        ("acme/web", "not cloned", None)]


# ----------------------------------------------------------------------------- typed in Slack, run in a sync worker

def _fork_servers(data: Path) -> list[tuple[int, int]]:
    """(pid, parent pid) of every process of `data` with a multiprocessing fork server's command line: the fork
    servers, and the workers and fetch children forked from them (a fork keeps its parent's command line)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            environ = (entry / "environ").read_bytes().split(b"\0")
            parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if b"multiprocessing.forkserver" in cmdline and f"GAD_DATA_DIR={data}".encode() in environ:
            found.append((int(entry.name), parent))
    return found


def _watched_by(pid: int) -> set[int]:
    """The processes `pid` watches through a pidfd (a gad-bot child watches the process that asked for it)."""
    watched = set()
    for fd in (Path("/proc") / str(pid) / "fd").iterdir():
        try:
            if os.readlink(fd) != "anon_inode:[pidfd]":
                continue
            info = (Path("/proc") / str(pid) / "fdinfo" / fd.name).read_text()
        except OSError:
            continue
        watched.update(int(line.split()[1]) for line in info.splitlines() if line.startswith("Pid:"))
    return watched


def _parent_of(pid: int) -> int:
    return int((Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[1])


def _generations_below(pid: int, ancestor: int) -> int | None:
    """How many generations `pid` is below `ancestor` (1: a child), None if it does not descend from it."""
    count = 0
    while pid not in (0, 1):
        if pid == ancestor:
            return count
        pid, count = _parent_of(pid), count + 1
    return None


def _slack_figure(serve: Serve, stub, name: str, label: str) -> int:
    import re

    serve.post(stub.slash_fields(f"{name} since:2000-01", response_name=label))
    text = json.dumps(stub.wait_for_response(label, timeout=30))
    found = re.search(r"2GAD ([\d,]+) person-days", text)
    assert found, text
    return int(found.group(1).replace(",", ""))


@needs_namespace
def test_track_and_sync_typed_in_slack_run_in_a_sync_worker(tmp_path, ca, ca_file, stub):
    """Issue 17 part 3: `/gad track` and `/gad sync` typed in Slack run in serve's sync worker processes, never
    in serve itself: while the forge holds the track's fetch, its fetch child watches (bot/spawning.end_with) a sync
    worker, the process that asked for it; had serve asked, it would watch serve. Every child is forked by serve's
    one fork server, the worker's fetch too (no second server in a worker). The admin sees the "Tracking" message
    updated in place, then the answers; a `/gad sync` typed after a push brings the new commit into reports.
    Figures are git's."""
    from tests.gitbuild import oracle_gad

    upstream = _repo(tmp_path / "public" / "org" / "repo.git", people=3, days=5)
    forge = GitHttpServer(tmp_path / "public", host=ADDRESSES[FORGE], port=443, tls=_tls(ca, FORGE), hostname=FORGE)
    data = tmp_path / "data"
    with forge, _serve(tmp_path, stub, ca_file) as serve:
        forge.hold()
        try:
            status, ack, took = serve.post(stub.slash_fields(f"track https://{FORGE}/org/repo.git as:repo",
                                                             response_name="track"))
            assert status == 200 and took < 3 and b"Tracking" in ack
            deadline = time.monotonic() + 30
            while not forge.requests and time.monotonic() < deadline:
                time.sleep(0.05)
            assert forge.requests, "the track's fetch never reached the forge"
            found = _fork_servers(data)
            generations = {pid: _generations_below(pid, serve.proc.pid) for pid, _ in found}
            watching = {pid: _watched_by(pid) for pid, _ in found}
        finally:
            forge.release()
        deadline = time.monotonic() + 60
        while "fully indexed" not in json.dumps(stub.responses("track")) and time.monotonic() < deadline:
            time.sleep(0.1)
        tracked = stub.responses("track")
        upstream.commit(name="Newcomer", email="new@repo.example", date="2024-04-01")
        status, ack, took = serve.post(stub.slash_fields("sync repo", response_name="sync"))
        assert status == 200 and took < 3
        (synced,) = stub.wait_for_response("sync", timeout=60)
        after = _slack_figure(serve, stub, "repo", "after")
        assert serve.stop() == 0
    # serve's fork server (1); its workers and the fetch a worker asked for, all forked by it (2)
    assert sorted(set(generations.values())) == [1, 2], (generations, serve.proc.pid)
    assert list(generations.values()).count(1) == 1, generations  # serve's own fork server, and it alone
    workers = {pid for pid, watched in watching.items() if watched == {serve.proc.pid}}
    (fetch,) = [pid for pid, watched in watching.items() if watched and watched != {serve.proc.pid}]
    assert watching[fetch] <= workers, (watching, serve.proc.pid)  # a worker asked for the fetch, not serve
    texts = [body["text"] for body in tracked]
    assert texts[-2:] == ["Tracked repo: 5 commits indexed.", "repo is fully indexed: path: works now."], texts
    progress = tracked[:-2]
    assert progress and all(body["text"].startswith("Tracking https://") and body["replace_original"] is True
                            for body in progress), tracked
    assert tracked[-2]["replace_original"] is True  # the answer takes the progress message's place
    assert synced["text"] == "Synced: repo" and "6 commits (+1)" in json.dumps(synced), synced
    assert after == 2 * oracle_gad(upstream.path) == 12  # 5 days of 3 people, and the newcomer's day
    assert "Traceback" not in serve.stderr
