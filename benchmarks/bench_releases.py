"""Benchmark of `by:release` (issue 19 part 2) against git itself, on a synthetic history with ~500 tags.

    python benchmarks/bench_releases.py [--commits 100000] [--seed 1] [--repo PATH] [--write]

The synthetic history (benchmarks/synth.py) has ~500 tags: `vN.0` on main, `vN.M-rcK` release candidates
(folded into the release that follows), and `release-N.K` tags on yearly release branches that receive
back-ports for two years, so releases are out of version order in time. With --repo, a real repository.

Measured in one run, on the same machine and load:
- gad-bot: `REPO by:release` answered in-process by an Engine on a real index, after a plain report has
  loaded the repository's columns (what a serving process holds): the first question (the ranges are
  searched) and the same question again (answered from the bounded cache), median of 5;
- the same ranges searched naively (two full reachability searches per row), to show what the stopping
  search saves;
- git: METRIC.md's pipeline (bench_engine.pipeline) run for every row's `PREVIOUS..THIS`, summed; each
  row's active days must equal gad-bot's (any mismatch is printed and fails the run).
With --write the section between `<!-- bench:releases:COMMITS -->` markers in docs/benchmarks.md is replaced.
"""

from __future__ import annotations

import argparse
import re
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
import bench_engine  # noqa: E402  (ensure_repo, pipeline, base_env, machine)

from bot.config import Settings  # noqa: E402
from bot.engine.engine import Engine  # noqa: E402
from bot.engine.query import parse_command  # noqa: E402
from bot.store import store  # noqa: E402

SAFE_TAG = re.compile(r"^[\w.\-+]+$")  # names passed to the shell pipeline (a real repository's tags are not trusted)


def timed(fn, runs: int = 1) -> tuple[float, object]:
    """Median seconds of `runs` calls, and the last result."""
    times, result = [], None
    for _ in range(runs):
        started = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times), result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--commits", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--repo", type=Path, help="a real repository instead of a synthetic one")
    parser.add_argument("--tokens", default="", help="more report tokens, e.g. prereleases:on")
    parser.add_argument("--write", action="store_true", help="update docs/benchmarks.md")
    args = parser.parse_args(argv)
    repo = args.repo.resolve() if args.repo else bench_engine.ensure_repo(args.commits, args.seed)[0]
    home = tempfile.TemporaryDirectory(prefix="home-", dir=bench_engine.WORK)
    genv = bench_engine.base_env(Path(home.name))
    today = date(2026, 1, 1)
    with tempfile.TemporaryDirectory(dir=bench_engine.WORK) as data:
        engine = Engine.open(Settings.from_env({"GAD_DATA_DIR": data}))
        track_s, _ = timed(lambda: engine.track(str(repo), "bench", paths=False))
        engine.report(parse_command("bench", today).query, today)  # the columns, as a serving process holds them
        query = parse_command(f"bench by:release {args.tokens}", today).query
        first_s, report = timed(lambda: engine.report(query, today))
        again_s, _ = timed(lambda: engine.report(query, today), runs=5)
        columns = engine.columns_of(engine.repo("bench"))
        offsets, parents, lookup = engine.snapshots.graph(columns)
        tips = {r.release.tag: None for r in report.rows}  # a series row is keyed "2.1 (v2.1.3)": its tag names it
        for r in report.rows:
            if r.release.previous:
                tips[r.release.previous] = None
        rows_of = {}
        for name in tips:
            rows_of[name] = engine.resolve_ref(engine.repo("bench"), columns, name)

        def naive() -> int:
            total = 0
            for r in report.rows:
                reach = store.reachable(offsets, parents, [rows_of[r.release.tag]])
                if r.release.previous:
                    reach &= ~store.reachable(offsets, parents, [rows_of[r.release.previous]])
                total += int(reach.sum())
            return total

        naive_s, _ = timed(naive)
    git_s, mismatches, counted = 0.0, [], 0
    for r in report.rows:
        span = r.release.range.lstrip(".") if r.release.previous is None else r.release.range
        if not all(SAFE_TAG.match(t) for t in span.split("..")):
            continue
        cmd = bench_engine.pipeline(repo, scope=span)
        started = time.perf_counter()
        out = subprocess.run(cmd, shell=True, capture_output=True, text=True, env=genv, check=True).stdout
        git_s += time.perf_counter() - started
        counted += 1
        if int(out.strip()) != r.totals.active_days:
            mismatches.append(f"{span}: git {out.strip()}, gad-bot {r.totals.active_days}")
    tags = len(subprocess.run(["git", "-C", str(repo), "tag"], capture_output=True, text=True, env=genv).stdout.split())
    label = repo.name if args.repo else str(args.commits)  # one section per history, so both sizes stay
    if args.tokens:  # and per set of tokens (`releases:series` beside the plain rows)
        label += ":" + re.sub(r"[^\w.:-]+", "-", args.tokens.strip())
    START, END = f"<!-- bench:releases:{label} -->", f"<!-- /bench:releases:{label} -->"
    lines = [
        START,
        f"### by:release ({'`' + repo.name + '`' if args.repo else f'synthetic, {args.commits:,} commits, seed {args.seed}'}, "
        f"{tags} tags)",
        "",
        f"`python benchmarks/bench_releases.py{' --repo ' + str(args.repo) if args.repo else f' --commits {args.commits}'}"
        f"{' --tokens ' + repr(args.tokens) if args.tokens else ''}`, on {date.today().isoformat()}; "
        f"{len(report.rows)} rows shown, {report.more_rows} older releases left out; load average "
        f"{open('/proc/loadavg').read().split()[0] if Path('/proc/loadavg').exists() else '?'}.",
        "",
        "| what | time | vs git |",
        "|---|---|---|",
        f"| gad-bot `by:release`, first question (ranges searched) | {first_s * 1000:,.0f} ms | "
        f"{first_s / git_s:.3f}x |",
        f"| gad-bot `by:release` again (bounded cache), median of 5 | {again_s * 1000:,.0f} ms | {again_s / git_s:.3f}x |",
        f"| the same ranges by two full searches per row (not used) | {naive_s * 1000:,.0f} ms | {naive_s / git_s:.3f}x |",
        f"| git: METRIC.md's pipeline for each row's `PREVIOUS..THIS` ({counted} runs) | {git_s * 1000:,.0f} ms | 1x |",
        "",
        (f"Typical {'series' if report.typical.series else 'release'} (median of {report.typical.releases}): 2GAD "
         f"{report.typical.two_gad.median:,.0f} person-days (P25-P75 {report.typical.two_gad.p25:,.0f}-"
         f"{report.typical.two_gad.p75:,.0f})." if report.typical else "No typical release (one row)."),
        "",
        f"Every row's active days equal git's ({counted} rows checked)." if not mismatches else
        "**Mismatches:** " + "; ".join(mismatches),
        f"(Indexing the repository first took {track_s:.1f} s; not part of the figures.)",
        END,
    ]
    home.cleanup()
    bench_engine.publish(lines, START, END, args.write)
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
