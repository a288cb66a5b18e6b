"""Benchmark of `vs:fte` (issue 33): a report with the full-time-equivalent model beside a plain one, and both beside git.

    python benchmarks/bench_fte.py [--commits 1000000] [--seed 1] [--repo PATH] [--runs 50] [--write]

Measured in one run, on the same machine and load:
- gad-bot in-process (an Engine on a real index, the columns loaded as a serving process holds them): `REPO` and
  `REPO vs:fte`, `--runs` of each, interleaved (plain, vs:fte, plain, ...) so that the machine's load falls on both
  alike; the first run (the model computed; later runs find it in the bounded cache, as masks are), p50 and p95
  of each, and the p95 ratio (target <= 1.5x); the same for `since:` a year;
- git: METRIC.md's pipeline (bench_engine.pipeline) for the plain figure, median of 3; gad-bot's active days must
  equal it (a mismatch fails the run).
With --write the section between `<!-- bench:fte:LABEL -->` markers in docs/benchmarks.md is replaced.
"""

from __future__ import annotations

import argparse
import math
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
import bench_engine  # noqa: E402  (ensure_repo, pipeline, base_env, WORK, DOC)

from bot.config import Settings  # noqa: E402
from bot.engine.engine import Engine  # noqa: E402
from bot.engine.query import parse_command  # noqa: E402

TARGET = 1.5


def p95(times: list[float]) -> float:
    ordered = sorted(times)
    return ordered[max(0, math.ceil(0.95 * len(ordered)) - 1)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--commits", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--repo", type=Path, help="a repository instead of a synthetic one (e.g. a synth cache)")
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--write", action="store_true", help="update docs/benchmarks.md")
    args = parser.parse_args(argv)
    repo = args.repo.resolve() if args.repo else bench_engine.ensure_repo(args.commits, args.seed)[0]
    home = tempfile.TemporaryDirectory(prefix="home-", dir=bench_engine.WORK)
    genv = bench_engine.base_env(Path(home.name))
    today = date.today()
    pairs = [("", "vs:fte"), ("since:2020 until:2020", "since:2020 until:2020 vs:fte")]
    rows, misses = [], []
    with tempfile.TemporaryDirectory(dir=bench_engine.WORK) as data:
        engine = Engine.open(Settings.from_env({"GAD_DATA_DIR": data}))
        started = time.perf_counter()
        engine.track(str(repo), "bench", paths=False)
        track_s = time.perf_counter() - started
        plain_report = engine.report(parse_command("bench", today).query, today)  # the columns, as serve holds them
        fte = engine.report(parse_command("bench vs:fte", today).query, today).fte
        first_pair = None
        for plain_tokens, fte_tokens in pairs:
            queries = [parse_command(f"bench {t}".strip(), today).query for t in (plain_tokens, fte_tokens)]
            times: list[list[float]] = [[], []]
            for _ in range(args.runs):
                for at, query in enumerate(queries):
                    t0 = time.perf_counter()
                    engine.report(query, today)
                    times[at].append(time.perf_counter() - t0)
            first_pair = first_pair or times
            ratio = p95(times[1]) / p95(times[0])
            ok = ratio <= TARGET
            if not ok:
                misses.append(f"`{fte_tokens}`: p95 {ratio:.2f}x the plain report's")
            rows.append(f"| `bench {plain_tokens}`{' ' if plain_tokens else ''}/ `bench {fte_tokens}` | "
                        f"{times[0][0] * 1000:.1f} / {times[1][0] * 1000:.1f} ms | "
                        f"{statistics.median(times[0]) * 1000:.1f} / {statistics.median(times[1]) * 1000:.1f} ms | "
                        f"{p95(times[0]) * 1000:.1f} / {p95(times[1]) * 1000:.1f} ms | {ratio:.2f}x | "
                        f"<= {TARGET}x: {'met' if ok else '**MISSED**'} |")
    git_runs = []
    for _ in range(3):
        t0 = time.perf_counter()
        out = subprocess.run(["bash", "-o", "pipefail", "-c", bench_engine.pipeline(repo)], capture_output=True,
                             text=True, env=genv, check=True).stdout
        git_runs.append(time.perf_counter() - t0)
    expected = int(out.strip())
    git_s = statistics.median(git_runs)
    if expected != plain_report.totals.active_days:
        misses.append(f"gad-bot {plain_report.totals.active_days} active days, git {expected}")
    label = repo.name if args.repo else str(args.commits)
    START, END = f"<!-- bench:fte:{label} -->", f"<!-- /bench:fte:{label} -->"
    load = open("/proc/loadavg").read().split()[0] if Path("/proc/loadavg").exists() else "?"
    lines = [
        START,
        f"### vs:fte beside the plain report ({'`' + repo.name + '`' if args.repo else f'synthetic, {args.commits:,} commits'})",
        "",
        f"`python benchmarks/bench_fte.py{' --repo ' + str(args.repo) if args.repo else f' --commits {args.commits}'}`, "
        f"on {date.today().isoformat()}; {args.runs} runs of each, interleaved, in one process; load average {load}.",
        "",
        "| plain / vs:fte | first run | p50 | p95 | p95 ratio | target |",
        "|---|---|---|---|---|---|",
        *rows,
        "",
        f"git's METRIC.md pipeline for the plain figure, in the same run: {git_s * 1000:,.0f} ms (median of 3); the "
        f"plain report in-process answers {git_s / statistics.median(first_pair[0]):,.0f}x faster (p50), the one with "
        f"`vs:fte` {git_s / statistics.median(first_pair[1]):,.0f}x. `vs:fte` here: {len(fte.halves)} half-years, "
        f"{fte.person_months:,.1f} FTE person-months beside 2GAD's {fte.two_gad_person_months:,.1f}.",
        "",
        (f"The plain figure equals git's ({expected:,} active days)." if expected == plain_report.totals.active_days
         else f"**Mismatch:** gad-bot {plain_report.totals.active_days:,} active days, git {expected:,}."),
        *(["Missed: " + "; ".join(misses)] if misses else []),
        f"(Indexing the repository first took {track_s:.1f} s, paths left out; not part of the figures.)",
        END,
    ]
    home.cleanup()
    bench_engine.publish(lines, START, END, args.write)
    return 1 if misses else 0


if __name__ == "__main__":
    sys.exit(main())
