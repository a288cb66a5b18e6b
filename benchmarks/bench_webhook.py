"""Forge webhooks on a real `gad-bot serve`: push -> a report that counts the push, and acks while many syncs run.

    .venv/bin/python benchmarks/bench_webhook.py                 # 50 repositories of 300 commits, 20 pushes
    .venv/bin/python benchmarks/bench_webhook.py --repos 20 --rounds 5 --no-doc   # a quick look

What it does (issue 17, parts 2 and 3), on loopback:
1. builds --repos bare repositories of --commits commits each (the same 300 people across them),
   served by `git http-backend` (tests/faults GitHttpServer), tracks each by its http:// URL, and
   starts `gad-bot serve --port N` (HTTP mode) with GAD_WEBHOOK_SECRETS for 127.0.0.1;
2. push -> report, --rounds times: a commit by a new person on a new day is written into one
   upstream, its GitHub-shaped push webhook (signed, tests/forgehooks.py) is POSTed to
   /hooks/github, then the same signed slash command is sent every 100 ms until the report at its
   response_url counts the new commit (its 2GAD must reach 2 x tests/gitbuild.py oracle_gad).
   Beside it, git's own `git fetch` of the same push over the same http-backend into a copy of
   the repository, timed in the same round: the floor any sync has to pay;
3. a sync storm: one commit pushed to every repository and every webhook sent at once (8 senders);
   meanwhile a signed slash command every 50 ms, whose ack times are compared with the same
   commands on the idle server; the storm ends when the index counts every new commit. Beside it,
   git fetching every repository one after the other.

Results are printed as a markdown table and written into docs/benchmarks.md between the
`bench:webhook` markers (unless --no-doc), by bench_load.py's `report`.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from bench_load import report  # noqa: E402  (the table, printed and written between the markers)
from bot.config import Settings  # noqa: E402
from bot.engine.engine import Engine  # noqa: E402
from tests.faults import GitHttpServer, Serve, git_env  # noqa: E402
from tests.forgehooks import ForgeRepo, delivery, github_push, post  # noqa: E402
from tests.gitbuild import RepoBuilder, oracle_gad  # noqa: E402
from tests.slackstub import SlackStub  # noqa: E402

SECRET = "bench-webhook-secret-0123456789abcdef"
PEOPLE = 300


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def ms(seconds: float) -> str:
    return f"{1000 * seconds:.0f} ms"


class Acker:
    """While the block runs, `ack(label, person)` every 50 ms on a thread, a new person each (one person's
    fourth report at once would be refused: GAD_REPORTS_PER_USER); `seconds` holds the ack times."""

    def __init__(self, ack: Callable[[str, int], float]):
        self.ack, self.seconds, self._stop = ack, [], threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        i = 0
        while not self._stop.is_set():
            self.seconds.append(self.ack(f"busy-{i}", 1000 + i))
            i += 1
            time.sleep(0.05)

    def __enter__(self) -> "Acker":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def _stream(r: int, commits: int) -> bytes:
    """`git fast-import` input: `commits` commits on main by the same PEOPLE across repositories."""
    out = [b"blob\nmark :1\ndata 6\nhello\n\n"]
    for c in range(commits):
        person = (r * 7 + c * 13) % PEOPLE
        moment = 1735722000 + c * 86400 + r * 600  # 2025-01-01 09:00 UTC, a commit a day
        ident = b"Dev %d <dev%d@acme.example> %d +0000" % (person, person, moment)
        message = b"commit %d\n" % c
        out.append(b"commit refs/heads/main\nmark :%d\nauthor %s\ncommitter %s\ndata %d\n%s" %
                   (c + 2, ident, ident, len(message), message))
        if c:
            out.append(b"from :%d\n" % (c + 1))
        out.append(b"M 100644 :1 f%d\n\n" % (c % 5))
    return b"".join(out)


def build(base: Path, repos: int, commits: int) -> list[RepoBuilder]:
    """Bare repositories written by `git fast-import`; RepoBuilder writes the pushes into them later."""
    upstreams = []
    for r in range(repos):
        path = base / "srv" / "acme" / f"r{r:04d}.git"
        subprocess.run(["git", "init", "-q", "--bare", "--initial-branch=main", str(path)], check=True, env=git_env())
        subprocess.run(["git", "fast-import", "--quiet"], input=_stream(r, commits), cwd=path, check=True,
                       env=git_env(), capture_output=True)
        upstreams.append(RepoBuilder(path, bare=True))
    return upstreams


def figure(serve: Serve, stub: SlackStub, text: str, label: str) -> int:
    status, _, _ = serve.post(stub.slash_fields(text, response_name=label))
    assert status == 200, status
    answer = json.dumps(stub.wait_for_response(label, timeout=30))
    found = re.search(r"2GAD ([\d,]+) person-days", answer)
    if not found:
        raise AssertionError(f"no figure in the answer to {text!r}: {answer[:300]}")
    return int(found.group(1).replace(",", ""))


def git_fetch_seconds(copy: Path) -> float:
    started = time.perf_counter()
    subprocess.run(["git", "fetch", "-q", "origin", "+refs/heads/*:refs/heads/*"], cwd=copy, check=True,
                   env=git_env(), capture_output=True)
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repos", type=int, default=50)
    parser.add_argument("--commits", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--no-doc", action="store_true")
    args = parser.parse_args()
    rows: list[tuple[str, str]] = []
    problems: list[str] = []
    with tempfile.TemporaryDirectory(prefix="bench-webhook-") as tmp:
        base = Path(tmp)
        started = time.perf_counter()
        upstreams = build(base, args.repos, args.commits)
        print(f"built {args.repos} repositories of {args.commits} commits in {time.perf_counter() - started:.1f} s",
              flush=True)
        data = base / "data"
        with GitHttpServer(base / "srv") as git, SlackStub() as stub:
            names = [u.path.name[:-4] for u in upstreams]
            engine = Engine.open(Settings.from_env({"GAD_DATA_DIR": str(data)}))
            started = time.perf_counter()
            for name in names:
                engine.track(git.url(f"acme/{name}.git"), name)
            engine.index.close()
            tracked = time.perf_counter() - started
            rows.append((f"setup: {args.repos} repositories tracked over http-backend, one after the other",
                         f"{tracked:.1f} s ({tracked / args.repos:.2f} s a repository)"))
            print(f"tracked in {tracked:.1f} s", flush=True)
            copies = base / "copies"
            for upstream, name in zip(upstreams, names):
                copy = copies / f"{name}.git"
                subprocess.run(["git", "clone", "-q", "--bare", git.url(f"acme/{name}.git"), str(copy)], check=True,
                               env=git_env(), capture_output=True)
            forge = f"http://127.0.0.1:{git.port}"
            with Serve(data, stub, logs=base / "logs", GAD_WEBHOOK_SECRETS=f"127.0.0.1={SECRET}") as serve:
                hook = f"{serve.url}/hooks/github"
                # -- 2. push -> report ---------------------------------------------------------------
                latencies, fetches, polls = [], [], 0
                for round_ in range(args.rounds):
                    index = (round_ * 37) % args.repos
                    upstream, name = upstreams[index], names[index]
                    before = str(upstream.tip("main"))
                    after = str(upstream.commit(name=f"Newcomer {round_}", email=f"new{round_}@acme.example",
                                                date=f"2026-11-{1 + round_ % 28:02d}"))
                    expected = 2 * oracle_gad(upstream.path)
                    body, headers = delivery("github", github_push(ForgeRepo(forge, f"acme/{name}"), before, after),
                                             SECRET)
                    sent = time.perf_counter()
                    status, _ = post(hook, body, headers)
                    if status != 202:
                        problems.append(f"round {round_}: the webhook was answered {status}")
                        continue
                    seen = 0
                    while time.perf_counter() - sent < 60:
                        polls += 1
                        seen = figure(serve, stub, f"{name} since:2000-01", f"r{round_}-{polls}")
                        if seen == expected:
                            break
                        time.sleep(0.1)
                    took = time.perf_counter() - sent
                    if seen != expected:
                        problems.append(f"round {round_}: {name} still says {seen}, git says {expected}")
                    latencies.append(took)
                    fetches.append(git_fetch_seconds(copies / f"{name}.git"))
                    print(f"round {round_}: {name} {took:.2f} s (git fetch {fetches[-1]:.2f} s)", flush=True)
                for line in serve.stderr.splitlines():
                    if "webhook github push" in line or "sync of repo" in line or "answered in" in line:
                        print("  serve:", line[:160])
                if latencies:
                    p95 = pct(latencies, 0.95)
                    rows.append((f"push -> a report counting it, p50 / p95 / max of {len(latencies)}",
                                 f"{statistics.median(latencies):.2f} s / **{p95:.2f} s** / {max(latencies):.2f} s"
                                 f" (target <= 5 s p95: {'met' if p95 <= 5 else 'NOT met'})"))
                    rows.append(("git fetch of the same push, p50 / p95",
                                 f"{statistics.median(fetches):.2f} s / {pct(fetches, 0.95):.2f} s"
                                 f" (push -> report p50 = {statistics.median(latencies) / statistics.median(fetches):.0f}x"
                                 " git fetch: a worker's sync (fetch, index) and the report poll)"))
                    if p95 > 5:
                        problems.append(f"push -> report p95 {p95:.2f} s > 5 s")
                # -- 3. acks while every repository syncs ------------------------------------------
                def ack(label: str, person: int) -> float:
                    # a person each: one person's fourth report at once would be refused (GAD_REPORTS_PER_USER)
                    status, _, seconds = serve.post(stub.slash_fields(f"{names[0]} since:2000-01", response_name=label,
                                                                      user_id=f"UBENCH{person:05d}"))
                    if status != 200:
                        problems.append(f"an ack was {status}")
                    return seconds

                idle = [ack(f"idle-{i}", i) for i in range(60)]
                for i in range(60):
                    stub.wait_for_response(f"idle-{i}", timeout=120)
                db = sqlite3.connect(data / "index.sqlite", timeout=30)
                total_before = db.execute("SELECT sum(commits) FROM repos").fetchone()[0]
                deliveries = []
                for r, (upstream, name) in enumerate(zip(upstreams, names)):
                    before = str(upstream.tip("main"))
                    after = str(upstream.commit(name="Storm", email="storm@acme.example", date="2026-12-02"))
                    deliveries.append(delivery("github", github_push(ForgeRepo(forge, f"acme/{name}"), before, after),
                                               SECRET))
                hook_answers: list[float] = []

                def send(item) -> None:
                    sent = time.perf_counter()
                    status, _ = post(hook, *item)
                    hook_answers.append(time.perf_counter() - sent)
                    if status != 202:
                        problems.append(f"a storm webhook was answered {status}")

                with Acker(ack) as acker:
                    storm = time.perf_counter()
                    with ThreadPoolExecutor(8) as senders:
                        list(senders.map(send, deliveries))
                    synced_all = None
                    while time.perf_counter() - storm < 600:
                        if db.execute("SELECT sum(commits) FROM repos").fetchone()[0] >= total_before + args.repos:
                            synced_all = time.perf_counter() - storm
                            break
                        time.sleep(0.1)
                busy = acker.seconds
                db.close()
                fetch_all = sum(git_fetch_seconds(copies / f"{name}.git") for name in names)
                rows.append((f"acks on the idle server, p50 / p95 / max of {len(idle)}",
                             f"{ms(statistics.median(idle))} / {ms(pct(idle, 0.95))} / {ms(max(idle))}"))
                busy_p95 = pct(busy, 0.95)
                rows.append((f"acks while {args.repos} webhook syncs run, p50 / p95 / max of {len(busy)}",
                             f"{ms(statistics.median(busy))} / **{ms(busy_p95)}** / {ms(max(busy))}"
                             f" (target <= 300 ms p95: {'met' if busy_p95 <= 0.3 else 'NOT met'})"))
                rows.append((f"{args.repos} webhooks answered (8 senders), p50 / p95",
                             f"{ms(statistics.median(hook_answers))} / {ms(pct(hook_answers, 0.95))}"))
                if synced_all is None:
                    problems.append("the storm's commits were not all indexed within 600 s")
                else:
                    rows.append((f"first webhook -> all {args.repos} pushes indexed",
                                 f"{synced_all:.1f} s (git fetching them one after the other: {fetch_all:.1f} s,"
                                 f" {synced_all / fetch_all:.1f}x)"))
                if busy_p95 > 0.3:
                    problems.append(f"acks p95 {busy_p95 * 1000:.0f} ms > 300 ms during the storm")
                code = serve.stop()
                if code != 0:
                    problems.append(f"serve exited {code}")
                if "Traceback" in serve.stderr:
                    problems.append("a traceback in serve's log")
    rows.append(("load average of the machine at the end (other work on it too)", f"{os.getloadavg()[0]:.1f}"))
    options = f" --repos {args.repos} --commits {args.commits} --rounds {args.rounds}"
    return report(rows, problems, args, "bench:webhook", options)


if __name__ == "__main__":
    sys.exit(main())
