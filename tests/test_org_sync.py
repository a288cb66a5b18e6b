"""An organization's periodic sync (Engine.sync_orgs(fetch=True)) as its channels would see it, through a loopback
forge (tests/forgestub.py): a repository whose fetch failed waits out its back-off and is fetched again once it has
passed; a repository renamed upstream onto a name gad-bot already tracks keeps its own name and history, and the
tracked one keeps its own. Expected figures come from git over the forge's repositories (tests/gitbuild.py)."""

from __future__ import annotations

import shutil
from datetime import timedelta

import pytest

from bot.config import Settings
from bot.engine import forgeorgs
from bot.engine.engine import Engine
from bot.engine.query import Query
from tests.forgestub import ForgeStub
from tests.gitbuild import RepoBuilder, oracle_pairs

TOKEN = "forge-token-123"


@pytest.fixture
def forge(tmp_path):
    with ForgeStub(tmp_path / "srv", "github", token=TOKEN) as stub:
        yield stub


def engine_for(forge: ForgeStub, tmp_path) -> Engine:
    return Engine.open(Settings.from_env({"GAD_DATA_DIR": str(tmp_path / "data"), "GAD_FORGES": forge.forges_setting,
                                          "GAD_HTTPS_TOKENS": f"127.0.0.1={TOKEN}"}))


def gad(engine: Engine, name: str) -> int:
    return engine.report(Query(repos=(name,))).totals.two_gad


def fetches_of(forge: ForgeStub, full_name: str) -> int:
    """Git requests for one repository the forge has served (a fetch makes one or two)."""
    return sum(f"/{full_name}.git/" in path for _, path, _ in forge.requests)


def test_a_repository_whose_back_off_has_passed_is_fetched_again(forge, tmp_path, monkeypatch):
    forge.add("acme/web")
    forge.add("acme/api", commits=[("cy@acme.example", "2024-03-05")])
    engine = engine_for(forge, tmp_path)
    engine.track_org(engine.org_owner(forge.owner_url("acme")))
    served = forge.base / "acme/api.git"
    served.rename(served.with_name("api.git.away"))  # the forge cannot serve it for a while
    (result,) = engine.sync_orgs(fetch=True)
    assert [name for name, _ in result.failed] == ["acme/api"]
    failed = engine.repo("acme/api")
    assert failed.last_error and failed.next_attempt_at is not None
    served.with_name("api.git.away").rename(served)
    RepoBuilder(served, bare=True).commit(name="Dee", email="dee@acme.example", date="2024-03-06")
    expected = 2 * len(oracle_pairs(served))
    assert gad(engine, "acme/api") < expected == 2 * 2  # Cy's day and Dee's; gad-bot has only Cy's

    # within its back-off: not fetched, so nothing new counts yet
    asked = fetches_of(forge, "acme/api")
    (result,) = engine.sync_orgs(fetch=True)
    assert not result.failed and fetches_of(forge, "acme/api") == asked
    assert gad(engine, "acme/api") == 2

    # the back-off has passed (the clock the sync reads is a day on): fetched, indexed, no longer failing
    later = forgeorgs.utcnow() + timedelta(days=1)
    assert failed.next_attempt_at < later
    monkeypatch.setattr(forgeorgs, "utcnow", lambda: later)
    (result,) = engine.sync_orgs(fetch=True)
    assert not result.failed and fetches_of(forge, "acme/api") > asked
    assert gad(engine, "acme/api") == expected
    again = engine.repo("acme/api")
    assert again.last_error is None and again.next_attempt_at is None
    assert gad(engine, "acme") == 2 * len(oracle_pairs(forge.base / "acme/web.git") | oracle_pairs(served))


def test_a_rename_upstream_onto_a_name_already_tracked_keeps_both(forge, tmp_path):
    """`acme/web` is deleted upstream and `acme/old` renamed to `acme/web` before the next listing (the forge's own id
    says which is which). `acme/web` stays the deleted repository's name, its history counted and marked gone; the
    renamed one keeps `acme/old` (its history, and its new commits fetched from its new URL)."""
    web = forge.add("acme/web", commits=[("ann@acme.example", "2024-03-01"), ("bob@acme.example", "2024-03-02")])
    old = forge.add("acme/old", commits=[("cy@acme.example", "2024-03-03")])
    engine = engine_for(forge, tmp_path)
    engine.track_org(engine.org_owner(forge.owner_url("acme")))
    web_pairs = oracle_pairs(forge.base / "acme/web.git")
    assert gad(engine, "acme/web") == 2 * len(web_pairs) == 4

    forge.delete(web)
    shutil.rmtree(forge.base / "acme/web.git")
    forge.rename(old, "acme/web")
    renamed = forge.base / "acme/web.git"
    RepoBuilder(renamed, bare=True).commit(name="Dee", email="dee@acme.example", date="2024-03-04")
    (result,) = engine.sync_orgs()
    assert not result.error
    assert sorted((c.kind, c.name, c.old_name) for c in result.changes) == [("gone", "acme/web", None)]
    assert sorted(engine.projects()["acme"]) == ["acme/old", "acme/web"]
    assert gad(engine, "acme/web") == 2 * len(web_pairs)  # the deleted repository's history, under its own name
    assert engine.repo("acme/old").source == forge.clone_url("acme/web")  # fetches from where it went
    (synced,) = engine.sync(["acme/old"])
    assert synced.error is None
    assert gad(engine, "acme/old") == 2 * len(oracle_pairs(renamed)) == 4  # Cy's day and Dee's
    assert gad(engine, "acme") == 2 * len(web_pairs | oracle_pairs(renamed))
