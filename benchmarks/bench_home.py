"""Opening the Slack Home tab with 2,000 tracked repositories, against git over the same week.

    .venv/bin/python benchmarks/bench_home.py --repos 2000 --keep /tmp/bench-home   # the brief's size
    .venv/bin/python benchmarks/bench_home.py --repos 100                           # a quick look

The repositories are bench_project.py's (bench_forge.py's generator: 300 commits each, the same 300
people, registered in place). The Home tab shows each repository's last full week in 2GAD; "today" is
fixed at TODAY so that week has commits. Measured in the same run:

1. git's own time for the same figures: `git log --since --until` of that week in every repository,
   each repository's distinct (e-mail, day) pairs doubled; the figures the view shows must equal them;
2. a cold open without serve's thread: a fresh Engine and a fresh Slack face, nothing computed before the open
   (every repository read): what the first open after `serve` started cost before the thread;
3. serve's start: a fresh Engine and face whose thread (HomeWeeks.start(), as `serve` starts it) computes every
   figure in the background: how long until all are kept, then the first open (it must compute none);
4. an open at the very instant serve's thread starts (the worst a person can meet: it waits for the thread);
5. an open as it cost before the figures were kept: warm Engine, but a fresh face (no kept figures);
6. a warm open: the same face again, nothing synced since (the figures kept per repository generation).

The Slack client is a stand-in that keeps the view; the time is `home_opened` itself.
"""

from __future__ import annotations

import argparse
import json
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.bench_forge import COMMITS, build, cpus, timed  # noqa: E402
from benchmarks.bench_project import index_all, p95  # noqa: E402
from tests.gitbuild import git_env  # noqa: E402

TODAY = date(2023, 3, 8)  # a Wednesday; the last full week is 2023-02-27 .. 2023-03-05, inside every history
MONDAY = date(2023, 2, 27)


class KeepsTheView:
    """The two Slack calls `home_opened` makes: users.info (a member, not an admin) and views.publish."""

    def __init__(self):
        self.view = None

    def users_info(self, user):
        return {"user": {"id": user, "is_admin": False}}

    def views_publish(self, user_id, view):
        self.view = view


def git_weekly(paths: list[Path]) -> tuple[float, dict[str, int]]:
    """Each repository's 2GAD for the week by git: distinct (e-mail, author day) pairs, doubled."""
    def run() -> dict[str, int]:
        figures = {}
        for n, path in enumerate(paths):
            out = subprocess.run(["git", "-C", str(path), "log", "--branches", "--tags", "--format=%ae %ad",
                                  "--date=short", f"--since={MONDAY}T00:00:00Z",
                                  f"--until={MONDAY + timedelta(days=7)}T00:00:00Z"],
                                 capture_output=True, text=True, check=True, env=git_env()).stdout
            days = {line.lower() for line in out.splitlines()
                    if MONDAY.isoformat() <= line.split()[1] <= (MONDAY + timedelta(days=6)).isoformat()}
            figures[f"repo-{n:04d}"] = 2 * len(days)
        return figures

    return timed(run)


def shown(view: dict) -> dict[str, int]:
    """The figures a member reads in the Home tab: repository -> 2GAD of the week."""
    return {name: int(figure.replace(",", "")) for name, figure in
            re.findall(r"`(repo-\d{4})` · 2GAD ([\d,]+)", json.dumps(view, ensure_ascii=False))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repos", type=int, default=2000)
    parser.add_argument("--opens", type=int, default=20, help="warm opens (and 'before' opens) measured")
    parser.add_argument("--colds", type=int, default=3, help="cold opens measured (each a fresh Engine)")
    parser.add_argument("--keep", help="work in this directory and keep it (default: a temporary one)")
    args = parser.parse_args()

    work = Path(args.keep or tempfile.mkdtemp(prefix="bench-home-"))
    work.mkdir(parents=True, exist_ok=True)
    srv = work / "srv"
    paths = [srv / f"acme/repo-{n:04d}.git" for n in range(args.repos)]
    if not all(p.exists() for p in paths):
        print(f"building {args.repos:,} repositories of {COMMITS} commits ...", flush=True)
        print(f"  built in {timed(lambda: build(srv, args.repos))[0]:.1f} s", flush=True)

    from bot.config import Settings
    from bot.engine.engine import Engine
    from bot.faces.slack import SlackFace

    settings = Settings.from_env({"GAD_DATA_DIR": str(work / "data")})
    print(f"indexed (or found indexed) in {timed(lambda: index_all(Engine.open(settings), paths))[0]:.1f} s",
          flush=True)
    git_seconds, expected = git_weekly(paths)

    def open_home(face) -> dict:
        client = KeepsTheView()
        face.home_opened({"type": "app_home_opened", "user": "U123", "tab": "home"}, client)
        return client.view

    def check(view: dict) -> None:
        figures = shown(view)
        assert len(figures) == args.repos and all(expected[name] == figure for name, figure in figures.items()), \
            "figures differ from git"

    colds = []
    for _ in range(args.colds):
        face = SlackFace(settings, Engine.open(settings), today=lambda: TODAY)
        seconds, view = timed(lambda: open_home(face))
        colds.append(seconds)
        check(view)

    warmups, firsts = [], []
    for _ in range(args.colds):
        face = SlackFace(settings, Engine.open(settings), today=lambda: TODAY)
        started = time.perf_counter()
        face.home_weeks.start()  # as serve does once it answers
        while len(face.home_weeks.kept()) < args.repos:
            assert time.perf_counter() - started < 600, "serve's thread did not keep every figure within 600 s"
            time.sleep(0.01)
        warmups.append(time.perf_counter() - started)
        report = face.engine.report
        computed = []
        face.engine.report = lambda query, today: computed.append(query) or report(query, today)
        seconds, view = timed(lambda: open_home(face))
        face.engine.report = report
        face.home_weeks.stop()
        assert not computed, f"the first open after the warm-up computed {len(computed)} figures"
        firsts.append(seconds)
        check(view)

    racing = []
    for _ in range(args.colds):
        face = SlackFace(settings, Engine.open(settings), today=lambda: TODAY)
        face.home_weeks.start()
        seconds, view = timed(lambda: open_home(face))
        face.home_weeks.stop()
        racing.append(seconds)
        check(view)

    engine = face.engine
    before = [timed(lambda: open_home(SlackFace(settings, engine, today=lambda: TODAY)))[0] for _ in range(args.opens)]
    warm = []
    for _ in range(args.opens):
        seconds, view = timed(lambda: open_home(face))
        warm.append(seconds)
    figures = shown(view)
    assert figures == {name: expected[name] for name in figures}, "warm figures differ from git"

    print()
    print(f"Run on {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC: {cpus()} CPUs, Python {platform.python_version()}, "
          f"{args.repos:,} repositories x {COMMITS} commits; week {MONDAY} .. {MONDAY + timedelta(days=6)}; "
          f"the view shows {len(figures):,} repositories' figures (2GAD {sum(figures.values()):,} in all), all equal to git's.")
    print()
    print("| what | p50 | p95 | beside git |")
    print("|---|---|---|---|")
    print(f"| git: `git log --since --until` of the week in every repository, pairs counted | "
          f"{git_seconds * 1000:,.0f} ms | (1 run) | reference |")
    for what, samples in (("cold open without serve's thread (fresh Engine and face: the old first open)", colds),
                          ("serve's thread: start to every figure kept, in the background (fresh Engine and face)",
                           warmups),
                          ("first open once serve's thread has kept them (computes none)", firsts),
                          ("open at the instant serve's thread starts (it waits for the thread)", racing),
                          ("open without kept figures (warm Engine, fresh face: the old warm open)", before),
                          ("warm open (kept figures, nothing synced)", warm)):
        print(f"| {what}, {len(samples)} runs | {statistics.median(samples) * 1000:,.1f} ms | "
              f"{p95(samples) * 1000:,.1f} ms | {statistics.median(samples) / git_seconds:.3f}x git |")


if __name__ == "__main__":
    main()
