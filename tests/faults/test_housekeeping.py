"""Mirrors are garbage-collected (issue 21, part 3): every fetch adds a pack, and after 67 syncs a
mirror had 67. Each sync now lets git do its own housekeeping when git says it is due (`git gc
--auto`), in the process that synced (a sync worker of serve, or the CLI), under the repository's lock.

git's threshold is gc.autoPackLimit (50 packs): set to 3 in the mirror here (an operator may set it
too), so that five fetches cross it."""

from __future__ import annotations

import json
import subprocess

from tests.faults import GitDaemon, run_cli, track_here
from tests.gitbuild import RepoBuilder, git_env


def packs(mirror) -> int:
    return len(list((mirror / "objects" / "pack").glob("*.pack")))


def test_syncs_leave_git_to_repack_and_prune_the_mirror(tmp_path):
    upstream = RepoBuilder(tmp_path / "srv" / "web.git", bare=True)
    upstream.commit(email="ann@example.com", date="2024-01-01")
    data = tmp_path / "data"
    with GitDaemon(tmp_path / "srv") as daemon:
        track_here(daemon.url("web.git"), "web", data)
        (mirror,) = (data / "mirrors").glob("*.git")
        subprocess.run(["git", "config", "gc.autoPackLimit", "3"], cwd=mirror, env=git_env(), check=True)
        seen = []
        for day in range(2, 7):
            upstream.commit(email="bob@example.com", date=f"2024-01-0{day}")
            synced = run_cli("sync", "web", data=data)
            assert synced.returncode == 0, synced.stdout + synced.stderr
            seen.append(packs(mirror))
    assert max(seen) <= 4 and seen[-1] <= 4, seen  # without housekeeping: 1 + 5, one more per fetch
    assert min(seen) == 1, seen  # repacked into one at least once
    fsck = subprocess.run(["git", "fsck", "--connectivity-only"], cwd=mirror, env=git_env(), capture_output=True)
    assert fsck.returncode == 0, fsck.stderr
    report = json.loads(run_cli("report", "web", "--json", data=data).stdout)
    assert report["commits"] == 6 and report["active_days"] == 6, report
