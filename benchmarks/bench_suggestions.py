"""Benchmark: what an `author:` that counts nothing costs (issue 20 part 2), against git in the same run.

    .venv/bin/python benchmarks/bench_suggestions.py [--commits 100000] [--runs 7] [--no-doc]

Setup, not timed: the cached synthetic repository (bench_engine.ensure_repo), tracked in place into a
fresh data directory, one engine in this process, each question asked once to warm its caches.

Timed, median of --runs, interleaved: a plain `since:2024` report (the cached fast path); an `author:`
that matches nobody, refused with suggestions from the people active in that scope (with and without
`path:`); an `author:` whose people committed only before the period (a zero with the sentence saying
when they last did). Beside them, in the same rounds, git's side of the scope: `git log --branches
--tags --since=2024-01-01` printing each commit's e-mail and day, which the suggestions read the
equivalent of. The figures go between the `bench:suggestions` markers of docs/benchmarks.md (unless
--no-doc).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))

from bench_engine import ensure_repo, fmt_s, machine, write_doc  # noqa: E402

TODAY = date(2026, 12, 3)


def questions(engine) -> dict[str, str]:
    """The questions timed: the last two need a person who stopped before 2024 (found in the index)."""
    from bot.engine.query import parse_query

    people = {row.key: row for row in engine.report(parse_query(["synth", "by:person", "until:2023"], TODAY),
                                                    TODAY).rows}
    recent = {row.key for row in engine.report(parse_query(["synth", "by:person", "since:2024"], TODAY), TODAY).rows}
    gone = sorted(p for p in people if p not in recent)[0]
    return {"plain since:2024 report": "synth since:2024",
            "author: matching nobody, since:2024 (refused, suggestions from the scope)":
                "synth since:2024 author:zz@nowhere.example",
            "the same with path:drivers": "synth since:2024 path:drivers author:zz@nowhere.example",
            "author: of someone who stopped before 2024 (a zero with where and when)": f"synth since:2024 author:{gone}"}


def ask(engine, text: str) -> tuple[float, str]:
    from bot.engine.query import parse_query
    from bot.errors import QueryError

    started = time.perf_counter()
    try:
        report = engine.report(parse_query(text.split(), TODAY), TODAY)
        said = report.hint or f"2GAD {report.totals.two_gad}"
    except QueryError as error:
        said = str(error)
    return time.perf_counter() - started, said


def git_scope(repo: Path) -> float:
    started = time.perf_counter()
    subprocess.run(["git", "-C", str(repo), "log", "--branches", "--tags", "--since=2024-01-01", "--format=%aE %ad",
                    "--date=short"], capture_output=True, check=True)
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--commits", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--no-doc", action="store_true")
    args = ap.parse_args(argv)
    repo, _ = ensure_repo(args.commits, args.seed)
    from bot.config import Settings
    from bot.engine.engine import Engine

    with tempfile.TemporaryDirectory() as data:
        engine = Engine.open(Settings.from_env({"GAD_DATA_DIR": data}))
        engine.track(str(repo), "synth", in_place=True)
        asked = questions(engine)
        said = {label: ask(engine, text)[1] for label, text in asked.items()}  # warm
        times: dict[str, list[float]] = {label: [] for label in asked}
        git_times = []
        for _ in range(args.runs):
            git_times.append(git_scope(repo))
            for label, text in asked.items():
                times[label].append(ask(engine, text)[0])
    git = statistics.median(git_times)
    rows = [f"| {label} | {fmt_s(statistics.median(t))} | {statistics.median(t) / git:.2f}x |"
            for label, t in times.items()]
    info = machine()
    section = (f"### `author:` outside the scope: refusals and zeros that say why\n\n"
               f"`benchmarks/bench_suggestions.py`: one engine, the synthetic history of **{args.commits:,} commits** "
               f"(benchmarks/synth.py), {info['nproc']} cores ({info.get('cpu', '?')}), {info['date']}, load average "
               f"{os.getloadavg()[0]:.1f} shared with other work; medians of {args.runs} interleaved rounds.\n\n"
               "| question | wall (median) | ratio to git |\n|---|---|---|\n" + "\n".join(rows) +
               f"\n| git: `git log --branches --tags --since=2024-01-01 --format='%aE %ad'` | {fmt_s(git)} | 1.00x |\n\n"
               "What was said:\n\n" + "\n".join(f"- {label}: {text[:300]}" for label, text in said.items()) + "\n")
    print(section)
    if not args.no_doc:
        write_doc(section, "suggestions")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
