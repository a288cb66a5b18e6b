"""`vs:cocomo`: basic COCOMO arithmetic against SLOCCount's own figure, the counter, its cache, and the wiring."""

from __future__ import annotations

import math
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from bot.engine import cocomo
from bot.confine import ExportLimits
from bot.errors import GadError, QueryError
from bot.metric import Cocomo
from bot.store.mirrors.mirror import Mirror
from bot.engine.query import parse_query
from tests.conftest import TODAY
from tests.gitbuild import RepoBuilder

SLOCCOUNT = shutil.which("sloccount")
CLOC = shutil.which("cloc")
needs_sloccount = pytest.mark.skipif(SLOCCOUNT is None, reason="sloccount is not installed (apt-get install sloccount)")
needs_cloc = pytest.mark.skipif(CLOC is None, reason="cloc is not installed (apt-get install cloc)")


# -- source files with known physical SLOC ----------------------------------------
def c_source(lines: int, tag: str) -> str:
    """A C file with exactly `lines` physical source lines, plus comments and blank lines that do not count."""
    out = [f"/* {tag}: generated for a line-count test", " * (a block comment: not source lines)", " */", ""]
    for i in range(lines):
        out.append(f"int {tag}_{i} = {i};")
        if i % 10 == 9:
            out += ["", f"// comment {i}"]
    return "\n".join(out) + "\n"


def py_source(lines: int, tag: str) -> str:
    """A Python file with exactly `lines` physical source lines, plus comments and blank lines."""
    out = [f"# {tag}: generated for a line-count test", ""]
    for i in range(lines):
        out.append(f"{tag}_{i} = {i}")
        if i % 7 == 6:
            out += ["", f"# comment {i}"]
    return "\n".join(out) + "\n"


def files_of(c_lines: list[int], py_lines: list[int], prefix: str = "") -> dict[str, str]:
    files = {f"{prefix}src/mod{i}.c": c_source(n, f"c{prefix.strip('/')}{i}") for i, n in enumerate(c_lines)}
    files.update({f"{prefix}tools/script{i}.py": py_source(n, f"p{prefix.strip('/')}{i}") for i, n in enumerate(py_lines)})
    return files


def exported(builder: RepoBuilder, oid, dest: Path) -> Path:
    dest.mkdir()
    Mirror(builder.path).export_files(oid.raw, dest, ExportLimits())
    return dest


def run_sloccount(directory: Path, scratch: Path) -> str:
    data = scratch / "slocdata"
    data.mkdir()
    return subprocess.run([SLOCCOUNT, "--datadir", str(data), str(directory)], capture_output=True, text=True,
                          check=True, env={**os.environ, "HOME": str(scratch), "LC_ALL": "C"}).stdout


@pytest.fixture
def index(engine):
    cocomo.ensure_table(engine.index)  # until the lead's migration 4 makes it for every index
    return engine.index


@pytest.fixture
def fake_sloccount(tmp_path, monkeypatch):
    """A stand-in `sloccount` on an otherwise empty PATH: prints SLOCCount's lines for 12,345 SLOC, logs each run."""
    bin_dir = tmp_path / "fakebin"
    bin_dir.mkdir()
    runs = tmp_path / "runs.log"
    script = bin_dir / "sloccount"
    script.write_text(f"""#!/bin/sh
if [ "$1" = "--version" ]; then echo 2.26; exit 0; fi
echo run >> {runs}
echo "Total Physical Source Lines of Code (SLOC)                = 12,345"
echo "Development Effort Estimate, Person-Years (Person-Months) = 2.89 (34.63)"
""")
    script.chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    return runs


def runs_of(log: Path) -> int:
    return len(log.read_text().splitlines()) if log.exists() else 0


# -- (1) arithmetic ----------------------------------------------------------------
@pytest.mark.parametrize("sloc, person_months", [
    (0, 0.0),
    (1000, 2.4),  # 1 KSLOC: exactly the factor
    (10_000, 2.4 * 10 ** 1.05),
    (45_000, 2.4 * 45 ** 1.05),
])
def test_basic_cocomo_formula(sloc, person_months):
    assert cocomo.basic_cocomo_person_months(sloc) == pytest.approx(person_months, rel=1e-12)


def test_basic_cocomo_rejects_negative_lines():
    with pytest.raises(ValueError):
        cocomo.basic_cocomo_person_months(-1)


@pytest.mark.parametrize("two_gad, sloc, cocomo_pm, two_gad_pm, ratio", [
    (19, 1000, 2.4, 1.0, 1 / 2.4),  # one person-month of 2GAD against 1 KSLOC
    (228, 1000, 2.4, 12.0, 5.0),  # one person-year = 228 person-days
    (0, 1000, 2.4, 0.0, 0.0),
    (412, 45_000, 2.4 * 45 ** 1.05, 412 / 19, (412 / 19) / (2.4 * 45 ** 1.05)),
    (38, 2000, 2.4 * 2 ** 1.05, 2.0, 2.0 / (2.4 * 2 ** 1.05)),
])
def test_compare_ratio(two_gad, sloc, cocomo_pm, two_gad_pm, ratio):
    result = cocomo.compare(two_gad, "SLOCCount 2.26", sloc)
    assert isinstance(result, Cocomo)
    assert (result.counter, result.sloc) == ("SLOCCount 2.26", sloc)
    assert result.person_months == pytest.approx(cocomo_pm, rel=1e-12)
    assert result.two_gad_person_months == pytest.approx(two_gad_pm, rel=1e-12)
    assert result.ratio == pytest.approx(ratio, rel=1e-12)


def test_compare_without_source_lines_has_no_ratio():
    result = cocomo.compare(40, "cloc 1.96", 0)
    assert result.person_months == 0.0 and math.isnan(result.ratio)


def test_footnote_states_formula_counter_and_units():
    note = cocomo.footnote(Cocomo("SLOCCount 2.26", 12_345, 34.63, 2.0, 2.0 / 34.63))
    assert "2.4 x KSLOC^1.05" in note and "organic" in note
    assert "SLOCCount 2.26" in note and "12,345 physical source lines" in note
    assert "1 person-month = 19 person-days (152 h)" in note
    assert "at the head of the default branch" in note and "summed" not in note
    several = cocomo.footnote(Cocomo("cloc 1.96", 10, 0.02, 2.0, 100.0), "the tip of branch dev", repos=3, period=True)
    assert "summed over the heads of 3 repositories" in several and "the tip of branch dev" in several
    assert "chosen period" in several


# -- (2) against SLOCCount's own printed figure --------------------------------------
def test_parse_sloccount_output():
    out = ("Total Physical Source Lines of Code (SLOC)                = 1,234,567\n"
           "Development Effort Estimate, Person-Years (Person-Months) = 327.01 (3,924.09)\n")
    assert cocomo.parse_sloccount(out) == 1_234_567
    assert cocomo.parse_sloccount_effort(out) == (327.01, 3924.09)
    assert cocomo.parse_sloccount("SLOC total is zero, no further analysis performed.\n") == 0
    assert cocomo.parse_sloccount("Error: something\n") is None


def test_parse_cloc_output():
    assert cocomo.parse_cloc('{"header": {"cloc_version": "1.96"}, "C": {"code": 6}, "SUM": {"code": 9}}') == 9
    assert cocomo.parse_cloc("{}") == 0  # cloc found no source at all
    assert cocomo.parse_cloc("garbage") is None


@needs_sloccount
@pytest.mark.parametrize("c_lines, py_lines", [
    ([6], [3]),  # 9 SLOC: SLOCCount prints 0.02 person-months
    ([700, 500], [800]),  # 2,000 SLOC
    ([20_000, 10_000], [15_000]),  # 45,000 SLOC
    ([50_000] * 6, [20_000]),  # 320,000 SLOC: SLOCCount prints 1,000+ person-months with a comma
])
def test_arithmetic_matches_sloccount_printed_figure(tmp_path, upstream, c_lines, py_lines):
    files = {"README": "not source\n", **files_of(c_lines, py_lines)}
    oid = upstream.commit(files=files)
    tree = exported(upstream, oid, tmp_path / "tree")
    out = run_sloccount(tree, tmp_path)

    sloc = cocomo.parse_sloccount(out)
    assert sloc == sum(c_lines) + sum(py_lines)  # the generated files count as designed
    printed_years, printed_months = cocomo.parse_sloccount_effort(out)
    ours = cocomo.basic_cocomo_person_months(sloc)
    assert f"{ours:,.2f}" == out.split("(Person-Months) = ")[1].split("(")[1].split(")")[0]
    assert abs(ours - printed_months) <= 0.005 + 1e-9
    assert abs(ours / 12 - printed_years) <= 0.005 + 1e-9
    # and count_sloc (export + counter + parse) finds the same figure, naming the counter
    name, counted = cocomo.count_sloc(Mirror(upstream.path), oid.raw, None)
    assert counted == sloc and name.startswith("SLOCCount 2.")


# -- counters: which one, and how to install one ---------------------------------------
def test_no_counter_says_how_to_install(tmp_path, monkeypatch, upstream):
    empty = tmp_path / "empty-path"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    with pytest.raises(GadError) as error:
        cocomo.detect_counter()
    message = str(error.value)
    assert "apt-get install sloccount" in message and "cloc" in message
    assert message.count(". ") == 0 and message.endswith(".")  # one sentence
    oid = upstream.commit(files={"a.c": "int a;\n"})
    with pytest.raises(GadError, match="apt-get install sloccount"):
        cocomo.count_sloc(Mirror(upstream.path), oid.raw, None)


@needs_sloccount
def test_sloccount_preferred_and_named_with_version():
    counter = cocomo.detect_counter()
    assert counter.kind == "sloccount"
    assert counter.name == "SLOCCount " + subprocess.run([SLOCCOUNT, "--version"], capture_output=True,
                                                          text=True).stdout.strip()


@needs_cloc
def test_cloc_when_sloccount_is_absent(tmp_path, monkeypatch, upstream):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("cloc", "perl"):  # cloc is a perl script started through `env perl`
        (bin_dir / tool).symlink_to(shutil.which(tool))
    monkeypatch.setenv("PATH", str(bin_dir))
    counter = cocomo.detect_counter()
    assert counter.kind == "cloc" and counter.name.startswith("cloc 1.")
    oid = upstream.commit(files={"README": "text\n", **files_of([120], [45])})
    name, sloc = cocomo.count_sloc(Mirror(upstream.path), oid.raw, None)
    assert (name, sloc) == (counter.name, 165)


def test_counter_failure_is_one_sentence(tmp_path, monkeypatch, upstream):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "sloccount"
    script.write_text('#!/bin/sh\nif [ "$1" = "--version" ]; then echo 2.26; exit 0; fi\necho "Error: broken" >&2\nexit 3\n')
    script.chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    oid = upstream.commit(files={"a.c": "int a;\n"})
    with pytest.raises(GadError, match=r"SLOCCount 2.26 failed to count the source lines \(exit 3\)") as error:
        cocomo.count_sloc(Mirror(upstream.path), oid.raw, None)
    assert "broken" not in str(error.value)  # the counter's output stays in the log


def test_counter_timeout(tmp_path, monkeypatch, upstream):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "sloccount"
    script.write_text('#!/bin/sh\nif [ "$1" = "--version" ]; then echo 2.26; exit 0; fi\nexec /bin/sleep 30\n')
    script.chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    oid = upstream.commit(files={"a.c": "int a;\n"})
    with pytest.raises(GadError, match="took longer than 0.5 seconds"):
        cocomo.count_sloc(Mirror(upstream.path), oid.raw, None, timeout=0.5)


# -- (3) the cache ---------------------------------------------------------------
def test_cache_hit_does_not_run_the_counter(index, upstream, fake_sloccount, monkeypatch):
    calls = []
    real_run = cocomo._run
    monkeypatch.setattr(cocomo, "_run", lambda *a, **k: calls.append(a[0]) or real_run(*a, **k))
    cache = cocomo.SlocCache(index)
    mirror = Mirror(upstream.path)
    first = upstream.commit(files={"a.c": "int a;\n"})
    assert cocomo.count_sloc(mirror, first.raw, cache) == ("SLOCCount 2.26", 12_345)
    assert cocomo.count_sloc(mirror, first.raw, cache) == ("SLOCCount 2.26", 12_345)
    assert len(calls) == 1 and runs_of(fake_sloccount) == 1
    # a commit that leaves the tree as it was is the same tree: still cached
    same_tree = upstream.commit(files={}, message="empty\n")
    assert cocomo.count_sloc(mirror, same_tree.raw, cache)[1] == 12_345 and len(calls) == 1
    # a new tree, or the same tree under path filters, is counted
    cocomo.count_sloc(mirror, upstream.commit(files={"b.c": "int b;\n"}).raw, cache)
    cocomo.count_sloc(mirror, same_tree.raw, cache, paths=["src"])
    assert len(calls) == 3
    rows = index.rows("SELECT tree_id, counter, sloc FROM cocomo_cache ORDER BY counted_at, tree_id")
    assert {r["counter"] for r in rows} == {"SLOCCount 2.26"} and len(rows) == 3
    assert mirror.tree_of(first.raw) in {r["tree_id"] for r in rows}
    assert f"{mirror.tree_of(same_tree.raw)} path:src" in {r["tree_id"] for r in rows}


def test_cache_is_per_counter_version(index):
    cache = cocomo.SlocCache(index)
    cache.put("abc", "SLOCCount 2.26", 10)
    assert cache.get("abc", "SLOCCount 2.26") == 10
    assert cache.get("abc", "cloc 1.96") is None
    cache.put("abc", "SLOCCount 2.26", 11)  # a recount replaces
    assert cache.get("abc", "SLOCCount 2.26") == 11


def test_migration_sql_matches_the_brief(tmp_path):
    from bot.store.index import Index

    fresh = Index(tmp_path / "fresh.db")
    cocomo.ensure_table(fresh)
    cocomo.ensure_table(fresh)  # idempotent
    columns = {r["name"]: r for r in fresh.rows("PRAGMA table_info(cocomo_cache)")}
    assert list(columns) == ["tree_id", "counter", "sloc", "counted_at"]
    assert [columns[c]["pk"] for c in columns] == [1, 2, 0, 0]


# -- path filters ----------------------------------------------------------------
@needs_sloccount
def test_path_filters_restrict_the_count(upstream):
    oid = upstream.commit(files=files_of([100, 50], [30]))  # src/mod0.c 100, src/mod1.c 50, tools/script0.py 30
    mirror = Mirror(upstream.path)
    assert cocomo.count_sloc(mirror, oid.raw, None)[1] == 180
    assert cocomo.count_sloc(mirror, oid.raw, None, paths=["src"])[1] == 150
    assert cocomo.count_sloc(mirror, oid.raw, None, paths=["src", "src/mod1.c"])[1] == 150
    assert cocomo.count_sloc(mirror, oid.raw, None, paths=["src/mod1.c", "tools"])[1] == 80
    assert cocomo.count_sloc(mirror, oid.raw, None, exclude_paths=["tools"])[1] == 150
    assert cocomo.count_sloc(mirror, oid.raw, None, paths=["src"], exclude_paths=["src/mod0.c"])[1] == 50
    assert cocomo.count_sloc(mirror, oid.raw, None, paths=["nowhere"])[1] == 0


# -- the engine's call -----------------------------------------------------------
# Expected figures are worked out by hand: 2GAD from the commits written below, COCOMO as
# 2.4 x KSLOC^1.05 person-months (Boehm's basic organic model), 2GAD in person-months as
# person-days / 19. Reports come from Engine.report, which already runs `vs:cocomo`.
def report_of(engine, text: str):
    return engine.report(parse_query(text.split(), TODAY), TODAY)


@needs_sloccount
def test_cocomo_at_the_default_branch_head_or_the_named_branch(engine, index, upstream):
    upstream.commit(files=files_of([400], [100]), date="2024-01-02")
    upstream.commit(email="bob@example.com", files={"src/extra.c": c_source(250, "x")}, date="2024-01-03")
    upstream.branch("side", upstream.tip("main"))
    upstream.commit("side", files={"src/side.c": c_source(1000, "s")}, date="2024-01-04")  # not at HEAD
    engine.track(str(upstream.path), "up")
    report = report_of(engine, "up vs:cocomo")
    # Ann 01-02 and 01-04, Bob 01-03: 3 person-days, 2GAD 6
    assert report.two_gad == 6
    result = report.cocomo
    assert result.counter.startswith("SLOCCount ") and result.sloc == 400 + 100 + 250
    assert result.person_months == pytest.approx(2.4 * 0.75 ** 1.05)
    assert result.two_gad_person_months == pytest.approx(6 / 19)
    assert result.ratio == pytest.approx((6 / 19) / (2.4 * 0.75 ** 1.05))
    for text in ("up refs:all vs:cocomo", "up branch:HEAD vs:cocomo"):
        assert report_of(engine, text).cocomo.sloc == 750
    side = report_of(engine, "up branch:side vs:cocomo")
    assert side.cocomo.sloc == 1750 and side.two_gad == 6


@needs_sloccount
def test_cocomo_sets_the_report_and_one_footnote(engine, index, upstream):
    upstream.commit(files=files_of([300], [], prefix="lib/"), date="2024-03-02")
    upstream.commit(files={"docs/x.c": c_source(40, "d")}, date="2024-03-05")
    engine.track(str(upstream.path), "up")
    plain = report_of(engine, "up since:2024-03 path:lib")
    answered = report_of(engine, "up since:2024-03 path:lib vs:cocomo")
    assert answered.totals == plain.totals and plain.two_gad == 2  # only the 03-02 commit touched lib
    c = answered.cocomo
    assert c.sloc == 300 and c.person_months == pytest.approx(2.4 * 0.3 ** 1.05)
    assert c.two_gad_person_months == pytest.approx(2 / 19) and c.ratio == pytest.approx((2 / 19) / (2.4 * 0.3 ** 1.05))
    (note,) = [n for n in answered.notes if n.startswith("COCOMO:")]
    assert "300 physical source lines" in note and c.counter in note
    assert "at the head of the default branch, under lib" in note and "chosen period" in note
    assert "1 person-month = 19 person-days (152 h)" in note


@needs_sloccount
def test_several_repositories_sum_their_heads_and_forks_count_once(engine, index, upstream, tmp_path):
    upstream.commit(files={"a.c": c_source(200, "a")})
    other = RepoBuilder(tmp_path / "other")
    other.commit(files={"b.py": py_source(70, "b")})
    engine.track(str(upstream.path), "up")
    engine.track(str(other.path), "other")
    shutil.copytree(upstream.path, tmp_path / "fork")  # a fork: another source, the same tree as `up`
    engine.track(str(tmp_path / "fork"), "fork")
    answered = report_of(engine, "up other fork vs:cocomo")
    assert answered.cocomo.sloc == 270  # 200 + 70; the fork's identical tree is counted once
    assert "summed over the heads of 3 repositories" in answered.notes[-1]


@needs_sloccount
def test_no_source_lines_is_a_note_not_a_figure(engine, index, upstream):
    upstream.commit(files={"README": "words only\n"})
    engine.track(str(upstream.path), "up")
    answered = report_of(engine, "up vs:cocomo")
    assert answered.cocomo is None and answered.two_gad == 2
    assert "found no source lines at the head of the default branch" in answered.notes[-1]


def test_no_counter_still_answers_2gad_with_one_line_on_enabling_cocomo(engine, index, upstream, tmp_path, monkeypatch):
    upstream.commit(files={"a.c": "int a;\n"}, date="2024-01-02")
    upstream.commit(email="bob@example.com", files={"b.c": "int b;\n"}, date="2024-01-02")
    engine.track(str(upstream.path), "up")
    empty = tmp_path / "empty-path"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))  # like python:3.11-slim without the image's sloccount
    answered = report_of(engine, "up vs:cocomo")
    assert answered.cocomo is None and answered.two_gad == 4  # Ann and Bob on 2024-01-02
    assert answered.notes == (cocomo.NO_COUNTER_NOTE,)
    assert "apt-get install sloccount" in cocomo.NO_COUNTER_NOTE
    from bot.render.text import render_text

    out = render_text(answered)
    assert "2GAD         4 person-days" in out and cocomo.NO_COUNTER_NOTE.split(";")[0] in out.replace("\n    ", " ")


def test_missing_branch_and_missing_head(engine, index, upstream, fake_sloccount):
    upstream.commit(files={"a.c": "int a;\n"})
    engine.track(str(upstream.path), "up")
    repo = engine.repo("up")
    query = parse_query(["up", "branch:nope", "vs:cocomo"], TODAY)
    with pytest.raises(QueryError, match="no branch `nope`"):
        engine.head_tip(repo, Mirror(repo.mirror_path), query.scope)
    engine.index.execute("DELETE FROM refs WHERE repo_id = ? AND name = 'HEAD'", (repo.id,))
    query = parse_query(["up", "vs:cocomo"], TODAY)
    with pytest.raises(QueryError, match="no default branch"):
        engine.head_tip(repo, Mirror(repo.mirror_path), query.scope)


def test_engine_wiring_with_a_fake_counter(engine, index, upstream, fake_sloccount):
    """Runs everywhere (no real counter needed): the figures come from the counter's printed total."""
    upstream.commit(files={"a.c": "int a;\n"}, date="2024-01-02")
    upstream.commit(email="bob@example.com", files={"b.c": "int b;\n"}, date="2024-01-02")
    engine.track(str(upstream.path), "up")
    answered = report_of(engine, "up vs:cocomo")
    # 2GAD 4 (Ann and Bob, one day); the fake counter prints 12,345 SLOC
    effort = 2.4 * 12.345 ** 1.05
    assert answered.cocomo == Cocomo("SLOCCount 2.26", 12_345, pytest.approx(effort), pytest.approx(4 / 19),
                                     pytest.approx((4 / 19) / effort))
    report_of(engine, "up vs:cocomo")
    assert runs_of(fake_sloccount) == 1  # the second answer came from the cache
    assert not list((engine.settings.data_dir / "tmp").iterdir())  # exported trees are cleaned up
