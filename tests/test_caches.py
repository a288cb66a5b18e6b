"""Issue 22: what members ask cannot grow a process's caches without bound.

Every cache the engine keys by what a member typed (the commits a `range:` or `branch:` reaches,
those a `path:` touched, people's e-mails) keeps within its byte budget, least recently used out
first, and a refused question caches nothing. Memory is counted with tracemalloc (numpy reports
its buffers to it), so the tests measure what stays allocated, whatever holds it; no timing.
"""

from __future__ import annotations

import gc
import subprocess
import tracemalloc
from datetime import date

import pytest

from bot.config import Settings
from bot.engine import query as q
from bot.engine.caches import ENTRY_OVERHEAD, BoundedCache
from bot.engine.engine import Engine
from bot.errors import QueryError
from tests.gitbuild import git_env

COMMITS = 6_000
MIB = 1024 * 1024
TODAY = date(2026, 12, 4)


def _history(path, commits: int) -> list[str]:
    """A bare repository of `commits` commits in a line, written by git fast-import: commit i by
    dev{i}@example.com on day i (from 2001-01-01); commit i changes src/f{i % 8}.c. Returns their ids."""
    subprocess.run(["git", "init", "-q", "--bare", "--initial-branch=main", str(path)], check=True, env=git_env())
    out = []
    for i in range(commits):
        ident = b"Dev %d <dev%d@example.com> %d +0000" % (i, i, 978_350_400 + 86_400 * i)
        data = b"%d\n" % i
        out.append(b"commit refs/heads/main\nmark :%d\nauthor %s\ncommitter %s\ndata 2\nc\n" % (i + 1, ident, ident))
        if i:
            out.append(b"from :%d\n" % i)
        out.append(b"M 100644 inline src/f%d.c\ndata %d\n%s\n\n" % (i % 8, len(data), data))
    marks = path / "marks"
    subprocess.run(["git", "fast-import", "--quiet", f"--export-marks={marks}"], input=b"".join(out), cwd=path,
                   check=True, env=git_env(), capture_output=True)
    oids = dict(line.split() for line in marks.read_text().splitlines())
    return [oids[f":{i + 1}"] for i in range(commits)]


@pytest.fixture(scope="module")
def long_history(tmp_path_factory):
    root = tmp_path_factory.mktemp("caches")
    oids = _history(root / "long.git", COMMITS)
    data = root / "data"
    engine = Engine.open(Settings.from_env({"GAD_DATA_DIR": str(data)}))
    engine.track(str(root / "long.git"), "long", in_place=True)
    engine.index.close()
    return data, oids


def _engine(data) -> Engine:
    return Engine.open(Settings.from_env({"GAD_DATA_DIR": str(data), "GAD_QUERY_CACHE_MB": "1"}))


def _ask(engine: Engine, text: str):
    return engine.report(q.parse_command(text, TODAY).query, TODAY)


def _retained(engine: Engine, texts: list[str], refused: bool = False) -> int:
    """Bytes still allocated after asking each of `texts` once (after one warm-up question)."""
    def ask(text: str) -> None:
        try:
            _ask(engine, text)
        except QueryError:
            assert refused, text
        else:
            assert not refused, text

    ask(texts[0])
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for text in texts[1:]:
            ask(text)
        gc.collect()
        return tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()


def test_distinct_ranges_stay_within_the_budget(long_history):
    """1,600 distinct `range:..SHA` took a worker from 94 to ~400 MiB; here each would keep 12 KB without a bound."""
    data, oids = long_history
    engine = _engine(data)
    texts = [f"long range:..{oid[:12]}" for oid in oids[1000:1400]]
    grew = _retained(engine, texts)
    # unbounded: 399 x (6,000 reachable flags + 6,000 range flags) = 4.8 MB at least (7.2 MB measured before the fix)
    assert grew < 1.5 * MIB, f"{grew:,} bytes kept for 400 distinct ranges with a 1 MiB budget"
    assert engine.snapshots.masks.bytes <= engine.snapshots.masks.budget == MIB - MIB // 8
    assert 0 < len(engine.snapshots.masks) < 2 * 399  # the oldest went: fewer than the two masks per range asked
    # what is kept is still right: commit 1,399 reaches itself and the 1,399 before it, one a day by one person each
    assert _ask(engine, f"long range:..{oids[1399]}").totals.person_days == 1400


def test_a_refused_question_caches_nothing(long_history):
    """1,000 refused `path:nosuchN` added 110 MiB: the failing prefix was cached before it was refused."""
    data, _ = long_history
    engine = _engine(data)
    _ask(engine, "long path:src/f1.c")  # a question answered: its mask is kept
    texts = [f"long path:src/nosuch{i}" for i in range(300)]
    grew = _retained(engine, texts, refused=True)
    # before the fix: 300 x 6,000 flags = 1.8 MB kept (1,902,816 bytes measured), plus the suggestions' masks
    assert grew < 200 * 1024, f"{grew:,} bytes kept after 300 refused questions"
    kept = len(engine.snapshots.masks)
    assert [key[3:] for key in engine.snapshots.masks._lru if key[2] == "paths"] == [(("src/f1.c",), ())]
    with pytest.raises(QueryError, match="did you mean `path:src/f1.c`"):  # the suggestion still works
        _ask(engine, "long path:src/f1.x")
    assert len(engine.snapshots.masks) == kept
    # a compare whose second item is refused keeps nothing of its first either
    with pytest.raises(QueryError):
        engine.compare(q.parse_command("compare long:src/f2.c long:src/nosuch", TODAY), TODAY)
    assert len(engine.snapshots.masks) == kept


def test_peoples_emails_stay_within_their_budget_and_stay_right(long_history):
    data, _ = long_history
    engine = _engine(data)
    rows = _ask(engine, "long by:person").rows
    # by hand: 6,000 people, one commit (one day) each
    assert len(rows) == COMMITS and {r.key for r in rows} == {f"dev{i}@example.com" for i in range(COMMITS)}
    assert engine.snapshots.people.bytes <= engine.snapshots.people.budget == MIB // 8
    assert len(engine.snapshots.people) < COMMITS  # 6,000 x (256 + ~20 bytes) do not fit in 128 KiB
    assert {r.key for r in _ask(engine, "long by:person").rows} == {f"dev{i}@example.com" for i in range(COMMITS)}


def test_the_least_recently_used_go_first_by_bytes():
    import numpy as np

    cache = BoundedCache("test", 3 * (ENTRY_OVERHEAD + 1_000 + 40))
    for name in "abc":
        cache.put(("k", name), np.zeros(1_000, bool))
    assert cache.get(("k", "a")) is not None  # a is now the most recently used
    cache.put(("k", "d"), np.zeros(1_000, bool))
    assert cache.get(("k", "b")) is None and cache.get(("k", "a")) is not None and len(cache) == 3
    cache.put(("k", "huge"), np.zeros(10_000, bool))  # larger than the whole budget: not kept, nothing evicted
    assert cache.get(("k", "huge")) is None and len(cache) == 3
    with pytest.raises(KeyError):
        with cache.staged():
            cache.put(("k", "e"), np.zeros(10, bool))
            assert cache.get(("k", "e")) is not None  # seen inside the question being answered
            raise KeyError("refused")
    assert cache.get(("k", "e")) is None


def test_a_process_never_takes_a_repository_tracked_elsewhere_for_the_one_untracked(tmp_path):
    """serve's engine keeps a repository's columns (and what it derives from them) under its id and generation.
    SQLite gave the id of the last repository deleted to the next one inserted, so `gad-bot untrack web` and
    `gad-bot track OTHER --name web` from the CLI made a row of the same id and, indexed alike, the same
    generation: serve went on answering with the untracked history. Ids are never given twice."""
    from tests.gitbuild import RepoBuilder

    first = RepoBuilder(tmp_path / "first")
    first.commit(name="Ann", email="ann@example.com", date="2026-11-24")
    first.commit(name="Bob", email="bob@example.com", date="2026-11-24")
    other = RepoBuilder(tmp_path / "other")
    other.commit(name="Cy", email="cy@example.com", date="2026-11-25")
    settings = Settings.from_env({"GAD_DATA_DIR": str(tmp_path / "data")})
    serve, cli = Engine.open(settings), Engine.open(settings)
    week = q.Query(repos=("web",), since=date(2026, 11, 23), until=date(2026, 11, 29))
    cli.track(str(first.path), "web")
    assert serve.report(week, TODAY).totals.person_days == 2  # Ann and Bob on the 24th
    old_id = cli.repo("web").id
    cli.untrack("web")
    cli.track(str(other.path), "web")
    assert cli.repo("web").id != old_id
    assert serve.report(week, TODAY).totals.person_days == 1  # Cy on the 25th, as git log says


def test_a_person_new_since_their_block_of_emails_was_read_is_named(tmp_path):
    """People's e-mails are cached in blocks of consecutive ids: one who appears after a sync, with an id inside a
    block read before, is named by their address (not `person N`)."""
    from tests.gitbuild import RepoBuilder

    builder = RepoBuilder(tmp_path / "web")
    builder.commit(name="Ann", email="ann@example.com", date="2024-01-02")
    engine = _engine(tmp_path / "data")
    engine.track(str(builder.path), "web")
    assert [r.key for r in _ask(engine, "web by:person").rows] == ["ann@example.com"]
    builder.commit(name="Bob", email="bob@example.com", date="2024-01-03")
    engine.sync(["web"])
    assert sorted(r.key for r in _ask(engine, "web by:person").rows) == ["ann@example.com", "bob@example.com"]
