"""`by:release` rows as git itself lists them: each row is `git log PREVIOUS..THIS` (the first, `git log FIRST`), run
with the git binary by the test, with the other tokens applied to git's records by hand (METRIC.md's rules), never
compared with the engine's own `range:`. And a tag that names no commit (a tree or a blob, lightweight or annotated)
is never a release: git's `TAG^{commit}` does not resolve, so it starts no row and ends none.

The repository, built in code (tests/gitbuild.py): a `.mailmap` that folds zed@old.example into Ann (so the raw
e-mails sort otherwise than the mapped ones), a maintenance release v1.0.1 tagged after v1.1 by version, a merge into
v1.2 that brings in a commit older than v1.1, a bot's commit, v2.0 a tag of a tag, a commit after every release,
and v1.5..v1.8 tags of trees and blobs among the versions.
"""

from __future__ import annotations

import fnmatch

import pygit2
import pytest

from bot.config import Settings
from bot.engine.engine import Engine
from bot.engine.query import parse_command
from tests.conftest import TODAY
from tests.gitbuild import RepoBuilder

SIG = pygit2.Signature("T", "t@example.com", 1700000000, 0)
MAILMAP = "Ann <ann@example.com> <zed@old.example>\n"


def annotated(b: RepoBuilder, name: str, target, kind) -> pygit2.Oid:
    return b.repo.create_tag(name, target, kind, SIG, f"{name}\n")


def build_app(path) -> RepoBuilder:
    b = RepoBuilder(path)
    c1 = b.commit(name="Ann", email="ann@example.com", date="2024-01-02", files={".mailmap": MAILMAP, "src/a.c": "1"})
    b.tag("v1.0", c1, annotated=True)
    b.commit(name="Zed", email="zed@old.example", date="2024-01-10", files={"docs/x.md": "1"})
    b.commit("feature", parents=[b.tip("main")], name="Eve", email="eve@example.com", date="2024-01-20",
             files={"src/b.c": "1"})
    c3 = b.commit(name="Bob", email="Bob@Example.com", date="2024-02-01T23:30", offset=-300, files={"src/a.c": "2"})
    b.tag("v1.1", c3)
    b.tag("v1.0.1", b.commit("maint", parents=[c1], name="Dee", email="dee@example.com", date="2024-02-10",
                             files={"src/a.c": "1.1"}), annotated=True)
    b.commit(name="Zed", email="zed@old.example", date="2024-03-01", files={"src/c.c": "1"})
    b.tag("v1.2", b.merge("main", b.tip("feature"), name="Ann", email="ann@example.com", date="2024-03-05"))
    b.commit(name="ci[bot]", email="ci-bot@example.com", date="2024-03-06", files={"src/a.c": "3"})
    c5 = b.commit(name="Bob", email="bob@example.com", date="2024-04-01", files={"docs/y.md": "1"})
    inner = annotated(b, "inner", c5, pygit2.enums.ObjectType.COMMIT)
    annotated(b, "v2.0", inner, pygit2.enums.ObjectType.TAG)  # a tag of a tag of a commit: a release
    b.delete_ref("refs/tags/inner")
    b.commit(name="Gus", email="gus@example.com", date="2024-05-01", files={"src/d.c": "1"})  # in no release
    # tags that name no commit, among the versions: no history behind them
    tree = b.repo[c3].tree
    blob = tree["src"]["a.c"].id
    b.set_ref("refs/tags/v1.5", tree.id)
    annotated(b, "v1.6", blob, pygit2.enums.ObjectType.BLOB)
    annotated(b, "v1.7", tree.id, pygit2.enums.ObjectType.TREE)
    b.set_ref("refs/tags/v1.8", blob)
    return b


# The releases in version order, by hand (v1.0.1 sorts before v1.1 though tagged after it), each tag's commit's
# author day (Bob's v1.1 is his own day, 2024-02-01 at -05:00).
ORDER = ["v1.0", "v1.0.1", "v1.1", "v1.2", "v2.0"]
TAG_DAY = {"v1.0": "2024-01-02", "v1.0.1": "2024-02-10", "v1.1": "2024-02-01", "v1.2": "2024-03-05",
           "v2.0": "2024-04-01"}


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    base = tmp_path_factory.mktemp("releases")
    b = build_app(base / "app")
    engine = Engine.open(Settings.from_env({"GAD_DATA_DIR": str(base / "data")}))
    assert engine.track(str(b.path), "app").error is None
    return b, engine


def ask(engine: Engine, text: str):
    return engine.report(parse_command(text, TODAY).query, TODAY)


def git_records(b: RepoBuilder, revs: str, *, mailmap: bool, paths: tuple[str, ...]) -> list[tuple[str, str, str, str]]:
    """(name, e-mail, author day, commit) of every commit `git log REVS` lists, mapped or raw as git does it.
    With paths: the commits that changed them (`--full-history --no-merges`: a merge changes no path of its own)."""
    fmt = "%aN%x00%aE%x00%ad%x00%H" if mailmap else "%an%x00%ae%x00%ad%x00%H"
    args = ["log", "--use-mailmap" if mailmap else "--no-mailmap", f"--format={fmt}", "--date=short"]
    if paths:
        args += ["--full-history", "--no-merges"]
    args.append(revs)
    if paths:
        args += ["--", *paths]
    return [tuple(line.split("\x00")) for line in b.git(*args).splitlines()]


def git_row(b: RepoBuilder, revs: str, rules: dict) -> tuple[int, int, int]:
    """(active days, developers, commits) of `git log REVS` under METRIC.md's rules: bots dropped unless kept,
    e-mails lower-cased, the period on the author day, `author:` a glob on the person."""
    kept = []
    for name, email, day, commit in git_records(b, revs, mailmap=rules.get("mailmap", True),
                                                 paths=rules.get("paths", ())):
        person = email.lower()
        if not rules.get("bots") and "[bot]" in (name + email).lower():
            continue
        if rules.get("since") and day < rules["since"] or rules.get("until") and day > rules["until"]:
            continue
        if rules.get("author") and not fnmatch.fnmatchcase(person, rules["author"]):
            continue
        kept.append((person, day, commit))
    return len({(p, d) for p, d, _ in kept}), len({p for p, _, _ in kept}), len({c for _, _, c in kept})


# tokens -> the same rules for git's records; the period also picks the rows (a release whose tag's day is in it)
CASES = {
    "": {},
    "mailmap:off": {"mailmap": False},
    "bots:on": {"bots": True},
    "author:ann@*": {"author": "ann@*"},
    "since:2024-02": {"since": "2024-02-01"},
    "until:2024-02": {"until": "2024-02-29"},
    "path:src": {"paths": ("src",)},
    "path:src mailmap:off author:zed@*": {"paths": ("src",), "mailmap": False, "author": "zed@*"},
}


@pytest.mark.parametrize("tokens", list(CASES))
def test_each_row_is_what_git_log_previous_dot_dot_this_lists(app, tokens):
    b, engine = app
    rules = CASES[tokens]
    report = ask(engine, f"app by:release {tokens}")
    shown = [tag for tag in ORDER if (not rules.get("since") or TAG_DAY[tag] >= rules["since"])
             and (not rules.get("until") or TAG_DAY[tag] <= rules["until"])]
    ranges = {tag: (f"{ORDER[ORDER.index(tag) - 1]}..{tag}" if ORDER.index(tag) else tag) for tag in ORDER}
    got = [(row.key, (row.totals.person_days, row.totals.developers, row.totals.commits)) for row in report.rows]
    assert got == [(tag, git_row(b, ranges[tag], rules)) for tag in shown], tokens


def test_by_hand_the_merge_and_the_mailmap(app):
    """Worked out from build_app: v1.2 (v1.1..v1.2) holds Eve's 2024-01-20 (older than v1.1, brought in by the
    merge), Zed's 2024-03-01 (Ann's, by the mailmap) and the merge (Ann, 2024-03-05): 3 active days, 2 people."""
    _, engine = app
    rows = {row.key: row.totals for row in ask(engine, "app by:release").rows}
    assert (rows["v1.2"].person_days, rows["v1.2"].developers, rows["v1.2"].commits) == (3, 2, 3)
    # Bob on 04-01; the bot's commit of 03-06 counts nowhere (METRIC.md rule 3: nor among the commits)
    assert (rows["v2.0"].person_days, rows["v2.0"].developers, rows["v2.0"].commits) == (1, 1, 1)


def test_a_tag_of_a_tree_or_a_blob_is_never_a_release(app):
    """v1.5 (a tree), v1.6 (an annotated blob), v1.7 (an annotated tree), v1.8 (a blob) look like versions, but git
    finds no commit behind them: no row of their own, and none that starts or ends at them (v2.0 counts from
    v1.2). The example help offers names two releases that are commits too."""
    b, engine = app
    peels = {}
    for tag in b.git("tag", "--list").split():
        try:
            b.git("rev-parse", "--verify", "--quiet", f"{tag}^{{commit}}")
            peels[tag] = True
        except Exception:
            peels[tag] = False
    assert {tag for tag, ok in peels.items() if not ok} == {"v1.5", "v1.6", "v1.7", "v1.8"}
    report = ask(engine, "app by:release")
    assert [row.key for row in report.rows] == [tag for tag in ORDER if peels[tag]] == ORDER
    assert [row.release.previous for row in report.rows] == [None, "v1.0", "v1.0.1", "v1.1", "v1.2"]
    assert report.rows[-1].totals.person_days == git_row(b, "v1.2..v2.0", {})[0]
    # named by tags:GLOB, they are still no releases: one sentence naming the tags that are
    from bot.errors import QueryError

    with pytest.raises(QueryError, match=r"has no tag matching `tags:v1\.\[5-8\]`; its tags \(newest first\) are "
                                         r"`v2\.0`, `v1\.2`, `v1\.1`, `v1\.0\.1`, `v1\.0`"):
        ask(engine, "app by:release tags:v1.[5-8]")
    from bot.engine import examples
    from bot.engine.audiences import OPERATOR

    found = examples.tracked_or_generic(engine.index, OPERATOR)
    offered = [e for e in examples.examples(found) if "range:" in e]
    assert offered == ["app range:v1.2..v2.0"]
    assert ask(engine, offered[0]).totals.person_days == git_row(b, "v1.2..v2.0", {})[0]
