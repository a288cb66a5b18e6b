"""`gad-bot sync` after 1,000 new upstream commits, against `git fetch` of the same commits, in the same run.

    .venv/bin/python benchmarks/bench_sync.py                 # the 1,000,000-commit synthetic history
    .venv/bin/python benchmarks/bench_sync.py --commits 100000

bench_engine.py measures the same (its step 4) after an hour of everything else; this runs that step
alone, so it can be repeated on a quiet machine: the history (benchmarks/synth.py, cached under
benchmarks/work/) is tracked once, then each round appends 1,000 commits upstream (`synth.append`),
times `git fetch --prune` of them into a plain git mirror, then `gad-bot sync synth` (a whole process,
as an operator runs it), interleaved so both see the same load. gad-bot's own log (DEBUG) splits its
time into fetch, commits and changed paths. Target (issue 10, again in issue 32): <= 1 s.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench_engine as be  # noqa: E402  (the same helpers: measure, ensure_repo, base_env, GAD)
import synth  # noqa: E402

TARGET_S = 1.0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--commits", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--append", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--reuse", type=Path, metavar="RUN_DIR", help="an earlier run's directory (kept under "
                    "benchmarks/work/sync-*): its upstream, git mirror and tracked data, so no new track")
    args = ap.parse_args(argv)

    be.WORK.mkdir(parents=True, exist_ok=True)
    run_dir = args.reuse or be.WORK / f"sync-c{args.commits}-{datetime.now().strftime('%Y%m%d-%H%M%S')}"
    upstream, mirror, data = run_dir / "upstream.git", run_dir / "gitmirror.git", run_dir / "data"
    env = be.base_env(run_dir / "home")
    env["PYTHONPATH"] = str(be.ROOT)
    genv = {**env, "GAD_DATA_DIR": str(data)}
    if not args.reuse:
        cached, _ = be.ensure_repo(args.commits, args.seed)
        run_dir.mkdir()
        (run_dir / "home").mkdir()
        subprocess.run(["git", "clone", "--quiet", "--mirror", "--local", str(cached), str(upstream)], env=env, check=True)
        subprocess.run(["git", "clone", "--quiet", "--mirror", "--local", str(upstream), str(mirror)], env=env, check=True)
        started = time.perf_counter()
        track = be.measure([be.GAD, "track", str(upstream), "--name", be.NAME], env=genv, check=False)
        if track.status != 0:
            raise SystemExit(f"track failed:\n{track.stderr[-3000:]}")
        print(f"tracked {args.commits:,} commits in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    # the mirror and gad-bot start each round level with upstream (a reused run's upstream may have moved on)
    subprocess.run(["git", "-C", str(mirror), "fetch", "--quiet", "--prune", "origin"], env=env, check=True)
    be.measure([be.GAD, "sync", be.NAME], env=genv, check=False)

    fetches, syncs, phases = [], [], []
    for k in range(args.runs):
        synth.append(upstream, args.append, args.seed)
        fetches.append(be.measure(["git", "-C", str(mirror), "fetch", "--quiet", "--prune", "origin"], env=env))
        run = be.measure([be.GAD, "sync", be.NAME], env={**genv, "GAD_LOG_LEVEL": "DEBUG"}, check=False)
        if run.status != 0:
            raise SystemExit(f"sync failed:\n{run.stderr[-3000:]}")
        syncs.append(run)
        said = re.search(r"synced synth: (\d+) new commits in ([\d.]+) s, changed paths in ([\d.]+) s", run.stderr)
        phases.append((float(said[2]), float(said[3])) if said else (float("nan"), float("nan")))
        print(f"round {k + 1}: git fetch {fetches[-1].wall:.3f} s, gad-bot sync {run.wall:.3f} s "
              f"(fetch+commits {phases[-1][0]:.2f} s, paths {phases[-1][1]:.2f} s)", file=sys.stderr)
    s, f = be.median_run(syncs), be.median_run(fetches)
    info = be.machine()
    print(f"\nRun on {datetime.utcnow():%Y-%m-%d %H:%M} UTC, load average {os.getloadavg()[0]:.1f} at the end; "
          f"{info.get('cpu', '?')}; code {be.code_version()}; {args.commits:,} commits, {args.runs} rounds "
          f"of {args.append:,} new commits; median.\n")
    print("| what | time | CPU, peak RSS | ratio | target |\n|---|---|---|---|---|")
    print(f"| `git fetch --prune` of {args.append:,} new commits into a git mirror | {be.fmt_s(f.wall)} | "
          f"{be.fmt_s(f.cpu)} CPU, {be.fmt_mb(f.max_rss_kb)} | 1 | reference |")
    print(f"| `gad-bot sync` after {args.append:,} new upstream commits | {be.fmt_s(s.wall)} | "
          f"{be.fmt_s(s.cpu)} CPU, {be.fmt_mb(s.max_rss_kb)} | {s.wall / f.wall:.1f}x git fetch | "
          f"<= {TARGET_S:.0f} s: {be.verdict(s.wall <= TARGET_S)} |")
    print(f"\nEach round (git fetch / gad-bot sync, s): "
          + "; ".join(f"{a.wall:.2f} / {b.wall:.2f}" for a, b in zip(fetches, syncs))
          + f". gad-bot's own split, median: fetch and commits {statistics.median(p[0] for p in phases):.2f} s, "
            f"changed paths {statistics.median(p[1] for p in phases):.2f} s.")
    return 0 if s.wall <= TARGET_S else 1


if __name__ == "__main__":
    sys.exit(main())
