"""A full disk during the sync of a local-path source (issue 21, part 3), on a real 3 MiB tmpfs.

Found first: the copy of a 4 MB object ran out of space, `sync` crashed with an internal error,
recorded neither the error nor a back-off, and left the truncated object in the mirror; after
space was freed every sync said "The mirror is damaged" until it was re-cloned by hand.
Now: one sentence naming the full disk, recorded with back-off; the mirror as it was; and the
first sync once there is room brings the new commit in.

The data directory lives on a tmpfs mounted in a private mount namespace (`unshare`), so the
whole story runs in one shell inside it; each step prints a marker the test reads.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys

import pytest

from tests.faults import ROOT
from tests.gitbuild import RepoBuilder, git_env

STORY = r"""
set -u
mount -t tmpfs -o size=3m tmpfs "$MNT"
gad() { "$PY" -m bot.faces.cli "$@"; }
step() { echo "@@ $1"; }
step track; gad track "$UP" --name up; echo "rc=$?"
step fill; head -c 4000000 /dev/urandom > "$UP/blob.bin" && git -C "$UP" add blob.bin && git -C "$UP" -c user.name=ann -c user.email=ann@example.com commit -q -m big || echo "commit failed"
step full-sync; gad sync up; echo "rc=$?"
step repos; gad repos --json
step leftovers; find "$MNT/data/mirrors" -name 'tmp_*' -o -name '*.lock'
step fsck; git -C "$MNT"/data/mirrors/*.git fsck --connectivity-only 2>&1; echo "rc=$?"
mount -o remount,size=40m "$MNT"
step room-sync; gad sync up; echo "rc=$?"
step report; gad report up --json
"""


def story(tmp_path, upstream) -> dict[str, str]:
    if not shutil.which("unshare"):
        pytest.skip("`unshare` is not installed")
    mount = tmp_path / "mnt"
    mount.mkdir()
    probe = subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "sh", "-c",
                            f"mount -t tmpfs -o size=1m tmpfs {mount}"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs in a private namespace here: {probe.stderr.decode()[:200]}")
    env = {**git_env(), "MNT": str(mount), "UP": str(upstream.path), "PY": sys.executable, "PYTHONPATH": str(ROOT),
           "GAD_DATA_DIR": str(mount / "data"), "PATH": "/usr/local/bin:/usr/bin:/bin",
           "GIT_AUTHOR_DATE": "2024-01-03T12:00:00+00:00", "GIT_COMMITTER_DATE": "2024-01-03T12:00:00+00:00"}
    done = subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", STORY], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    steps = dict(re.findall(r"^@@ (\S+)\n(.*?)(?=^@@ |\Z)", done.stdout, flags=re.S | re.M))
    steps["stderr"] = done.stderr
    return steps


def test_a_full_disk_during_a_local_sync_is_one_sentence_with_backoff_and_heals(tmp_path):
    upstream = RepoBuilder(tmp_path / "up")
    upstream.commit(email="ann@example.com", date="2024-01-02")
    steps = story(tmp_path, upstream)
    assert steps["track"].strip().endswith("rc=0"), steps
    assert steps["fill"] == "", steps  # the upstream has its new 4 MB commit
    full = steps["full-sync"]
    assert full.strip().endswith("rc=1"), steps
    assert "internal error" not in steps["stderr"] and "Traceback" not in steps["stderr"], steps["stderr"]
    assert "is full" in full and "the mirror is kept as it was" in full and "Free space there" in full, full
    assert "damaged" not in full
    (repo,) = json.loads(steps["repos"])
    assert "is full" in repo["last_error"] and repo["next_attempt"], repo  # recorded, with back-off
    assert repo["commits"] == 1  # the index is as it was
    assert steps["leftovers"].strip() == "", steps["leftovers"]  # no temporary file left in the mirror
    assert steps["fsck"].strip().endswith("rc=0"), steps["fsck"]  # the mirror as it was: whole
    assert steps["room-sync"].strip().endswith("rc=0"), steps
    report = json.loads(steps["report"])
    assert report["commits"] == 2, report  # the new commit, once there was room: healed
