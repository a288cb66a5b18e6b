"""The data directory and the database are readable by the service user only, whatever the umask."""

from __future__ import annotations

import os
import stat
import subprocess
import sys

import pytest

from tests.faults import ROOT, cli_env


def _mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.mark.parametrize("umask", [0o022, 0o000])
def test_data_dir_and_database_are_private(small, tmp_path, umask):
    data = tmp_path / "data"
    result = subprocess.run([sys.executable, "-m", "bot.faces.cli", "track", str(small.path), "--name", "small"], cwd=ROOT,
                            env=cli_env(data), capture_output=True, text=True, timeout=60,
                            preexec_fn=lambda: os.umask(umask))
    assert result.returncode == 0, result.stderr
    assert _mode(data) == 0o700
    for sub in ("mirrors", "locks"):
        if (data / sub).exists():
            assert _mode(data / sub) & 0o077 == 0, sub
    assert _mode(data / "index.sqlite") == 0o600

    # While a process has the index open, SQLite's -wal and -shm files exist: they must be private too.
    from bot.config import Settings
    from bot.engine.engine import Engine

    old = os.umask(umask)
    try:
        engine = Engine.open(Settings.from_env({"GAD_DATA_DIR": str(data)}))
        engine.index.set_meta("probe", "1")  # a write: the WAL file exists now
        sidecars = [data / "index.sqlite-wal", data / "index.sqlite-shm"]
        assert all(p.exists() for p in sidecars)
        assert {p.name: _mode(p) for p in sidecars} == {p.name: 0o600 for p in sidecars}
        backup = tmp_path / "backup.sqlite"
        engine.index.backup(backup)
        assert _mode(backup) == 0o600
        engine.index.close()
    finally:
        os.umask(old)
    # Nothing anywhere under the data directory is reachable by others (the directory itself is 0700).
    exposed = [p for p in data.rglob("*") if p.is_dir() and p.parent == data and _mode(p) & 0o077]
    assert exposed == []


@pytest.mark.parametrize("umask", [0o022, 0o000])
def test_every_mirror_file_and_directory_is_private(small, tmp_path, umask):
    """Mirrors of a network source (git daemon: libgit2 writes every file) and of a local one (object
    files hard-linked from the source, whose modes are the source's), then a sync: no file or
    directory under the data directory is readable or writable by others."""
    from tests.faults import GitDaemon

    data = tmp_path / "data"

    def gad(*args):
        result = subprocess.run([sys.executable, "-m", "bot.faces.cli", *args], cwd=ROOT, env=cli_env(data),
                                capture_output=True, text=True, timeout=60, preexec_fn=lambda: os.umask(umask))
        assert result.returncode == 0, result.stdout + result.stderr
        return result

    with GitDaemon(tmp_path / "srv") as daemon:
        gad("track", daemon.url("small.git"), "--name", "remote")
        gad("track", str(small.path), "--name", "local")
        small.commit(email="late@example.com", date="2024-06-01")
        gad("sync")
    linked = {p for p in data.rglob("*") if p.is_file() and os.stat(p).st_nlink > 1}
    exposed = {str(p.relative_to(data)): oct(_mode(p)) for p in data.rglob("*")
               if p not in linked and _mode(p) & 0o077}
    assert exposed == {}
    configs = sorted(data.glob("mirrors/*/config"))
    assert len(configs) == 2 and all(_mode(c) == 0o600 for c in configs)
    assert all(_mode(m) == 0o700 for m in data.glob("mirrors/*"))
    # hard links share the source's inode: they are only reachable through the 0700 directories
    assert all(p.parent.is_relative_to(data / "mirrors") for p in linked)
