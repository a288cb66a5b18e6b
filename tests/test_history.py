"""Parsing git's output in bulk gives what one commit at a time gives (bot/store/history.py)."""

from __future__ import annotations

import binascii
import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from bot.store import history
from bot.errors import MirrorError
from tests.faults import children
from tests.gitbuild import RepoBuilder

ZONES = st.one_of(st.sampled_from([b"+0000", b"-0000", b"+0100", b"-0500", b"+0530", b"+0545", b"-0930", b"+1400",
                                   b"-1400", b"+1401", b"-1430", b"+9900", b"+0160", b"+0099"]),
                  st.integers(-99999, 99999).map(lambda z: b"%+05d" % z))
SECONDS = st.one_of(st.integers(-10, 5_000_000_000), st.sampled_from([0, 1, 86399, 86400, 4102444799, 4102444800]))
DATES = st.one_of(st.tuples(SECONDS, ZONES).map(lambda t: b"%d %s" % t), st.sampled_from([b"", b"abc", b"12"]))


@settings(max_examples=300, deadline=None)
@given(st.lists(DATES, min_size=1, max_size=40))
def test_days_in_bulk_equal_days_one_at_a_time(dates):
    expected = [history.author_day(d, {}) for d in dates]
    assert history._days(dates, {}).tolist() == expected


def test_a_known_day_in_the_authors_own_zone():
    # 2024-01-02 00:30 in Tokyo is 2024-01-01 15:30 UTC: the author's day is the 2nd (epoch day 19724)
    assert history._days([b"1704123000 +0900", b"1704123000 +0000"], {}).tolist() == [19724, 19723]


def head(oid: int, parents: list[int]) -> bytes:
    return b" ".join([b"%040x" % oid, *(b"%040x" % p for p in parents)]) if parents else b"%040x " % oid


@given(st.lists(st.lists(st.integers(1, 2**160 - 1), max_size=4), min_size=1, max_size=30))
def test_ids_and_parents_split_in_bulk(parent_lists):
    heads = [head(i + 1, parents) for i, parents in enumerate(parent_lists)]
    oids, counts, parents = history._split_heads(heads)
    assert oids == b"".join(binascii.unhexlify(b"%040x" % (i + 1)) for i in range(len(heads)))
    assert list(counts) == [len(p) for p in parent_lists]
    assert parents == b"".join(binascii.unhexlify(b"%040x" % p) for ps in parent_lists for p in ps)


def test_an_octopus_of_more_than_255_parents_keeps_its_first_255():
    heads = [head(1, list(range(10, 310))), head(2, [1])]
    oids, counts, parents = history._split_heads(heads)
    assert list(counts) == [255, 1]
    ids = np.frombuffer(parents, np.uint8).reshape(-1, 20)
    assert len(ids) == 256 and bytes(ids[-1]) == binascii.unhexlify(b"%040x" % 1)


# -- git's output read through a file as git writes it (history._GrowingFile) ----------------------------


def _children_of_this_process() -> set[int]:
    return set(children(os.getpid()))


def _open_fds() -> int:
    return len(os.listdir(f"/proc/{os.getpid()}/fd"))


@pytest.fixture
def long_history(tmp_path):
    b = RepoBuilder(tmp_path / "up", bare=True)
    for i in range(300):
        b.commit(name=f"P{i % 5}", email=f"p{i % 5}@example.com", date=f"2024-{1 + i % 12:02d}-{1 + i % 28:02d}",
                 offset=(i % 3) * 60)
    side = b.commit("side", parents=[b.tip("main")], name="Side", email="side@example.com", date="2024-03-03")
    b.merge("main", side, date="2024-03-04")
    return b


def test_every_commit_once_in_gits_order_across_chunks(long_history):
    tips = [str(long_history.tip("main")), str(long_history.tip("side"))]
    chunks = list(history.read_commits(long_history.path, tips, chunk_size=64))
    got = b"".join(c.oids for c in chunks)
    expected = long_history.git("log", "--format=%H", "main", "side").split()
    assert [got[i:i + 20].hex() for i in range(0, len(got), 20)] == expected
    assert [len(c) for c in chunks] == [64, 64, 64, 64, 46]
    assert sum(c.parent_counts.count(2) for c in chunks) == 1  # the one merge


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="counts children through Linux's /proc")
def test_a_reader_that_stops_early_leaves_no_git_and_no_open_file(long_history):
    before_children, before_fds = _children_of_this_process(), _open_fds()
    walk = history.read_commits(long_history.path, [str(long_history.tip("main"))], chunk_size=10)
    assert len(next(walk)) == 10
    walk.close()  # the consumer stops: git is killed (if still walking) and reaped, its output file closed
    assert _children_of_this_process() == before_children
    assert _open_fds() == before_fds


def test_git_failing_in_the_middle_is_one_sentence(long_history):
    with pytest.raises(MirrorError, match=r"git log|damaged"):
        list(history.read_commits(long_history.path, ["0" * 39 + "1"], chunk_size=10))


def test_a_full_disk_is_reported_in_gits_words_not_as_a_cut_off_record(long_history, monkeypatch):
    # git writes its output into a temporary file; when the disk is full, git stops mid-record and
    # exits non-zero: the sentence must say why (the disk), not that a record was cut off.
    if not Path("/dev/full").exists():
        pytest.skip("needs /dev/full")

    class FullDisk(history._GrowingFile):
        """git's stdout is /dev/full (every write fails: no space); gad-bot reads the 30 bytes of a
        record git wrote before the disk filled."""

        def __init__(self, scratch_dir=None):
            self.file, self.child, self.given = open("/dev/full", "r+b"), None, False

        def read(self, size=1 << 20):
            self.child.wait()
            if self.given:
                return b""
            self.given = True
            return b"f" * 30

    monkeypatch.setattr(history, "_GrowingFile", FullDisk)
    with pytest.raises(MirrorError, match=r"^The disk is full \(.*No space left on device\); free space .* "
                                          r"run the sync again") as caught:
        list(history.read_commits(long_history.path, [str(long_history.tip("main"))], chunk_size=10))
    assert "middle of a commit" not in str(caught.value)
