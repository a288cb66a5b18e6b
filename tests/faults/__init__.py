"""Fault-injection tests (issue 5): gad-bot killed, starved, lied to and attacked, for real.

Helpers shared by tests/faults/test_*.py live here (fixtures are in conftest.py):

* ``build_history``: a bare repository of N commits written through ``git fast-import`` in a
  second, big enough that indexing it takes a second or two;
* ``GitDaemon``: ``git daemon`` on a loopback port (``git://127.0.0.1:PORT/NAME``);
* ``GitHttpServer``: ``git http-backend`` behind a tiny threaded Python HTTP server whose
  ``mode`` can be switched to answer 500s, stall (accept and never answer) or ask for
  Basic credentials;
* ``StallServer``: a TCP listener that accepts connections and never says a word;
* ``run_cli`` / ``start_cli``: ``python -m bot.faces.cli ...`` as a real process with a private
  data directory and the host's git configuration blanked;
* ``figures`` / ``index_problems``: what a report says, read through a fresh Engine, and
  every invariant of the index that a half-written update would break.
"""

from __future__ import annotations

import base64
import gc
import json
import os
import random
import select
import signal
import socket
import sqlite3
import ssl
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from urllib.parse import urlsplit

from tests.gitbuild import git_env
from tests.loopback import LoopbackServer

ROOT = Path(__file__).resolve().parents[2]


# ----------------------------------------------------------------------------- processes

def cli_env(data: Path, **extra: str) -> dict[str, str]:
    """The environment of a gad-bot process: blank git config, a private data dir, nothing else from Slack."""
    env = {k: v for k, v in git_env().items() if not k.startswith(("SLACK_", "GAD_"))}
    env.update(GAD_DATA_DIR=str(data), PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1")
    env.update({k: str(v) for k, v in extra.items()})
    return env


def run_cli(*args: str, data: Path, timeout: float = 120, process: bool = False, **env: str
            ) -> subprocess.CompletedProcess:
    """`gad-bot ARGS` with a private data directory: in this process (tests/inprocess.py), or as a process of its
    own with process=True, for a test of what only a process shows."""
    from tests.inprocess import gad_bot

    return gad_bot(list(args), cli_env(data, **env), ROOT, process=process, timeout=timeout)


def track_here(source: str, name: str, data: Path, **env: str) -> None:
    """What `gad-bot track SOURCE --name NAME` leaves in `data` (the commits, the refs outside branches and tags,
    the changed paths: the CLI's three steps), done in this process and its index closed after. For a test whose
    subject is not the track command: a `gad-bot track` process costs ~2 s of wall and ~0.8 s of CPU (its imports,
    its fork server), this ~0.3 s once the test process has its own. Tests of the command itself run it
    (run_cli)."""
    from bot.config import Settings
    from bot.engine.engine import Engine

    engine = Engine.open(Settings.from_env({"GAD_DATA_DIR": str(data), **env}))
    try:
        result = engine.track(source, name, paths=False)
        engine.index_other_refs(result.name)
        engine.index_paths(result.name)
    finally:
        engine.index.close()
        # Every connection the engine's tables opened is closed before the test goes on, as at a process's exit:
        # one left to the garbage collector would write (a WAL checkpoint) into a file the test then damages or
        # makes read-only (seen: doctor found a damaged header repaired).
        del engine
        gc.collect()
        left = [fd for fd in os.listdir("/proc/self/fd") if _points_into(fd, data)]
        assert not left, f"files under {data} still open after the track: {left}"


def _points_into(fd: str, directory: Path) -> bool:
    try:
        return os.readlink(f"/proc/self/fd/{fd}").startswith(str(directory.resolve()) + "/")
    except OSError:
        return False


def tracked_web(base: Path, *days: str) -> tuple[Path, Path]:
    """A repository `web` (one commit per day given, ann and bob in turn) tracked as `gad-bot track` does
    (track_here) into `base/data`: (the data directory, the upstream repository)."""
    from tests.gitbuild import RepoBuilder

    upstream = RepoBuilder(base / "web")
    for i, day in enumerate(days or ("2024-01-02",)):
        upstream.commit(email=("ann@example.com", "bob@example.com")[i % 2], date=day)
    data = base / "data"
    track_here(str(upstream.path), "web", data)
    return data, upstream.path


def start_cli(*args: str, data: Path, **env: str) -> subprocess.Popen:
    """A gad-bot command in its own process group (it and any fetch child it starts)."""
    return subprocess.Popen([sys.executable, "-m", "bot.faces.cli", *args], cwd=ROOT, env=cli_env(data, **env),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)


def kill9(proc: subprocess.Popen, group: bool = True) -> tuple[str, str]:
    """SIGKILL and reap; return what the process had written.

    group=True kills its whole process group, as a container stop or systemd's default
    KillMode=control-group does; group=False kills the one process only (`kill -9 PID`).
    """
    if proc.poll() is None:
        if group:
            os.killpg(proc.pid, signal.SIGKILL)
        else:
            os.kill(proc.pid, signal.SIGKILL)
    out, err = proc.communicate(timeout=30)
    if group:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # a child that outlived its parent
        except ProcessLookupError:
            pass
    return out, err


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port: int, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise TimeoutError(f"nothing listens on 127.0.0.1:{port}")


def children(pid: int) -> list[int]:
    """The process ids whose parent is `pid` (every thread's children; a thread that ends meanwhile has none).
    Raises OSError when `pid` itself is gone."""
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            found += [int(p) for p in (task / "children").read_text().split()]
        except OSError:
            pass
    return found


def descendants(pid: int) -> list[int]:
    """Every process below `pid`: its children, theirs, and so on."""
    found, todo = [], [pid]
    while todo:
        try:
            below = children(todo.pop())
        except OSError:
            continue
        found += below
        todo += below
    return found


def workers_of(serve_pid: int) -> list[int]:
    """serve's worker processes (report and sync workers): the children of its fork server (bot/spawning.py),
    serve's own children being that server and multiprocessing's resource tracker."""
    return [pid for server in children(serve_pid) for pid in children(server)]


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


# ----------------------------------------------------------------------------- histories

@dataclass
class History:
    path: Path
    commits: int
    tips: dict[str, str]  # ref -> hex at the end of the stream
    marks: dict[int, str]  # fast-import mark -> hex (commit i of main has mark MAIN_MARK + i)

    def main_commit(self, i: int) -> str:
        return self.marks[MAIN_MARK + i]


MAIN_MARK = 100_000
DEV_MARK = 900_000
PULL_MARK = 950_000


def _stream(commits: int, seed: int, dev_commits: int) -> bytes:
    """A linear main of `commits` commits, a `dev` branch off its middle, tags and a pull ref.

    Trees change on one commit in 50, so the repository is mostly commit objects: a small
    pack that clones quickly but still gives the indexer `commits` rows to write.
    """
    rng = random.Random(seed)
    people = [(f"Dev {i}", f"dev{i}@example.com") for i in range(150)]
    people += [("Zoë Ünicode", "zoe@example.org"), ("dependabot[bot]", "49699333+dependabot[bot]@users.noreply.github.com")]
    zones = [b"+0000", b"-0800", b"+0530", b"+0100", b"-0300", b"+0900", b"+1245", b"-1100"]
    out: list[bytes] = []
    w = out.append
    for b in range(16):
        data = b"blob %d\n" % b
        w(b"blob\nmark :%d\ndata %d\n%s\n" % (b + 1, len(data), data))
    moment = 1514764800  # 2018-01-01

    def commit(ref: bytes, mark: int, parent: int | None, i: int) -> None:
        nonlocal moment
        name, email = people[min(int(rng.paretovariate(1.1)) - 1, len(people) - 1)] if rng.random() < .85 \
            else rng.choice(people)
        moment += rng.randint(30, 6000)
        zone = rng.choice(zones)
        ident = b"%s <%s> %d %s" % (name.encode(), email.encode(), moment, zone)
        msg = b"commit %d\n" % i
        w(b"commit %s\nmark :%d\nauthor %s\ncommitter %s\ndata %d\n%s" % (ref, mark, ident, ident, len(msg), msg))
        if parent is not None:
            w(b"from :%d\n" % parent)
        if i % 50 == 0:
            w(b"M 100644 :%d f%d\n" % (rng.randint(1, 16), i % 8))
        w(b"\n")

    fork = commits // 2
    for i in range(commits):
        commit(b"refs/heads/main", MAIN_MARK + i, MAIN_MARK + i - 1 if i else None, i)
        if i == fork:
            for j in range(dev_commits):
                commit(b"refs/heads/dev", DEV_MARK + j, DEV_MARK + j - 1 if j else MAIN_MARK + fork, commits + j)
    for k, at in enumerate((commits // 4, commits // 3, commits - 10)):
        w(b"reset refs/tags/v%d\nfrom :%d\n\n" % (k + 1, MAIN_MARK + at))
    for j in range(20):  # a pull request's own commits: outside the default scope (refs:all counts them)
        commit(b"refs/pull/1/head", PULL_MARK + j, PULL_MARK + j - 1 if j else DEV_MARK + dev_commits // 2,
               commits + dev_commits + j)
    return b"".join(out)


def build_history(path: Path, commits: int, *, seed: int = 5, dev_commits: int = 200) -> History:
    """A bare repository written by `git fast-import` (about a second for 15,000 commits)."""
    env = git_env()
    subprocess.run(["git", "init", "-q", "--bare", "--initial-branch=main", str(path)], check=True, env=env)
    marks = path / "fast-import.marks"
    subprocess.run(["git", "fast-import", "--quiet", f"--export-marks={marks}"], input=_stream(commits, seed, dev_commits),
                   cwd=path, check=True, env=env, capture_output=True)
    table = {}
    for line in marks.read_text().splitlines():
        mark, sha = line.split()
        table[int(mark[1:])] = sha
    marks.unlink()
    return History(path, commits + dev_commits + 20, refs(path), table)


def git(path: Path, *args: str, input: bytes | None = None) -> str:
    return subprocess.run(["git", *args], cwd=path, check=True, capture_output=True, env=git_env(),
                          input=input).stdout.decode()


def refs(path: Path) -> dict[str, str]:
    out = git(path, "for-each-ref", "--format=%(refname) %(objectname)")
    return dict(line.split(" ", 1) for line in out.splitlines())


def set_refs(path: Path, tips: dict[str, str | None]) -> None:
    """Point (or delete, with None) refs of a repository, all at once."""
    lines = []
    for ref, sha in tips.items():
        lines.append(f"delete {ref}" if sha is None else f"update {ref} {sha}")
    git(path, "update-ref", "--stdin", input=("\n".join(lines) + "\n").encode())


# ----------------------------------------------------------------------------- remotes

def require_git_program(name: str) -> None:
    """Skip the calling test when this git installation lacks `git NAME` (e.g. git-daemon is packaged apart)."""
    import pytest

    exec_path = subprocess.run(["git", "--exec-path"], capture_output=True, text=True, env=git_env()).stdout.strip()
    if not (Path(exec_path) / f"git-{name}").exists():
        pytest.skip(f"`git {name}` is not installed")


class GitDaemon:
    """`git daemon` exporting every repository under `base` at git://127.0.0.1:PORT/NAME."""

    def __init__(self, base: Path):
        require_git_program("daemon")
        self.base = base
        self.port = free_port()
        self.proc: subprocess.Popen | None = None

    def start(self) -> "GitDaemon":
        self.proc = subprocess.Popen(
            ["git", "daemon", "--reuseaddr", "--export-all", "--informative-errors", f"--base-path={self.base}",
             "--listen=127.0.0.1", f"--port={self.port}", str(self.base)],
            env=git_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        wait_port(self.port)
        return self

    def url(self, name: str) -> str:
        return f"git://127.0.0.1:{self.port}/{name}"

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)  # its own session: the daemon and its upload-packs
            self.proc.wait(timeout=10)
        self.proc = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


class GitHttpServer:
    """`git http-backend` (smart HTTP) behind a threaded Python HTTP server on 127.0.0.1.

    ``mode``: ``"ok"`` serves; ``"500"`` answers every request with 500; ``"stall"`` reads the
    request and never answers (until ``stop``); ``"hold"`` reads it and serves it once ``release()`` is
    called (a fetch held in the middle, as long as a test needs); ``"auth"`` wants Basic credentials whose
    password is ``password`` and answers 401 otherwise; ``"redirect"`` answers every request
    with ``302 Location: redirect_to + the path after its `.git``` (so
    ``/org/repo.git/info/refs?...`` goes to ``redirect_to/info/refs?...``). ``requests`` records
    (method, path, authorization header) of every request.

    ``host``/``port`` choose the listening address (a port of 0 picks a free one); with ``tls``
    the server speaks HTTPS and ``url`` names ``hostname`` (the name its certificate is for).
    """

    def __init__(self, base: Path, mode: str = "ok", password: str | None = None, *, host: str = "127.0.0.1",
                 port: int = 0, tls: ssl.SSLContext | None = None, hostname: str | None = None,
                 redirect_to: str | None = None):
        require_git_program("http-backend")
        self.base, self.mode, self.password, self.redirect_to = base, mode, password, redirect_to
        self.scheme = "https" if tls else "http"
        self.hostname = hostname or host
        self.requests: list[tuple[str, str, str]] = []
        self._stop = threading.Event()
        self._released = threading.Event()
        self._busy = threading.Condition()
        self._answering = 0  # requests begun and not yet answered
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_GET(self):
                server._counted(self)

            def do_POST(self):
                server._counted(self)

        self._httpd = LoopbackServer((host, port), Handler)
        if tls is not None:
            self._httpd.socket = tls.wrap_socket(self._httpd.socket, server_side=True)
        self.port = self._httpd.server_address[1]
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def url(self, name: str) -> str:
        default = {"http": 80, "https": 443}[self.scheme]
        port = "" if self.port == default else f":{self.port}"
        return f"{self.scheme}://{self.hostname}{port}/{name}"

    def start(self) -> "GitHttpServer":
        self._thread.start()
        return self

    def wait_idle(self, timeout: float = 30.0) -> None:
        """Wait until every request begun so far is answered (a client killed mid-request included): what
        `requests` holds is then all there will be of it."""
        with self._busy:
            if not self._busy.wait_for(lambda: self._answering == 0, timeout):
                raise AssertionError(f"{self._answering} requests still being answered after {timeout} s")

    def _counted(self, h: BaseHTTPRequestHandler) -> None:
        with self._busy:
            self._answering += 1
        try:
            self._handle(h)
        finally:
            with self._busy:
                self._answering -= 1
                self._busy.notify_all()

    def hold(self) -> None:
        """From now on, requests wait (mode "hold") until `release`."""
        self._released.clear()
        self.mode = "hold"

    def release(self) -> None:
        self.mode = "ok"
        self._released.set()

    def stop(self) -> None:
        self._stop.set()
        self._released.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    @staticmethod
    def _body(h: BaseHTTPRequestHandler) -> bytes:
        if h.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            while True:
                size = int(h.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    h.rfile.readline()
                    return b"".join(chunks)
                chunks.append(h.rfile.read(size))
                h.rfile.readline()
        length = int(h.headers.get("Content-Length") or 0)
        return h.rfile.read(length) if length else b""

    def _reply(self, h: BaseHTTPRequestHandler, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        h.send_response(status)
        for k, v in (headers or {}).items():
            h.send_header(k, v)
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        h.wfile.write(body)

    def _handle(self, h: BaseHTTPRequestHandler) -> None:
        body = self._body(h)
        self.requests.append((h.command, h.path, h.headers.get("Authorization", "")))
        mode = self.mode
        if mode == "redirect":
            rest = h.path.partition(".git")[2] if ".git" in h.path else h.path
            return self._reply(h, 302, b"moved\n", {"Location": self.redirect_to.rstrip("/") + rest,
                                                    "Content-Type": "text/plain"})
        if mode == "500":
            return self._reply(h, 500, b"internal server error\n", {"Content-Type": "text/plain"})
        if mode == "hold":
            self._released.wait()
        if mode == "stall":
            self._stop.wait()  # accept, read, never answer
            h.close_connection = True
            return
        if mode == "auth":
            expected = "Basic " + base64.b64encode(f"gad-bot:{self.password}".encode()).decode()
            if h.headers.get("Authorization") != expected:
                return self._reply(h, 401, b"credentials, please\n",
                                   {"WWW-Authenticate": 'Basic realm="git"', "Content-Type": "text/plain"})
        parts = urlsplit(h.path)
        env = {**git_env(), "GIT_PROJECT_ROOT": str(self.base), "GIT_HTTP_EXPORT_ALL": "1",
               "PATH_INFO": parts.path, "QUERY_STRING": parts.query, "REQUEST_METHOD": h.command,
               "CONTENT_TYPE": h.headers.get("Content-Type", ""), "CONTENT_LENGTH": str(len(body)),
               "REMOTE_ADDR": "127.0.0.1", "GATEWAY_INTERFACE": "CGI/1.1", "SERVER_PROTOCOL": "HTTP/1.1"}
        for header in ("Git-Protocol", "Content-Encoding"):
            if h.headers.get(header):
                env["HTTP_" + header.upper().replace("-", "_")] = h.headers[header]
        cgi = subprocess.run(["git", "http-backend"], input=body, env=env, capture_output=True)
        head, _, payload = cgi.stdout.partition(b"\r\n\r\n")
        if not _:
            head, _, payload = cgi.stdout.partition(b"\n\n")
        status, headers = 200, {}
        for line in head.decode("latin-1").splitlines():
            key, _, value = line.partition(":")
            if key.lower() == "status":
                status = int(value.strip().split()[0])
            elif key:
                headers[key.strip()] = value.strip()
        headers.pop("Content-Length", None)
        self._reply(h, status, payload, headers)


class StallServer:
    """Accepts TCP connections on 127.0.0.1 and never sends a byte (a hung git server)."""

    def __init__(self):
        self._sock = socket.socket()
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(16)
        self.port = self._sock.getsockname()[1]
        self.accepted = 0
        self._conns: list[socket.socket] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            ready, _, _ = select.select([self._sock], [], [], 0.05)
            if ready:
                conn, _ = self._sock.accept()
                self._conns.append(conn)
                self.accepted += 1

    def start(self) -> "StallServer":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        for conn in self._conns:
            conn.close()
        self._sock.close()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


# ----------------------------------------------------------------------------- what the index says

QUERIES = ("", "refs:all", "branch:HEAD", "by:month", "by:person", "since:2018-06 until:2018-09")


def figures(data: Path, name: str, queries: tuple[str, ...] = QUERIES) -> dict[str, object]:
    """Every query's totals and rows, through a fresh Engine (no cache), as plain data."""
    from datetime import date

    from bot.config import Settings
    from bot.engine.engine import Engine
    from bot.engine.query import parse_query

    engine = Engine.open(Settings.from_env({"GAD_DATA_DIR": str(data)}))
    try:
        out: dict[str, object] = {}
        for text in queries:
            query = parse_query([name, *text.split()], date(2026, 12, 3))
            report = engine.report(query, date(2026, 12, 3))
            out[text or "(default)"] = (report.totals.person_days, report.totals.developers, report.totals.commits,
                                        tuple((r.key, r.totals.person_days, r.totals.commits) for r in report.rows))
        return out
    finally:
        engine.index.close()


def index_problems(data: Path) -> list[str]:
    """Anything a half-written update would leave behind: an empty list when the index is whole."""
    path = data / "index.sqlite"
    conn = sqlite3.connect(path, timeout=30)
    try:
        problems = []
        check = [r[0] for r in conn.execute("PRAGMA integrity_check")]
        if check != ["ok"]:
            problems.append(f"integrity_check: {check[:5]}")
        fk = conn.execute("PRAGMA foreign_key_check").fetchall()
        if fk:
            problems.append(f"foreign_key_check: {fk[:5]}")
        for repo_id, name, commits, generation in conn.execute("SELECT id, name, commits, generation FROM repos"):
            chunks = conn.execute("SELECT seq, rows, oids FROM commit_chunks WHERE repo_id = ? ORDER BY seq",
                                  (repo_id,)).fetchall()
            walking = conn.execute("SELECT 1 FROM walks WHERE repo_id = ?", (repo_id,)).fetchone() is not None
            derived = conn.execute("SELECT generation, chunks, rows, bits FROM derived WHERE repo_id = ?",
                                   (repo_id,)).fetchone()
            if [c[0] for c in chunks] != list(range(len(chunks))):
                problems.append(f"{name}: chunk numbers {[c[0] for c in chunks]} are not 0..n-1")
            if any(len(c[2]) != 20 * c[1] for c in chunks):
                problems.append(f"{name}: a chunk's ids do not match its row count")
            ids = [c[2][i:i + 20] for c in chunks for i in range(0, len(c[2]), 20)]
            if len(set(ids)) != len(ids):
                problems.append(f"{name}: {len(ids) - len(set(ids))} commits stored twice")
            if generation == 0:
                if derived is not None or (chunks and not walking):
                    problems.append(f"{name}: never finished, yet derived {derived is not None}, "
                                    f"{len(chunks)} chunks, walk row {walking}")
                continue
            if derived is None or derived[0] != generation:
                problems.append(f"{name}: derived arrays {derived and derived[0]} do not match generation {generation}")
                continue
            covered = sum(c[1] for c in chunks[:derived[1]])
            if derived[1] > len(chunks) or covered != derived[2] or len(derived[3]) != derived[2]:
                problems.append(f"{name}: derived arrays cover {derived[2]} rows of {derived[1]} chunks, "
                                f"the chunks hold {covered}")
            if not walking and len(chunks) != derived[1]:
                problems.append(f"{name}: {len(chunks) - derived[1]} chunks beyond the derived ones and no walk")
            alive = sum(1 for b in derived[3] if b)
            if alive != commits:
                problems.append(f"{name}: repos.commits {commits} but {alive} rows counted")
            tips = conn.execute("SELECT count(*) FROM refs WHERE repo_id = ?", (repo_id,)).fetchone()[0]
            if commits and not tips:
                problems.append(f"{name}: {commits} commits but no stored ref tips")
        return problems
    finally:
        conn.close()


def pending_paths(data: Path) -> int:
    """Commits whose changed paths are not indexed yet (0 once a sync has finished its job)."""
    conn = sqlite3.connect(data / "index.sqlite", timeout=30)
    try:
        return conn.execute("SELECT coalesce(sum(rows), 0) FROM commit_chunks WHERE path_offsets IS NULL").fetchone()[0]
    finally:
        conn.close()


def repos_json(data: Path, **env: str) -> list[dict]:
    result = run_cli("repos", "--json", data=data, **env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def leftovers(data: Path) -> list[Path]:
    """Staging directories and temporary pack files an interrupted clone or fetch left."""
    mirrors = data / "mirrors"
    if not mirrors.exists():
        return []
    found = [p for p in mirrors.iterdir() if p.name.startswith(".incoming-")]
    for pattern in ("*/objects/pack/tmp_pack_*", "*/objects/pack/pack_git2_*", "*/objects/pack/*.lock",
                    "*/objects/incoming-*"):
        found += list(mirrors.glob(pattern))
    return found


# ----------------------------------------------------------------------------- gad-bot serve

SIGNING_SECRET = "faults-signing-secret-0123456789abcdef"


class Serve:
    """`gad-bot serve` as a real process (HTTP on a loopback port, or Socket Mode against a SlackStub).

    stdout/stderr go to files (a chatty process never blocks on a full pipe); ``post`` sends a
    signed slash command the way Slack does and returns (status, body, seconds to the ack).
    """

    def __init__(self, data: Path, stub, *, socket_mode: bool = False, secret: str = SIGNING_SECRET,
                 logs: Path | None = None, cpus: set[int] | None = None, **env: str):
        """`cpus`: the CPUs serve may run on (its affinity, inherited by its workers), e.g. one CPU for one sync
        worker (bot/service/workers.default_workers)."""
        self.data, self.stub, self.socket_mode, self.secret = data, stub, socket_mode, secret
        self.cpus = cpus
        self.port = free_port()
        self.logs = logs or data.parent / f"serve-{self.port}"
        self.env = {"SLACK_BOT_TOKEN": stub.good_token, "SLACK_API_URL": stub.api_url, **env}
        if socket_mode:
            self.env.setdefault("SLACK_APP_TOKEN", stub.app_token)
        else:
            self.env.setdefault("SLACK_SIGNING_SECRET", secret)
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, wait: bool = True, timeout: float = 30.0) -> "Serve":
        self.logs.mkdir(parents=True, exist_ok=True)
        self._out = open(self.logs / "stdout", "w")
        self._err = open(self.logs / "stderr", "w")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "bot.faces.cli", "serve", "--port", str(self.port), "--host", "127.0.0.1"],
            cwd=ROOT, env=cli_env(self.data, **self.env), stdout=self._out, stderr=self._err, start_new_session=True,
            preexec_fn=(lambda: os.sched_setaffinity(0, self.cpus)) if self.cpus else None)
        if wait:
            self.wait_ready(timeout)
        return self

    def wait_ready(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        connects = self.stub.socket_connects if self.socket_mode else 0
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"serve exited with {self.proc.returncode}: {self.stderr}")
            if self.socket_mode:
                if self.stub.socket_connects > connects or self.stub.socket_connections:
                    return
            else:
                try:
                    import urllib.request

                    with urllib.request.urlopen(self.url + "/healthz", timeout=2) as response:
                        if response.status == 200:
                            return
                except OSError:
                    pass
            time.sleep(0.05)
        raise TimeoutError(f"serve did not become ready in {timeout}s: {self.stderr}")

    def wait_serving(self, timeout: float = 30.0) -> None:
        """Wait until serve has started everything: /readyz answers 200 (its report workers are up: serve answers
        /healthz before they are); in Socket Mode, which has no HTTP server, until it says it is serving (its
        workers, scheduler and checks started: the stub sees the connection before any of them)."""
        if self.socket_mode:
            wait_until("serve serving in Socket Mode", lambda: "serving in Socket Mode" in self.stdout, timeout)
            return
        wait_until("serve ready (/readyz 200)", lambda: get(self.url + "/readyz")[0] == 200, timeout)

    def post(self, fields: dict, *, secret: str | None = None, timestamp: int | None = None,
             timeout: float = 10.0) -> tuple[int, bytes, float]:
        import urllib.error
        import urllib.request

        from tests.slackstub import signed_slash_command

        body, headers = signed_slash_command(secret or self.secret, fields, timestamp=timestamp)
        request = urllib.request.Request(self.url + "/slack/events", data=body, headers=headers, method="POST")
        started = time.monotonic()
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                return response.status, response.read(), time.monotonic() - started
        except urllib.error.HTTPError as error:
            return error.code, error.read(), time.monotonic() - started

    def post_signed(self, body: bytes, headers: dict, timeout: float = 10.0) -> tuple[int, bytes]:
        """POST a request already signed (signed_event / signed_interaction) to /slack/events."""
        import urllib.error
        import urllib.request

        request = urllib.request.Request(self.url + "/slack/events", data=body, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                return response.status, response.read()
        except urllib.error.HTTPError as error:
            return error.code, error.read()

    def send(self, signum: int) -> None:
        os.kill(self.proc.pid, signum)

    def stop(self, signum: int = signal.SIGTERM, timeout: float = 15.0) -> int:
        """Send `signum` and wait; SIGKILL after `timeout` (and fail) if it does not exit."""
        if self.proc is None:
            return 0
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signum)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
                raise AssertionError(f"serve ignored signal {signum} for {timeout}s")
        self._out.close()
        self._err.close()
        return self.proc.returncode

    @property
    def stderr(self) -> str:
        try:
            return (self.logs / "stderr").read_text()
        except OSError:
            return ""

    @property
    def stdout(self) -> str:
        try:
            return (self.logs / "stdout").read_text()
        except OSError:
            return ""

    def __enter__(self):
        try:
            return self.start()
        except BaseException:  # a serve that never got ready is not left running after the test
            self.__exit__()
            raise

    def __exit__(self, *exc):
        if self.proc is not None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)  # serve and anything it started
            except ProcessLookupError:
                pass
            self.proc.wait(timeout=10)
        for handle in (getattr(self, "_out", None), getattr(self, "_err", None)):
            if handle is not None and not handle.closed:
                handle.close()


def clean_figures(path: Path, name: str, scratch: Path) -> dict:
    """The figures of a fresh index of the repository at `path` (registered in place under `scratch`)."""
    from bot.config import Settings
    from bot.engine.engine import Engine

    data = scratch / f"clean-{time.monotonic_ns()}"
    engine = Engine.open(Settings.from_env({"GAD_DATA_DIR": str(data)}))
    try:
        engine.track(str(path), name, in_place=True)
    finally:
        engine.index.close()
    return figures(data, name)


class TrickleServer:
    """An HTTP "git server" that answers the ref advertisement one byte every `interval` seconds.

    Every single read succeeds well within any socket timeout, so only a deadline on the whole
    fetch can stop a client that waits for it (a slow-loris server, or a proxy gone wrong).
    """

    def __init__(self, interval: float = 0.5):
        self.interval = interval
        self._sock = socket.socket()
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(16)
        self.port = self._sock.getsockname()[1]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.port}/{name}"

    def _run(self) -> None:
        while not self._stop.is_set():
            ready, _, _ = select.select([self._sock], [], [], 0.05)
            if ready:
                conn, _ = self._sock.accept()
                threading.Thread(target=self._one, args=(conn,), daemon=True).start()

    def _one(self, conn: socket.socket) -> None:
        advert = b"001e# service=git-upload-pack\n0000" + (b"0044" + b"a" * 40 + b" HEAD\0multi_ack side-band-64k\n") * 50
        try:
            conn.recv(65536)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/x-git-upload-pack-advertisement\r\n"
                         b"Cache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n\r\n")
            for byte in advert:
                if self._stop.wait(self.interval):
                    break
                conn.sendall(b"1\r\n" + bytes([byte]) + b"\r\n")
        except OSError:
            pass
        finally:
            conn.close()

    def start(self) -> "TrickleServer":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self._sock.close()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


# ----------------------------------------------------------------------------- probes and faults of serve

def get(url: str, timeout: float = 10) -> tuple[int, str]:
    """(status, body) of a GET, whatever the status; (0, why) when nothing answers."""
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()
    except OSError as error:  # refused, reset: nothing listens (yet)
        return 0, str(error)


def scrape(url: str) -> dict[tuple[str, tuple], float]:
    """Every sample of `GET url/metrics`, keyed by (name, sorted labels), as Prometheus' own parser reads it."""
    from prometheus_client.parser import text_string_to_metric_families

    status, text = get(url + "/metrics")
    assert status == 200, text
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def wait_until(what: str, check, timeout: float = 60.0, every: float = 0.1):
    """Poll `check()` until it returns something true (returned), or fail after `timeout` naming `what`."""
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if found:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout} s: {what} (last: {found!r})")
        time.sleep(every)


def damage_table(index: Path, table: str) -> None:
    """Overwrite the root page of `table` with garbage, as a bad disk would (after a checkpoint, so the WAL
    holds none of it): whatever reads that table next finds `database disk image is malformed`."""
    db = sqlite3.connect(index)
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    page = db.execute("PRAGMA page_size").fetchone()[0]
    (root,) = db.execute("SELECT rootpage FROM sqlite_master WHERE name = ?", (table,)).fetchone()
    db.close()
    with open(index, "r+b") as handle:
        handle.seek((root - 1) * page)
        handle.write(b"\xa5" * page)


class Tmpfs:
    """A tmpfs of `size` mounted at `path` for the test (the kernel's own ENOSPC, not a mock), unmounted after.

    Needs the right to mount (root, or CAP_SYS_ADMIN): the calling test is skipped, with the reason, without it."""

    def __init__(self, path: Path, size: str):
        self.path, self.size = path, size

    def __enter__(self) -> "Tmpfs":
        import pytest

        self.path.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={self.size},mode=0755", "tmpfs", str(self.path)],
                              capture_output=True, text=True)
        if done.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here (not root?): {done.stderr.strip()[:200]}")
        return self

    def remount(self, options: str) -> None:
        subprocess.run(["mount", "-o", f"remount,{options}", str(self.path)], check=True, capture_output=True)

    def fill(self, keep: int = 0) -> Path:
        """Write a file until the kernel says ENOSPC (less `keep` bytes); return it (delete it to free the space)."""
        import errno as errno_

        filler = self.path / "filler"
        with open(filler, "wb", buffering=0) as handle:
            for chunk in (1 << 20, 1 << 12, 1):
                try:
                    while True:
                        handle.write(b"\0" * chunk)
                except OSError as error:
                    assert error.errno == errno_.ENOSPC, error
        if keep:
            os.truncate(filler, max(0, filler.stat().st_size - keep))
        return filler

    def __exit__(self, *exc) -> None:
        subprocess.run(["umount", "-l", str(self.path)], capture_output=True)


def as_another_user() -> list[str]:
    """The command prefix that runs a process as a user who owns nothing here (root: `setpriv` to nobody);
    [] when this process is not root (it then is such a user for what root owns)."""
    import shutil

    import pytest

    if os.geteuid() != 0:
        return []
    if not shutil.which("setpriv"):
        pytest.skip("running as root without `setpriv`: cannot act as another user")
    return ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
