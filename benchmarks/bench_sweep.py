"""Benchmark: the sweep of mirror leftovers (issue 21, part 3), against git in the same run.

    .venv/bin/python benchmarks/bench_sweep.py [--mirrors 200] [--runs 7] [--no-doc]

`serve` sweeps at its start and, in a sync worker, before every periodic sync (MirrorStore.sweep):
it lists the mirrors folder, globs each mirror's objects for temporary files and its refs for lock
files, reads every pack's .keep, and compares the directories with the paths the index names. This
measures that on --mirrors bare mirrors of a 300-commit history (half of them with their objects
loose, as between two `git gc --auto`), none of them orphaned so nothing is removed and every run
does the same work. Beside it, in the same interleaved rounds, git's own look at each mirror's
garbage: `git count-objects -v` in every mirror (one process each, as an operator's loop would).
The figures go between the `bench:sweep` markers of docs/benchmarks.md (unless --no-doc).
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
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))

from bench_engine import fmt_s, machine, write_doc  # noqa: E402


def build(base: Path, mirrors: int) -> list[Path]:
    """`mirrors` bare clones of one 300-commit history under base/mirrors; the odd ones unpacked (loose objects)."""
    from tests.gitbuild import RepoBuilder, git_env

    upstream = RepoBuilder(base / "upstream.git", bare=True)
    for n in range(300):
        upstream.commit(email=f"p{n % 7}@example.com", date=f"2024-{1 + n % 12:02d}-{1 + n % 28:02d}",
                        files={f"src/f{n % 40}.c": f"int v{n};\n"})
    paths = []
    for n in range(mirrors):
        path = base / "mirrors" / f"repo{n:04d}.git"
        subprocess.run(["git", "clone", "-q", "--mirror", "--no-local", str(upstream.path), str(path)], env=git_env(),
                       check=True)
        if n % 2:
            (pack,) = (path / "objects" / "pack").glob("pack-*.pack")
            aside = base / "aside.pack"
            pack.rename(aside)
            pack.with_suffix(".idx").unlink()
            with open(aside, "rb") as data:
                subprocess.run(["git", "unpack-objects", "-q"], cwd=path, stdin=data, env=git_env(), check=True)
            aside.unlink()
        paths.append(path)
    return paths


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mirrors", type=int, default=200)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--no-doc", action="store_true")
    args = parser.parse_args()

    from bot.store.mirrors.clones import MirrorStore
    from bot.store.mirrors.remote import FetchLimits
    from tests.gitbuild import git_env

    with tempfile.TemporaryDirectory(prefix="bench-sweep-") as tmp:
        base = Path(tmp)
        paths = build(base, args.mirrors)
        loose = sum(1 for p in paths for _ in (p / "objects").glob("[0-9a-f][0-9a-f]/*"))
        store = MirrorStore(base / "mirrors", FetchLimits({}), locks=base / "locks")
        env = git_env()
        sweep_times, git_times = [], []
        for _ in range(args.runs):
            started = time.perf_counter()
            removed = store.sweep(named=lambda: paths)
            sweep_times.append(time.perf_counter() - started)
            assert removed == [], removed
            started = time.perf_counter()
            for path in paths:
                subprocess.run(["git", "count-objects", "-v"], cwd=path, env=env, check=True, capture_output=True)
            git_times.append(time.perf_counter() - started)
        load = open("/proc/loadavg").read().split()[0]
    sweep, git = statistics.median(sweep_times), statistics.median(git_times)
    info = machine()
    section = (
        "### The sweep of mirror leftovers (orphans, temporary files, stale locks, dead .keep)\n\n"
        f"`benchmarks/bench_sweep.py`: {args.mirrors} bare mirrors of a 300-commit history, half with their "
        f"objects loose ({loose:,} loose objects in all), nothing to remove; {info['nproc']} cores ({info.get('cpu', '?')}), "
        f"{info['date']}, load average {load} shared with other work; medians of {args.runs} interleaved rounds.\n\n"
        f"    .venv/bin/python benchmarks/bench_sweep.py --mirrors {args.mirrors}\n\n"
        "| run | wall (median) | ratio to git |\n|---|---|---|\n"
        f"| `MirrorStore.sweep` (a sync worker of serve, before each periodic sync) | {fmt_s(sweep)} | {sweep / git:.2f}x |\n"
        f"| git: `git count-objects -v` in each mirror | {fmt_s(git)} | 1.00x |\n")
    print(section)
    if not args.no_doc:
        write_doc(section, "sweep")


if __name__ == "__main__":
    main()
