"""The worker processes gad-bot starts: serve's start (serve, its report and sync workers), an index pool's start,
`gad-bot sync` of one repository and a worker's first fetch, each as whole processes, beside `git log` and
`git fetch` for the same repository.

    .venv/bin/python benchmarks/bench_processes.py                       # 9 runs of each, interleaved
    git worktree add /tmp/before OLD && .venv/bin/python benchmarks/bench_processes.py --before /tmp/before

Each figure is the CPU (user + system) of a whole process tree, children and grandchildren included
(`resource.getrusage(RUSAGE_CHILDREN)` before and after; this process is a child subreaper and waits for every
orphan, so a fork server that outlives its serve by a moment counts too, with the workers it reaped),
and its wall time:

- serve: `gad-bot serve` (HTTP, a loopback Slack stand-in, 2 report workers, a sync worker per CPU) from its start
  until `/readyz` answers 200 (its workers are up, Slack answered) and --settle seconds more (what the workers do
  once serve is ready counts too: scipy's warm-up), then SIGTERM, until it has exited;
- index pool: a Python process that opens the Engine and starts `IndexPool` with 2 workers (as a periodic sync
  and `track org:` do), waits until both have run a job, and ends;
- sync: `gad-bot sync small` of a repository registered in place (indexed in an index worker);
- a worker's first fetch: a Python process starts a pool of one worker (forked from its fork server), and the
  worker fetches an up-to-date mirror of the same repository in a fetch child, as each sync worker of serve does;
  beside `git fetch` of that mirror;
- git log: the question `gad-bot report small` answers, asked of git (bench_cli.py's reference).

The commands take turns, so load elsewhere on the machine falls on all of them alike; the load average is
printed before and after. `--before TREE` times another checkout's gad-bot in the same turns (PYTHONPATH).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.bench_cli import GIT_LOG, build_small, load, p95  # noqa: E402
from tests.faults import free_port  # noqa: E402
from tests.gitbuild import git_env  # noqa: E402
from tests.slackstub import SlackStub  # noqa: E402

POOL = """
import sys, time
from bot.config import Settings
from bot.engine.engine import Engine
from bot.engine.lanes import IndexPool, _warm
engine = Engine.open(Settings.from_env({"GAD_DATA_DIR": sys.argv[1]}))
with IndexPool(engine, 2) as pool:
    pool.start()
    for future in [pool._pool().submit(_warm) for _ in range(2)]:
        future.result(120)
"""

# A worker of a one-process pool, forked from the fork server, fetches once (an up-to-date mirror): a sync worker's
# first fetch. Until 2026-12-06 the worker started a fork server of its own for its fetch children.
WORKER_FETCH = """
import sys
from concurrent.futures import ProcessPoolExecutor
from bot.spawning import worker_context
from benchmarks.workerfetch import fetch_once
with ProcessPoolExecutor(1, mp_context=worker_context()) as pool:
    pool.submit(fetch_once, sys.argv[1]).result(120)
"""


def tree_run(argv: list[str], env: dict[str, str], cwd: Path, until=None) -> tuple[float, float]:
    """(CPU, wall) of the process tree of `argv`; `until(proc)` is awaited, then SIGTERM, when given."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if until is not None:
        until(proc)
        proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    wall = time.perf_counter() - started
    reap_orphans()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({proc.returncode}): {err.strip()[-2000:]}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), wall


def become_subreaper() -> None:
    """Descendants orphaned by their parent's exit (a fork server, which outlives serve's os._exit by a moment, and
    the workers it reaped) are re-parented to this process rather than to init: `reap_orphans` waits for them, so
    their CPU counts in RUSAGE_CHILDREN too. Without it, a forked tree looks cheaper than it is."""
    import ctypes

    if ctypes.CDLL(None, use_errno=True).prctl(36, 1) != 0:  # PR_SET_CHILD_SUBREAPER
        raise SystemExit("this benchmark needs PR_SET_CHILD_SUBREAPER (Linux >= 3.4)")


def reap_orphans() -> None:
    """Wait for every descendant left (see become_subreaper)."""
    while True:
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            return


def ready(port: int, settle: float):
    def wait(proc: subprocess.Popen) -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise SystemExit(f"serve exited with {proc.returncode}: {proc.stderr.read()[-2000:]}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as response:
                    if response.status == 200:
                        time.sleep(settle)  # what the workers do once serve is ready (scipy's warm-up) counts too
                        return
            except OSError:
                pass
            time.sleep(0.02)
        raise SystemExit("serve was not ready within 60 s")
    return wait


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--settle", type=float, default=2.0, help="seconds serve runs once ready before SIGTERM "
                        "(its workers' start-up work after readiness counts too)")
    parser.add_argument("--before", type=Path, metavar="TREE", help="also time another checkout's gad-bot")
    args = parser.parse_args()

    become_subreaper()
    work = Path(tempfile.mkdtemp(prefix="bench-processes-"))
    trees = {"": ROOT, " (before)": args.before.resolve()} if args.before else {"": ROOT}
    try:
        small = build_small(work / "small").path
        mirror = work / "mirror.git"
        subprocess.run(["git", "clone", "--mirror", "-q", str(small), str(mirror)], check=True, env=git_env())
        base = {k: v for k, v in git_env().items() if not k.startswith(("GAD_", "SLACK_", "PYTHONPATH"))}
        base["OPENBLAS_NUM_THREADS"] = "1"
        with SlackStub() as stub:
            envs = {}
            for label, tree in trees.items():
                data = work / f"data{len(envs)}"
                env = {**base, "PYTHONPATH": str(tree), "GAD_DATA_DIR": str(data), "GAD_REPORT_WORKERS": "2",
                       "GAD_FIRST_SYNC_SECONDS": "3600", "SLACK_BOT_TOKEN": stub.good_token,
                       "SLACK_API_URL": stub.api_url, "SLACK_SIGNING_SECRET": "bench-secret"}
                subprocess.run([sys.executable, "-m", "bot.faces.cli", "track", str(small), "--name", "small",
                                "--in-place"], env=env, cwd=tree, check=True, capture_output=True)
                envs[label] = (tree, env)
            samples: dict[str, dict[str, list[float]]] = {}

            def add(name: str, figures: tuple[float, float]) -> None:
                entry = samples.setdefault(name, {"cpu": [], "wall": []})
                entry["cpu"].append(figures[0])
                entry["wall"].append(figures[1])

            print(f"load average before: {load()}")
            for _ in range(args.runs):
                for label, (tree, env) in envs.items():
                    port = free_port()
                    add(f"serve start and stop{label}",
                        tree_run([sys.executable, "-m", "bot.faces.cli", "serve", "--port", str(port), "--host",
                                  "127.0.0.1"], env, tree, ready(port, args.settle)))
                    add(f"index pool of 2{label}", tree_run([sys.executable, "-c", POOL, env["GAD_DATA_DIR"]], env, tree))
                    add(f"gad-bot sync small{label}",
                        tree_run([sys.executable, "-m", "bot.faces.cli", "sync", "small"], env, tree))
                for label, (tree, env) in envs.items():
                    add(f"a worker's first fetch{label}",
                        tree_run([sys.executable, "-c", WORKER_FETCH, str(mirror)],
                                 {**env, "PYTHONPATH": f"{tree}:{ROOT}"}, tree))
                add("git fetch (reference)", tree_run(["git", "-C", str(mirror), "fetch", "--prune", "-q"], base,
                                                     ROOT))
                add("git log (reference)", tree_run(["git", "-C", str(small), *GIT_LOG], base, ROOT))
            print(f"load average after: {load()}")
    finally:
        shutil.rmtree(work, ignore_errors=True)

    ref = statistics.median(samples["git log (reference)"]["cpu"])
    print(f"\n{'process tree':<34} {'CPU median':>10} {'CPU p95':>8} {'wall median':>11} {'wall p95':>8} "
          f"{'x git log (CPU)':>15}")
    for name, s in samples.items():
        print(f"{name:<34} {statistics.median(s['cpu']):>9.3f}s {p95(s['cpu']):>7.3f}s "
              f"{statistics.median(s['wall']):>10.3f}s {p95(s['wall']):>7.3f}s "
              f"{statistics.median(s['cpu']) / ref:>14.0f}x")


if __name__ == "__main__":
    os.environ.pop("PYTHONPATH", None)
    main()
