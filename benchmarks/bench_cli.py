"""The CLI's start-up: `gad-bot help` and `gad-bot report NAME` as whole processes, beside `git log`.

    .venv/bin/python benchmarks/bench_cli.py                 # 21 runs of each, interleaved
    .venv/bin/python benchmarks/bench_cli.py --runs 51 --no-cache --json /tmp/bench-cli.json
    git worktree add /tmp/before OLD && .venv/bin/python benchmarks/bench_cli.py --before /tmp/before

Every figure is a whole process started as a person starts it (the console script `gad-bot` beside
this Python), measured from here: its CPU time (user + system, `resource.getrusage(RUSAGE_CHILDREN)`
before and after, so the children it waited for count too) and its wall time. The commands take turns
(help, report, git log, python, help, ...), so a burst of load elsewhere on the machine falls on all
of them alike; the load average is printed before and after, since a shared machine's figures are
only comparable at the same load.

The repository is small (300 commits by 6 people over 2024, a branch and two tags), tracked in place
in a fresh data directory before the first run. `git log` answers the same question in the same run:
`git log --branches --tags --use-mailmap --format=%aE %ad --date=short`, whose distinct (e-mail, day)
pairs, doubled, must equal the 2GAD the report prints (git's counting of the pairs, done here, is not
timed: git's part is the walk). `python -c pass` is the floor any Python command pays.

Bytecode: an installed gad-bot runs from cached bytecode (pip compiles on install; an editable install
writes `__pycache__` on its first run): the main table has it so (a cache under the benchmark's own
directory, written by the warm-up run). Where PYTHONDONTWRITEBYTECODE is set on an editable install
that never wrote one, every run compiles gad-bot's own modules again; `--no-cache` measures that too.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.gitbuild import RepoBuilder, git_env  # noqa: E402

TARGETS = {"gad-bot help": ("cpu", 0.15), "gad-bot report small": ("wall", 0.30)}  # issue 30 part 3, seconds


def build_small(path: Path) -> RepoBuilder:
    """300 commits by 6 people on 150 days of 2024 (two a day, one of them late in the author's own zone),
    a branch off main and two tags: a small team's first months."""
    repo = RepoBuilder(path)
    people = [(f"Dev {i}", f"dev{i}@example.com", (-480, -300, 0, 60, 330, 540)[i]) for i in range(6)]
    for n in range(300):
        name, email, offset = people[(n * 7) % 6]
        day = 1 + (n // 2) % 150
        month, mday = 1 + (day - 1) // 28, 1 + (day - 1) % 28
        branch = "dev" if n % 10 == 9 else "main"
        repo.commit(branch, name=name, email=email, offset=offset,
                    parents=[repo.tip(f"refs/heads/{branch}") or repo.tip("refs/heads/main")] if n else [],
                    date=f"2024-{month:02d}-{mday:02d}T{(9 + 7 * (n % 2)):02d}:00",
                    files={f"src/f{n % 20}.py": f"v{n}\n".encode()})
        if n in (99, 199):
            repo.tag(f"v0.{n // 100 + 1}", repo.tip("refs/heads/main"))
    return repo


GIT_LOG = ["-c", "mailmap.blob=HEAD:.mailmap", "log", "--branches", "--tags", "--use-mailmap", "--format=%aE %ad",
           "--date=short"]


def git_two_gad(path: Path, env: dict[str, str]) -> int:
    out = subprocess.run(["git", "-C", str(path), *GIT_LOG], check=True, capture_output=True, text=True,
                         env=env).stdout
    return 2 * len({line.lower() for line in out.splitlines() if "[bot]" not in line.lower()})


def run_once(argv: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """(CPU seconds, wall seconds, stdout) of one whole process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr.strip()}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall, done.stdout


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def measure(commands: dict[str, list[str]], env: dict[str, str], runs: int,
            envs: dict[str, dict[str, str]] | None = None) -> dict[str, dict]:
    samples: dict[str, dict[str, list[float]]] = {name: {"cpu": [], "wall": []} for name in commands}
    for _ in range(runs):
        for name, argv in commands.items():  # in turns: load elsewhere falls on every command alike
            cpu, wall, _ = run_once(argv, {**env, **(envs or {}).get(name, {})})
            samples[name]["cpu"].append(cpu)
            samples[name]["wall"].append(wall)
    return {name: {kind: {"median": statistics.median(v), "p95": p95(v), "min": min(v)} for kind, v in s.items()}
            for name, s in samples.items()}


def table(title: str, figures: dict[str, dict], reference: str) -> str:
    ref_cpu, ref_wall = figures[reference]["cpu"]["median"], figures[reference]["wall"]["median"]
    lines = [title, f"{'command':<30} {'CPU median':>10} {'CPU p95':>8} {'wall median':>11} {'wall p95':>8} "
                    f"{'x git (CPU)':>11} {'x git (wall)':>12}  target"]
    for name, f in figures.items():
        kind, limit = TARGETS.get(name, (None, None))  # (the "before" rows are only compared)
        verdict = (f"{kind} <= {limit:.2f} s: " + ("met" if f[kind]["median"] <= limit else "NOT met")) if kind else ""
        lines.append(f"{name:<30} {f['cpu']['median']:>9.3f}s {f['cpu']['p95']:>7.3f}s {f['wall']['median']:>10.3f}s "
                     f"{f['wall']['p95']:>7.3f}s {f['cpu']['median'] / ref_cpu:>10.1f}x "
                     f"{f['wall']['median'] / ref_wall:>11.1f}x  {verdict}")
    return "\n".join(lines)


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=21, help="runs of each command (default 21)")
    parser.add_argument("--no-cache", action="store_true", help="also measure with PYTHONDONTWRITEBYTECODE=1")
    parser.add_argument("--json", type=Path, help="write the figures to this file too")
    parser.add_argument("--before", type=Path, metavar="TREE", help="also time the gad-bot of another checkout "
                        "(e.g. a `git worktree` of an older commit), in the same turns, through PYTHONPATH")
    args = parser.parse_args()

    script = Path(sys.executable).with_name("gad-bot")
    gad = [str(script)] if script.exists() else [sys.executable, "-m", "bot.faces.cli"]
    work = Path(tempfile.mkdtemp(prefix="bench-cli-"))
    try:
        small = build_small(work / "small").path
        base = {k: v for k, v in git_env().items() if not k.startswith(("GAD_", "SLACK_"))
                and k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX")}
        base.update(GAD_DATA_DIR=str(work / "data"))
        cached = {**base, "PYTHONPYCACHEPREFIX": str(work / "pycache")}  # written by the warm-up, read after it
        subprocess.run([*gad, "track", str(small), "--name", "small", "--in-place"], env=cached, check=True,
                       capture_output=True)
        commands = {"gad-bot help": [*gad, "help"], "gad-bot report small": [*gad, "report", "small"],
                    "git log (same question)": ["git", "-C", str(small), *GIT_LOG],
                    "python -c pass": [sys.executable, "-c", "pass"]}
        envs: dict[str, dict[str, str]] = {}
        if args.before:  # its own data directory: an older gad-bot refuses an index of a newer schema
            before = {"PYTHONPATH": str(args.before.resolve()), "GAD_DATA_DIR": str(work / "data-before")}
            subprocess.run([*gad, "track", str(small), "--name", "small", "--in-place"], env={**cached, **before},
                           check=True, capture_output=True)
            for name in ("gad-bot help", "gad-bot report small"):
                commands[f"{name} (before)"] = commands[name]
                envs[f"{name} (before)"] = before
        expected = git_two_gad(small, cached)
        shown = run_once(commands["gad-bot report small"], cached)[2]
        said = re.search(r"2GAD\s+([\d,]+) person-days", shown)
        if not said or int(said.group(1).replace(",", "")) != expected:
            raise SystemExit(f"the report does not say git's 2GAD {expected}:\n{shown}")
        for name, argv in commands.items():
            run_once(argv, {**cached, **envs.get(name, {})})  # warm: bytecode written, files in the page cache

        print(f"{platform.python_implementation()} {platform.python_version()}, {platform.machine()}, "
              f"{len(os.sched_getaffinity(0))} cores; {args.runs} runs of each, in turns; 2GAD {expected} "
              f"(git and gad-bot agree)")
        print(f"load average before: {load()}")
        results = {"cached": measure(commands, cached, args.runs, envs)}
        print(table("bytecode cached (an installed gad-bot):", results["cached"], "git log (same question)"))
        if args.no_cache:
            nocache = {**base, "PYTHONDONTWRITEBYTECODE": "1"}
            ours = "has" if (ROOT / "bot" / "__pycache__").exists() else "has no"
            results["no cache"] = measure(commands, nocache, args.runs, envs)
            print(table(f"PYTHONDONTWRITEBYTECODE=1 (the libraries' bytecode as installed; this checkout {ours} "
                        f"bot/__pycache__):", results["no cache"], "git log (same question)"))
        print(f"load average after: {load()}")
        if args.json:
            args.json.write_text(json.dumps({"runs": args.runs, "two_gad": expected, "load_after": load(),
                                             "results": results}, indent=2))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
