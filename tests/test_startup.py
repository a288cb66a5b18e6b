"""A CLI call pays only for what its command needs (issue 30): `gad-bot help` loads neither numpy nor rich,
and `gad-bot report NAME` none of the libraries of the other commands (serve's, tracking's, charts').

Timings are benchmarks/bench_cli.py's (docs/benchmarks.md); here, the modules each command left loaded in
a real process, which does not change with the machine's load.
"""

from __future__ import annotations

import json
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
"""

HEAVY = ("numpy", "scipy", "rich", "matplotlib", "pygit2", "slack_bolt", "slack_sdk", "waitress", "sqlite_utils",
         "apscheduler", "dateutil", "cachetools", "prometheus_client", "publicsuffixlist", "platformdirs")


def loaded(*args: str, data: Path) -> set[str]:
    env = {**git_env(), "GAD_DATA_DIR": str(data), "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", PROBE, *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=60)
    assert "MODULES " in done.stdout, done.stderr
    return set(json.loads(done.stdout.rsplit("MODULES ", 1)[1]))


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
