"""A CLI call pays only for what its command needs (issue 30): `gad-bot help` loads neither numpy nor rich,
and `gad-bot report NAME` none of the libraries of the other commands (serve's, tracking's, charts').

Timings are benchmarks/bench_cli.py's (docs/benchmarks.md); here, the modules each command left loaded in
a real process, which does not change with the machine's load.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.gitbuild import RepoBuilder, git_env

ROOT = Path(__file__).resolve().parent.parent

# Runs the console script's main() as `gad-bot ARGS...`, then prints the top-level modules it loaded.
PROBE = """
import sys
from bot.faces.cli import main
sys.argv = ["gad-bot", *sys.argv[1:]]
try:
    main()
except SystemExit:
    pass
print("\\nMODULES " + __import__("json").dumps(sorted({name.split(".")[0] for name in sys.modules})))
threads = next(line.split()[1] for line in open("/proc/self/status") if line.startswith("Threads:"))
print("THREADS " + threads + " " + __import__("os").environ.get("OPENBLAS_NUM_THREADS", "-"))
"""

HEAVY = ("numpy", "scipy", "rich", "matplotlib", "pygit2", "slack_bolt", "slack_sdk", "waitress", "sqlite_utils",
         "apscheduler", "dateutil", "cachetools", "prometheus_client", "publicsuffixlist", "platformdirs")


def loaded(*args: str, data: Path) -> set[str]:
    env = {**git_env(), "GAD_DATA_DIR": str(data), "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", PROBE, *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=60)
    assert "MODULES " in done.stdout, done.stderr
    return set(json.loads(done.stdout.rsplit("MODULES ", 1)[1].split("\n", 1)[0]))


def threads_after(*args: str, data: Path, **env: str) -> tuple[int, str]:
    """(the process's threads once the command is done, its OPENBLAS_NUM_THREADS)."""
    done = subprocess.run([sys.executable, "-c", PROBE, *args], cwd=ROOT, capture_output=True, text=True, timeout=60,
                          env={**git_env(), "GAD_DATA_DIR": str(data), "PYTHONPATH": str(ROOT), **env})
    assert "THREADS " in done.stdout, done.stderr
    threads, setting = done.stdout.rsplit("THREADS ", 1)[1].split()
    return int(threads), setting


@pytest.fixture(scope="module")
def tracked(tmp_path_factory) -> Path:
    """A data directory where a small repository `web` (with a tag) is tracked."""
    base = tmp_path_factory.mktemp("startup")
    repo = RepoBuilder(base / "web")
    repo.commit(email="ann@example.com", date="2024-01-02")
    repo.tag("v1.0", repo.commit(email="bob@example.com", date="2024-01-03"))
    data = base / "data"
    from tests.test_cli import run

    assert run("track", str(repo.path), "--name", "web", data=data).returncode == 0
    return data


def test_help_loads_neither_numpy_nor_rich(tracked):
    """help with a tracked repository (its examples read the index and the tags) and with none."""
    for data in (tracked, tracked.parent / "empty"):
        heavy = loaded("help", data=data) & set(HEAVY)
        assert heavy == set(), f"`gad-bot help` loaded {sorted(heavy)}"


def test_report_loads_only_what_a_report_needs(tracked):
    """The text report needs numpy (the columns) and rich (the table), perhaps dateutil (a trend's months) and
    cachetools (the engine's caches); nothing of serve, tracking or charts."""
    modules = loaded("report", "web", data=tracked)
    assert {"numpy", "rich"} <= modules  # the probe sees a real report's imports, not an early exit
    heavy = modules & (set(HEAVY) - {"numpy", "rich", "dateutil", "cachetools"})
    assert heavy == set(), f"`gad-bot report web` loaded {sorted(heavy)}"


# A process whose __main__ is gad-bot's console script (`from bot.faces.cli import main`, then a call) starts a pool
# of one real report worker, has it answer `web`, and prints what the worker's process had loaded by then.
SERVE_LIKE = """
import sys
from bot.faces.cli import main
if __name__ == "__main__":
    import threading
    from datetime import date
    from bot.config import Settings
    from bot.engine.audiences import OPERATOR
    from bot.engine.query import parse_query
    from bot.service.workers import ReportJob, ReportPool
    from tests.workerprobe import report_then_modules

    today = date(2026, 12, 6)
    pool = ReportPool(Settings.from_env({"GAD_DATA_DIR": sys.argv[1]}), workers=1, runner=report_then_modules)
    pool.start()
    answers, done = [], threading.Event()
    pool.submit(ReportJob(parse_query(["web"], today), "web", "ann", today, viewer=OPERATOR),
                lambda answer: (answers.append(answer), done.set()))
    done.wait(60)
    pool.shutdown()
    print("ANSWER " + answers[0].text)
"""


def test_a_report_worker_loads_neither_slack_nor_scheduling_nor_the_cli(tracked, tmp_path):
    """A report worker answers from the index and renders Slack's blocks as plain data: it needs neither Bolt nor
    the Web API client (serve's process posts), nor the scheduler or the HTTP server, nor rich or charts; and the
    CLI that started serve is not run again in it (bot/forkserved.py: click and bot.faces.cli, ~20 ms a worker)."""
    script = tmp_path / "gad-bot"  # a file, as the console script is: multiprocessing would run it again by path
    script.write_text(SERVE_LIKE)
    env = {**git_env(), "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, str(script), str(tracked)], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120)
    assert "ANSWER " in done.stdout, done.stderr
    said = json.loads(done.stdout.rsplit("ANSWER ", 1)[1])
    # a real report, not an early error: ann and bob, one day each, doubled
    assert not said["failed"] and "2GAD 4 person-days" in said["text"], said["text"]
    modules = set(said["modules"])
    assert {"numpy", "bot.engine.engine", "bot.render.blocks"} <= modules
    tops = {name.split(".")[0] for name in modules}
    heavy = tops & {"slack_bolt", "slack_sdk", "apscheduler", "waitress", "rich", "matplotlib", "click"}
    assert heavy == set(), f"a report worker loaded {sorted(heavy)}"
    faces = sorted(name for name in modules if name.startswith(("bot.faces", "bot.digests")))
    assert faces == [], f"a report worker loaded {faces}"


# A script (a file as __main__, as the console script is, which says each time it is imported) that starts an index
# pool of one worker on an empty data directory, prints the worker's pid and what it had loaded, then waits to be
# killed.
ASKER = """
import sys
with open(sys.argv[2], "a") as said:
    said.write("imported\\n")
if __name__ == "__main__":
    import json, time
    from bot.config import Settings
    from bot.engine.engine import Engine
    from bot.engine.lanes import IndexPool

    engine = Engine.open(Settings.from_env({"GAD_DATA_DIR": sys.argv[1]}))
    pool = IndexPool(engine, 1).__enter__()
    modules = pool._pool().submit(__import__("tests.workerprobe").workerprobe.modules_and_pid).result(60)
    print("WORKER " + json.dumps(modules), flush=True)
    time.sleep(600)
"""


def test_a_worker_is_a_ready_fork_that_runs_no_main_and_ends_with_the_process_that_asked(tmp_path):
    """Workers are forked from gad-bot's fork server (bot/spawning.py): the engine is loaded before any job (the
    fork server preloaded it), the asker's main module is not run again in them, and `kill -9` of the asker alone
    (not its group) ends them: their parent is the fork server, so nothing but `end_with` would tell them."""
    import signal

    script, said = tmp_path / "gad-bot", tmp_path / "imports"
    script.write_text(ASKER)
    env = {**git_env(), "PYTHONPATH": str(ROOT)}
    asker = subprocess.Popen([sys.executable, str(script), str(tmp_path / "data"), str(said)], cwd=ROOT, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = asker.stdout.readline()
        assert line.startswith("WORKER "), asker.stderr.read() if asker.poll() is not None else line
        worker = json.loads(line.split(" ", 1)[1])
        assert {"bot.engine.engine", "bot.store.mirrors.fetchchild"} <= set(worker["modules"])
        assert not any(name.startswith(("click", "bot.faces", "slack")) for name in worker["modules"])
        assert said.read_text() == "imported\n", "the asker's main module ran again in its worker"
        os.kill(asker.pid, signal.SIGKILL)
        asker.wait(10)
        assert _ends(worker["pid"], within=15), "an index worker outlived `kill -9` of the process that asked"
    finally:
        asker.kill()
        asker.wait()


@pytest.mark.parametrize("refused", [False, True], ids=["asked", "refused"])
def test_a_worker_asks_the_server_it_was_forked_from_for_its_own_children(refused):
    """A sync worker's fetch is forked by the same fork server as the worker (bot/spawning.py), not by a second
    server started in the worker (~0.4 s of CPU and tens of MB each). Should that server refuse the worker, the
    worker still gets its child, from a server of its own."""
    from concurrent.futures import ProcessPoolExecutor

    from bot.spawning import worker_context
    from tests.workerprobe import a_child_asked_here

    with ProcessPoolExecutor(1, mp_context=worker_context()) as pool:
        said = pool.submit(a_child_asked_here, refused).result(60)
    if not refused:
        assert said["child_parent"] == said["worker_parent"], said
    else:  # forked by a server the worker started
        assert said["child_grandparent"] == said["worker"], said


def _ends(pid: int, within: float) -> bool:
    """Whether process `pid` ends (or is a zombie) within `within` seconds; killed if not."""
    import signal
    import time

    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1][:1]
        except FileNotFoundError:
            return True
        if state == "Z":
            return True
        time.sleep(0.05)
    os.kill(pid, signal.SIGKILL)
    return False


def test_a_report_starts_no_blas_threads_unless_the_operator_asks(tracked):
    """OpenBLAS starts a thread per CPU when numpy loads, and they spin: ~55 ms of CPU a process (~110 with scipy)
    for matrix work gad-bot never does. A report runs on its one thread; an operator's own setting is kept."""
    assert threads_after("report", "web", data=tracked) == (1, "1")
    threads, setting = threads_after("report", "web", data=tracked, OPENBLAS_NUM_THREADS="2")
    assert setting == "2" and (threads == 2 or len(os.sched_getaffinity(0)) == 1)  # the operator's word: a second thread


def test_a_client_that_hangs_up_before_asking_does_not_end_the_fork_server():
    """A sync worker killed between connecting to serve's fork server and asking (its time bound, serve's shutdown)
    leaves the server serving (bot/forkserved.py): the next child comes from the same server."""
    import socket
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import forkserver

    from bot.spawning import worker_context
    from tests.workerprobe import pid_and_parent

    with ProcessPoolExecutor(1, mp_context=worker_context()) as pool:
        _, server = pool.submit(pid_and_parent).result(60)
    for _ in range(3):
        with socket.socket(socket.AF_UNIX) as hung_up:
            hung_up.connect(forkserver._forkserver._forkserver_address)
    with ProcessPoolExecutor(1, mp_context=worker_context()) as pool:
        _, parent = pool.submit(pid_and_parent).result(60)
    assert parent == server
    assert os.waitpid(server, os.WNOHANG) == (0, 0), "the fork server ended"


ASKS_THEN_GOES = """
import os
from multiprocessing import forkserver
from bot.spawning import worker_context

worker_context()
forkserver.ensure_running()
said, data = forkserver.connect_to_new_process([])  # asked for a child ...
os.close(data)  # ... and gone before saying what it should run
pid = forkserver.read_signed(said)
print("child", pid, "ended", forkserver.read_signed(said), flush=True)
"""


def test_a_child_whose_asker_went_before_saying_what_to_run_ends_quietly():
    """A sync worker stopped by serve's shutdown just after asking serve's fork server for a fetch: the child the
    server forked finds nothing to run and ends without a traceback in serve's log (bot/forkserved.py)."""
    done = subprocess.run([sys.executable, "-c", ASKS_THEN_GOES], cwd=ROOT, env={**git_env(), "PYTHONPATH": str(ROOT)},
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("child ") and done.stdout.split()[-1] == "1", done.stdout
    assert done.stderr == "", done.stderr
