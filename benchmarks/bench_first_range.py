"""A report worker's first `range:` question, against git (serve answers /gad in report workers).

    .venv/bin/python benchmarks/bench_first_range.py --commits 200000

`range:`, `branch:` and `by:release` search the commit graph with scipy, whose import alone takes 0.2-0.3 s.
serve computes reports in worker processes (bot/service/workers.py), started with serve and again after a
report runs over its time, so each worker's first such question is the one a person may wait for.

What it does: builds (or reuses, under benchmarks/work) bench_engine's synthetic history, indexes it into a
temporary data directory, and for --runs fresh pools of one worker, each left idle --idle seconds after it
says it is ready (as after serve's start): the time from submitting `synth range:A..B` (bench_engine's
range, about a quarter of the commits) to its answer, then the same question again. The reference is the
METRIC.md pipeline over `A..B` with git, run in the same minutes. Every answer's 2GAD must equal the
pipeline's active days doubled, or the run stops.
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import date
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from benchmarks.bench_engine import base_env, ensure_repo, pipeline, range_query  # noqa: E402

TODAY = date(2026, 12, 6)


def answer_seconds(pool, job) -> tuple[float, str]:
    """Seconds from submitting `job` to its answer, and the answer's text."""
    done = threading.Event()
    answers = []

    def deliver(answer) -> None:
        answers.append(answer)
        done.set()

    started = time.perf_counter()
    pool.submit(job, deliver)
    if not done.wait(300):
        raise SystemExit("no answer within 300 s")
    return time.perf_counter() - started, answers[0].text


def two_gad(text: str) -> int:
    found = re.search(r"2GAD ([\d,]+)", text)
    if not found:
        raise SystemExit(f"no 2GAD in the answer: {text[:300]}")
    return int(found.group(1).replace(",", ""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", type=int, default=200_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--runs", type=int, default=5, help="fresh one-worker pools measured")
    parser.add_argument("--idle", type=float, default=2.0, help="seconds each worker waits before its first job")
    args = parser.parse_args()

    from bot.config import Settings
    from bot.engine.engine import Engine
    from bot.engine.query import parse_query
    from bot.service.workers import ReportJob, ReportPool

    upstream, _ = ensure_repo(args.commits, args.seed)
    work = Path(tempfile.mkdtemp(prefix="bench-first-range-"))
    env = base_env(work)
    settings = Settings.from_env({"GAD_DATA_DIR": str(work / "data")})
    Engine.open(settings).track(str(upstream), "synth")
    tokens, opts = range_query(upstream, env)

    def git_pipeline() -> tuple[float, int]:
        started = time.perf_counter()
        out = subprocess.run(["sh", "-c", pipeline(upstream, scope=opts["scope"])], capture_output=True, text=True,
                             check=True, env=env).stdout
        return time.perf_counter() - started, int(out.strip())

    firsts, seconds, gits = [], [], []
    for _ in range(args.runs):
        git_took, days = git_pipeline()
        gits.append(git_took)
        pool = ReportPool(settings, workers=1)
        pool.start()
        try:
            time.sleep(args.idle)
            job = ReportJob(parse_query(["synth", tokens], TODAY), f"synth {tokens}", "U1", TODAY, viewer=OPERATOR)
            for times in (firsts, seconds):
                took, text = answer_seconds(pool, job)
                if two_gad(text) != 2 * days:
                    raise SystemExit(f"2GAD {two_gad(text)} differs from git's {2 * days}")
                times.append(took)
        finally:
            pool.shutdown()

    def ms(values: list[float]) -> str:
        return f"{statistics.median(values) * 1000:,.0f} ms"

    git_ms = statistics.median(gits)
    print(f"`synth {tokens}` on {args.commits:,} commits, a one-worker pool idle {args.idle:g} s before its first "
          f"job, median of {args.runs}:\n")
    print("| what | time | ratio to git |")
    print("|---|---|---|")
    print(f"| the METRIC.md pipeline over `{opts['scope']}` (git) | {ms(gits)} | 1 |")
    print(f"| the worker's first answer (submit to answer) | {ms(firsts)} | "
          f"{git_ms / statistics.median(firsts):.1f}x faster |")
    print(f"| the same question again | {ms(seconds)} | {git_ms / statistics.median(seconds):.1f}x faster |")
    print("\nEvery answer's 2GAD equals the pipeline's.")


if __name__ == "__main__":
    main()
