"""Benchmark: weekly digests for 1,000 channel subscriptions over 200 repositories.

    .venv/bin/python benchmarks/bench_digest.py [--repos 200] [--subscriptions 1000] [--workers 16]

Setup (not timed): 200 small bare repositories written with one `git fast-import` each (16 weeks of
history, ~60 commits by a few of 400 authors), tracked in place and indexed; 1,000 subscriptions,
each to 1-6 of them (Mondays 09:00 in one of a few time zones, some with people:on); the loopback
Slack stub (tests/slackstub.py).

Timed: `run_due_digests` at an instant when every digest is due, exactly as `gad-bot digest` runs
it: ledger checks, the "synced recently?" check, 1,000 digests built (per-repository reports shared
through the run's cache, one union report pair per channel), a 12-week chart PNG drawn and uploaded
with files_upload_v2 for each, claim -> post -> mark in the ledger, with posting paced per channel
at Slack's 1 message/second/channel (channels in parallel batches of --workers). Also timed, for
reference: the same digests built without posting (dry run), and a second run (everything already
delivered: must post nothing).
"""

from __future__ import annotations

import argparse
import random
import subprocess
import sys
import tempfile
import time
from datetime import date, datetime, time as dtime, timedelta, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from slack_sdk import WebClient  # noqa: E402

from bot.digests import subscriptions as subs  # noqa: E402
from bot.config import Settings  # noqa: E402
from bot.digests.digest import ChannelPacer, Ledger, run_due_digests  # noqa: E402
from bot.engine.engine import Engine  # noqa: E402
from bot.engine.query import Subscribe  # noqa: E402
from tests.slackstub import SlackStub  # noqa: E402

UTC = timezone.utc
WEEK = date(2026, 9, 28)  # the digest week (Monday); every subscription's digest for it is due by DUE
DUE = datetime(2026, 10, 5, 12, 0, tzinfo=UTC)
ZONES = ("UTC", "Europe/London", "Europe/Berlin", "America/New_York", "Asia/Tokyo")
AUTHORS = 400


def git_env() -> dict:
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL="/dev/null", HOME="/nonexistent", LC_ALL="C")
    return env


def write_repo(path: Path, rng: random.Random, commits: int) -> None:
    """A bare repository with `commits` commits on main over the 16 weeks up to WEEK's Sunday."""
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(path)], check=True, env=git_env())
    people = rng.sample(range(AUTHORS), rng.randint(2, 8))
    end = datetime.combine(WEEK + timedelta(days=7), dtime(0, 0), tzinfo=UTC).timestamp()
    start = end - 16 * 7 * 86400
    stamps = sorted(rng.uniform(start, end) for _ in range(commits))
    lines = []
    for i, stamp in enumerate(stamps):
        who = rng.choice(people)
        data = f"change {i}\n".encode()
        message = f"commit {i}\n".encode()
        lines.append(b"blob\nmark :%d\ndata %d\n%s\n" % (2 * i + 1, len(data), data))
        lines.append(b"commit refs/heads/main\nmark :%d\n" % (2 * i + 2))
        sig = b"Dev %d <dev%d@example.com> %d +0000\n" % (who, who, int(stamp))
        lines.append(b"author " + sig + b"committer " + sig)
        lines.append(b"data %d\n%s" % (len(message), message))
        if i:
            lines.append(b"from :%d\n" % (2 * i))
        lines.append(b"M 100644 :%d file%d.txt\n\n" % (2 * i + 1, i % 5))
    subprocess.run(["git", "fast-import", "--quiet"], input=b"".join(lines), cwd=path, check=True, env=git_env())


def setup(work: Path, repos: int, subscriptions: int, seed: int) -> Engine:
    rng = random.Random(seed)
    upstream = work / "repos"
    upstream.mkdir(parents=True)
    started = time.perf_counter()
    for i in range(repos):
        write_repo(upstream / f"repo{i:03d}.git", rng, rng.randint(20, 100))
    print(f"setup: wrote {repos} repositories in {time.perf_counter() - started:.1f} s", flush=True)
    engine = Engine(Settings.from_env({"GAD_DATA_DIR": str(work / "data")}))
    started = time.perf_counter()
    for i in range(repos):
        engine.track(str(upstream / f"repo{i:03d}.git"), f"repo{i:03d}", in_place=True)
    print(f"setup: indexed {repos} repositories in {time.perf_counter() - started:.1f} s", flush=True)
    names = [f"repo{i:03d}" for i in range(repos)]
    created = datetime(2026, 9, 1, tzinfo=UTC)
    for c in range(subscriptions):
        chosen = tuple(rng.sample(names, rng.randint(1, 6)))
        subs.subscribe(engine, f"C{c:05d}", Subscribe(chosen, day="mon", at=dtime(rng.choice((6, 7, 8)), 0),
                                                      tz=rng.choice(ZONES), people=rng.random() < 0.2), now=created)
    return engine


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repos", type=int, default=200)
    parser.add_argument("--subscriptions", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=16)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-digest-") as tmp:
        engine = setup(Path(tmp), args.repos, args.subscriptions, args.seed)
        with SlackStub() as stub:
            factory = lambda: WebClient(base_url=stub.api_url, token=stub.good_token, retry_handlers=[])  # noqa: E731

            started = time.perf_counter()
            dry = run_due_digests(engine, factory, at=DUE, dry_run=True, workers=args.workers)
            dry_seconds = time.perf_counter() - started
            assert len(dry) == args.subscriptions and {r.state for r in dry} == {"dry_run"}, {r.state for r in dry}

            pacer = ChannelPacer(1.0)  # Slack: 1 message per second per channel
            started = time.perf_counter()
            results = run_due_digests(engine, factory, at=DUE, workers=args.workers, pacer=pacer)
            seconds = time.perf_counter() - started
            states: dict[str, int] = {}
            for r in results:
                states[r.state] = states.get(r.state, 0) + 1
            posted = [c for c in stub.calls_to("chat.postMessage") if c.ok]
            uploads = len(stub.uploaded_files())

            started = time.perf_counter()
            again = run_due_digests(engine, factory, at=DUE + timedelta(minutes=5), workers=args.workers, pacer=pacer)
            again_seconds = time.perf_counter() - started
            ledger = Ledger(engine.index).rows()

    print(f"digests: {args.subscriptions} subscriptions over {args.repos} repositories, {args.workers} workers")
    print(f"  build only (dry run):           {dry_seconds:6.2f} s")
    print(f"  build + chart + upload + post:  {seconds:6.2f} s  (target < 30 s)  states={states}")
    print(f"  messages posted: {len(posted)}, charts uploaded: {uploads}, ledger rows: {len(ledger)}")
    print(f"  second run (nothing owed):      {again_seconds:6.2f} s, posted {len(again)}")
    assert len(posted) == args.subscriptions == states.get("posted"), "every channel exactly once"
    assert again == []


if __name__ == "__main__":
    main()
