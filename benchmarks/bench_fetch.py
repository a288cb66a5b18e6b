"""One small fetch as a sync pays it: `Mirror.fetch` (its fetch child) beside `git fetch`, in the same rounds.

    .venv/bin/python benchmarks/bench_fetch.py [--rounds 15] [--code DIR]

A bare repository of 300 commits behind `git http-backend` on loopback (tests/faults GitHttpServer),
a gad-bot mirror of it and a `git clone --mirror` of it. Each round writes one commit upstream, then
times `Mirror.fetch` of the mirror and `git fetch` of the clone (the order alternating), then both again
with nothing new. `--code DIR` imports the `bot` package of another checkout (to compare two versions
on the same machine minutes apart). Prints medians and p95s, and their ratios to git.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--code", default=str(HERE.parent), help="the checkout whose bot package is measured")
    args = parser.parse_args()
    sys.path.insert(0, args.code)
    try:  # before bench_webhook puts this checkout first
        from bot.store.mirrors.clones import MirrorStore
        from bot.store.mirrors.mirror import Mirror
        from bot.store.mirrors.remote import FetchLimits
    except ImportError:  # a checkout from before the mirrors' split (issue 30), to compare with
        from bot.store.mirrors import FetchLimits, Mirror, MirrorStore

    from bench_webhook import build
    from tests.faults import GitHttpServer, git_env

    times: dict[str, list[float]] = {"gad-bot, one new commit": [], "git, one new commit": [],
                                     "gad-bot, nothing new": [], "git, nothing new": []}
    with tempfile.TemporaryDirectory(prefix="bench-fetch-") as tmp:
        base = Path(tmp)
        (upstream,) = build(base, 1, 300)
        with GitHttpServer(base / "srv") as server:
            url = server.url("acme/r0000.git")
            store = MirrorStore(base / "mirrors", FetchLimits({}, timeout_seconds=60))
            mirror = Mirror(store.create(url, "r0000"))
            copy = base / "copy.git"
            subprocess.run(["git", "clone", "-q", "--mirror", url, str(copy)], check=True, env=git_env(),
                           capture_output=True)

            def gad() -> float:
                started = time.perf_counter()
                mirror.fetch(store.limits)
                return time.perf_counter() - started

            def git() -> float:
                started = time.perf_counter()
                subprocess.run(["git", "fetch", "-q", "--prune", "origin"], cwd=copy, check=True, env=git_env(),
                               capture_output=True)
                return time.perf_counter() - started

            for round_ in range(args.rounds):
                upstream.commit(email=f"p{round_}@acme.example", date=f"2026-01-{round_ % 28 + 1:02d}T10:00")
                pair = [("gad-bot", gad), ("git", git)]
                for who, run in pair if round_ % 2 else pair[::-1]:
                    times[f"{who}, one new commit"].append(run())
                for who, run in pair if round_ % 2 else pair[::-1]:
                    times[f"{who}, nothing new"].append(run())
    print(f"{args.rounds} rounds, bot from {Path(sys.modules['bot'].__file__).parents[1]}")
    for what, values in times.items():
        ordered = sorted(values)
        p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
        print(f"{what:28s} median {1000 * statistics.median(values):6.0f} ms  p95 {1000 * p95:6.0f} ms")
    for case in ("one new commit", "nothing new"):
        ratio = statistics.median(times[f"gad-bot, {case}"]) / statistics.median(times[f"git, {case}"])
        print(f"{case}: gad-bot / git (medians) = {ratio:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
