"""The query cache (bot/engine/caches.py) weighs what it keeps in bytes, for arrays wider than one byte too: by:release's
rows of commits (int64 row numbers) and a project's merged rows (int64 keys, persons, commits; int32 days) are
8 or 4 bytes an element, where the masks tests/test_caches.py asks about are one. Weighed by their element count, a
worker kept several times GAD_QUERY_CACHE_MB: what an operator sees as a report worker's memory growing past the
setting. Memory is counted with tracemalloc (numpy reports its buffers to it); no timing."""

from __future__ import annotations

import subprocess

import numpy as np
import pytest

from bot.config import Settings
from bot.engine import query as q
from bot.engine.caches import ENTRY_OVERHEAD, BoundedCache, size_of
from bot.engine.columns import Merged
from bot.engine.engine import Engine
from tests.gitbuild import git_env
from tests.test_caches import MIB, TODAY, _history, _retained as retained

COMMITS = 6_000
EVERY = 20  # a release tag every 20 commits: 300 of them


def test_wide_arrays_weigh_their_bytes_and_the_budget_holds_what_it_says():
    rows = np.arange(1_000, dtype=np.int64)  # 8,000 bytes
    key = ("k", 0)
    each = ENTRY_OVERHEAD + size_of(key) + 8_000
    cache = BoundedCache("test", 3 * each)
    for n in range(10):
        cache.put(("k", n), rows.copy())
    assert len(cache) == 3 and cache.bytes == 3 * each  # 8 bytes an element: three fit, not 24
    assert sum(cache.get(("k", n)).nbytes for n in (7, 8, 9)) == 24_000
    merged = Merged("p", np.zeros(100, np.int64), np.zeros(100, np.int64), np.zeros(100, np.int32),
                    np.zeros(100, np.int64), 0)
    # by hand: three int64 columns and one int32 column of 100 elements, plus the dataclass's fields
    assert size_of(merged) == 32 + 3 * 800 + 400 + size_of("p") + 32


@pytest.fixture(scope="module")
def released(tmp_path_factory):
    """6,000 commits in a line (tests/test_caches.py's history: one a day from 2001-01-01), a tag v1.K on every
    20th, tracked in place."""
    root = tmp_path_factory.mktemp("released")
    oids = _history(root / "long.git", COMMITS)
    tags = "".join(f"create refs/tags/v1.{k} {oids[k * EVERY - 1]}\n" for k in range(1, COMMITS // EVERY + 1))
    subprocess.run(["git", "update-ref", "--stdin"], input=tags.encode(), cwd=root / "long.git", check=True,
                   env=git_env())
    data = root / "data"
    engine = Engine.open(Settings.from_env({"GAD_DATA_DIR": str(data)}))
    engine.track(str(root / "long.git"), "long", in_place=True)
    engine.index.close()
    return data


def test_distinct_release_questions_stay_within_the_budget(released):
    """`long by:release until:DAY` for 200 release days: each keeps its 101 tips' rows of commits (int64, ~50 KB:
    the oldest row alone is everything its tag reaches). Unbounded, 200 x 50 KB = 10 MB; weighed by element count,
    about 8 times the budget; within a 1 MiB budget, about 1 MiB."""
    engine = Engine.open(Settings.from_env({"GAD_DATA_DIR": str(released), "GAD_QUERY_CACHE_MB": "1"}))
    day = lambda k: np.datetime64("2001-01-01") + (k * EVERY - 1)  # noqa: E731  (tag k's commit's day)
    texts = [f"long by:release until:{day(k)}" for k in range(100, COMMITS // EVERY + 1)]
    ask = lambda text: engine.report(q.parse_command(text, TODAY).query, TODAY)  # noqa: E731
    first = ask(texts[0])
    assert [row.key for row in first.rows][-1] == "v1.100" and len(first.rows) == 100
    grew = retained(engine, texts)
    assert grew < 1.5 * MIB, f"{grew:,} bytes kept for 200 distinct by:release questions with a 1 MiB budget"
    assert engine.snapshots.masks.bytes <= engine.snapshots.masks.budget
    # what is kept is still right: by hand, each release row is its 20 commits, one a day by one person each
    rows = ask(texts[-1]).rows
    assert [row.key for row in rows][-1] == "v1.300" and {row.totals.person_days for row in rows} == {EVERY}
