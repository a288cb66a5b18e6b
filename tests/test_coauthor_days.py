"""Co-authors (METRIC.md rule 7, `coauthors:on`) at the edges of a period: a co-author's record is on the commit's
author day, and `until:` is inclusive (rule 4: `until:2024-06` ends on 2024-06-30), so a co-author of a commit made
on the last day counts, and one of a commit made the next day (in the author's own zone, whatever UTC says) does not.

Expected figures come from git: METRIC.md's "Checking an implementation" pipeline for coauthors:on (`git log` with
`%(trailers:key=Co-authored-by,valueonly,separator=%x01)`), the period applied to git's author days by hand.
"""

from __future__ import annotations

import re

import pytest

from bot.config import Settings
from bot.engine.engine import Engine
from bot.engine.query import parse_command
from tests.conftest import TODAY
from tests.gitbuild import RepoBuilder


def co(*people: str) -> str:
    return "a change\n\n" + "".join(f"Co-authored-by: {p.title()} <{p}@example.com>\n" for p in people)


@pytest.fixture(scope="module")
def paired(tmp_path_factory):
    base = tmp_path_factory.mktemp("coauthors")
    b = RepoBuilder(base / "r")
    b.commit(name="Ann", email="ann@example.com", date="2024-06-01", message=co("bea"))  # the since: day
    b.commit(name="Ann", email="ann@example.com", date="2024-06-15", message=co("bea", "cal"))
    # the last day of June in Ann's zone (-05:00), already 1 July in UTC: June's
    b.commit(name="Ann", email="ann@example.com", date="2024-06-30T23:30", offset=-300, message=co("cal", "dan"))
    # 1 July in Eli's zone (+09:00), still 30 June in UTC: July's
    b.commit(name="Eli", email="eli@example.com", date="2024-07-01T00:30", offset=540, message=co("fay"))
    b.commit(name="Bob", email="bob@example.com", date="2024-05-31", message=co("gus"))  # the day before since:
    engine = Engine.open(Settings.from_env({"GAD_DATA_DIR": str(base / "data")}))
    assert engine.track(str(b.path), "r").error is None
    return b, engine


def git_pairs(b: RepoBuilder, since: str | None, until: str | None) -> set[tuple[str, str]]:
    """(person, day) of each author and each Co-authored-by trailer of the commits git lists, inside the period."""
    fmt = "%aE%x00%ad%x00%(trailers:key=Co-authored-by,valueonly,separator=%x01)"
    pairs = set()
    for line in b.git("log", "--branches", "--tags", f"--format={fmt}", "--date=short").splitlines():
        email, day, trailers = line.split("\x00")
        if since and day < since or until and day > until:
            continue
        pairs.add((email.lower(), day))
        for value in filter(None, trailers.split("\x01")):
            pairs.add((re.search(r"<([^>]+)>", value).group(1).lower(), day))
    return pairs


@pytest.mark.parametrize("tokens, since, until", [
    ("until:2024-06", None, "2024-06-30"),
    ("since:2024-06 until:2024-06", "2024-06-01", "2024-06-30"),
    ("since:2024-06-30 until:2024-06-30", "2024-06-30", "2024-06-30"),
    ("until:2024-06-29", None, "2024-06-29"),
    ("since:2024-07-01", "2024-07-01", None),
])
def test_coauthors_count_on_the_last_and_first_day_of_a_period(paired, tokens, since, until):
    b, engine = paired
    report = engine.report(parse_command(f"r {tokens} coauthors:on", TODAY).query, TODAY)
    expected = git_pairs(b, since, until)
    assert report.totals.person_days == len(expected), (tokens, sorted(expected))
    assert report.totals.developers == len({person for person, _ in expected})


def test_by_hand_june_holds_cal_and_dan_on_its_last_day(paired):
    """Worked out from the commits: June is Ann's 3 days, Bea's 2 (06-01, 06-15), Cal's 2 (06-15, 06-30) and Dan's 1
    (06-30): 8 active days, 2GAD 16; without co-authors, Ann's 3."""
    _, engine = paired
    on = engine.report(parse_command("r since:2024-06 until:2024-06 coauthors:on", TODAY).query, TODAY)
    off = engine.report(parse_command("r since:2024-06 until:2024-06", TODAY).query, TODAY)
    assert (on.totals.person_days, on.totals.two_gad, off.totals.person_days) == (8, 16, 3)
