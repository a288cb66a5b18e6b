"""Reports over a project of thousands of repositories (issue 17, part 3), against git itself.

    .venv/bin/python benchmarks/bench_project.py --repos 2000 --keep /tmp/bench-project   # the issue's size
    .venv/bin/python benchmarks/bench_project.py --repos 100                              # a quick look
    .venv/bin/python benchmarks/bench_project.py --keep /tmp/bench-project --profile      # where the time goes

bench_forge.py measures a whole organization as a user meets it (listing, clones, syncs); cloning
2,000 repositories through `git http-backend` takes most of an hour on the shared machine, so this
benchmark skips the forge: it writes N bare repositories of 300 commits each through `git fast-import`
(bench_forge.py's generator: the same 300 people across them, two years of days), registers each in
place (`track --in-place`: no clone) and makes them one project, then measures, in the same run:

1. git's own time for the answer: METRIC.md's pipeline over every repository (`git log` of each, then
   one `sort -u | wc -l` over all their (e-mail, day) pairs); its figure must equal the report's;
2. the first report over the project in a fresh Engine (cold: every repository's arrays are read);
3. the p95 of --reports more reports, in-process (warm), for the plain report, `by:month`,
   `by:person`, a compare of two halves of the project, and `since:` with another month each time;
4. the RSS of this process, which holds the Engine with the project loaded, as `serve` does.

With --keep the repositories and the index are kept and reused by the next run (building 2,000
takes minutes); --profile prints cProfile's view of the warm reports instead of the table.
"""

from __future__ import annotations

import argparse
import itertools
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import date, datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.bench_forge import COMMITS, PEOPLE, build, cpus, self_peak_mib, timed  # noqa: E402
from tests.gitbuild import git_env  # noqa: E402

PROJECT = "acme"


def git_gad(paths: list[Path]) -> int:
    """METRIC.md's one-liner over every repository at once: the union of their (e-mail, day) pairs."""
    listing = "\n".join(str(p) for p in paths) + "\n"
    script = ("while IFS= read -r repo; do git -C \"$repo\" log --use-mailmap --branches --tags "
              "--format='%aN%x00%aE%x00%ad' --date=short; done "
              "| grep -av '\\[bot\\]' | cut -d '' -f2- | tr 'A-Z' 'a-z' | sort -u | wc -l")
    out = subprocess.run(["bash", "-c", script], input=listing, capture_output=True, text=True, check=True,
                         env={**git_env(), "LC_ALL": "C"})
    return int(out.stdout.strip())


def index_all(engine, paths: list[Path]) -> None:
    """Register every repository in place and index it (commits and paths), then make the project."""
    known = set(engine.index.repo_names())
    started = last = time.perf_counter()
    for n, path in enumerate(paths):
        name = f"repo-{n:04d}"
        if name not in known:
            engine.track(str(path), name, in_place=True)
        if time.perf_counter() - last > 15:
            last = time.perf_counter()
            print(f"  {n + 1:,}/{len(paths):,} indexed, {last - started:.0f} s", flush=True)
    if PROJECT not in engine.projects():
        engine.project_add(PROJECT, [f"repo-{n:04d}" for n in range(len(paths))])


def p95(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]


def rss_mib() -> float:
    return next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmRSS")) / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repos", type=int, default=2000)
    parser.add_argument("--reports", type=int, default=20)
    parser.add_argument("--commits", type=int, default=COMMITS, help="commits of each repository")
    parser.add_argument("--keep", help="work in this directory and keep it (default: a temporary one)")
    parser.add_argument("--profile", action="store_true", help="profile the warm reports (cProfile)")
    args = parser.parse_args()

    work = Path(args.keep or tempfile.mkdtemp(prefix="bench-project-"))
    work.mkdir(parents=True, exist_ok=True)
    srv = work / "srv"
    paths = [srv / f"acme/repo-{n:04d}.git" for n in range(args.repos)]
    if not all(p.exists() for p in paths):
        print(f"building {args.repos:,} repositories of {args.commits} commits ...", flush=True)
        seconds, _ = timed(lambda: build(srv, args.repos, args.commits))
        print(f"  built in {seconds:.1f} s", flush=True)

    from bot.config import Settings
    from bot.engine.engine import Engine
    from bot.engine.query import Compare, CompareItem, Query

    settings = Settings.from_env({"GAD_DATA_DIR": str(work / "data")})
    seconds, _ = timed(lambda: index_all(Engine.open(settings), paths))
    print(f"indexed (or found indexed) in {seconds:.1f} s", flush=True)

    git_seconds, expected = timed(lambda: git_gad(paths))
    print(f"git: {expected:,} person-days in {git_seconds:.2f} s", flush=True)

    engine = Engine.open(settings)  # a fresh one, as serve starts: the first report reads every repository
    plain = Query(repos=(PROJECT,))
    cold, report = timed(lambda: engine.report(plain))
    assert report.totals.person_days == expected, (report.totals.person_days, expected)
    half = [f"repo-{n:04d}" for n in range(args.repos // 2)]
    if "acme-a" not in engine.projects():
        engine.project_add("acme-a", half)
        engine.project_add("acme-b", [f"repo-{n:04d}" for n in range(args.repos // 2, args.repos)])
    months = itertools.cycle([date(2023 + n // 12, n % 12 + 1, 1) for n in range(24)])
    compare = Compare(query=Query(repos=("acme-a", "acme-b")), items=(CompareItem("acme-a"), CompareItem("acme-b")))
    cases = {
        "report over the whole project": lambda: engine.report(plain),
        "`by:month` over the whole project": lambda: engine.report(Query(repos=(PROJECT,), by="month")),
        "`by:person` over the whole project": lambda: engine.report(Query(repos=(PROJECT,), by="person")),
        "`by:repo` over the whole project": lambda: engine.report(Query(repos=(PROJECT,), by="repo")),
        "`compare` of its two halves": lambda: engine.compare(compare),
        "`since:` over the whole project, another month each time": lambda: engine.report(
            Query(repos=(PROJECT,), since=next(months))),
    }
    for ask in cases.values():
        ask()  # every path warm once
    if args.profile:
        import cProfile
        import pstats

        for what, ask in cases.items():
            profiler = cProfile.Profile()
            profiler.runcall(lambda: [ask() for _ in range(5)])
            print(f"== {what}, 5 times")
            pstats.Stats(profiler).sort_stats("cumulative").print_stats(25)
        return
    figures = {what: [timed(ask)[0] for _ in range(args.reports)] for what, ask in cases.items()}
    import pygit2

    load = os.getloadavg()
    print()
    print(f"Run on {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC: {cpus()} CPUs, Python {platform.python_version()}, "
          f"pygit2 {pygit2.__version__}, git {subprocess.run(['git', '--version'], capture_output=True, text=True).stdout.split()[-1]}; "
          f"{args.repos:,} repositories x {args.commits} commits ({args.repos * args.commits:,} commits), {PEOPLE} people; "
          f"load average {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} (1 / 5 / 15 min) at the end.")
    print()
    print("| what | time | beside it | target |")
    print("|---|---|---|---|")
    print(f"| METRIC.md's git pipeline over every repository (`git log` of each, one `sort -u`) | "
          f"{git_seconds * 1000:,.0f} ms | {expected:,} person-days | reference |")
    print(f"| first report over the project (cold: a fresh Engine) | {cold * 1000:,.0f} ms | "
          f"{cold / git_seconds:.2f}x git; person-days {report.totals.person_days:,} = git's | |")
    for what, samples in figures.items():
        worst = p95(samples)
        print(f"| {what}, p95 of {len(samples)} (in-process, warm) | {worst * 1000:,.0f} ms | "
              f"median {statistics.median(samples) * 1000:,.0f} ms; {worst / git_seconds:.3f}x git | "
              f"<= 250 ms: {'met' if worst <= 0.25 else 'not met'} |")
    print(f"| memory of the process holding the Engine, project loaded: RSS now / peak | {rss_mib():,.0f} / "
          f"{self_peak_mib():,.0f} MiB | | <= 600 MB: {'met' if self_peak_mib() * 1.048576 <= 600 else 'not met'} |")


if __name__ == "__main__":
    main()
