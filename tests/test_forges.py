"""Whole forge organizations: listing through each forge's REST API (a loopback forge shaped as the public docs
describe), tracking every repository, and staying in step (new, renamed, deleted upstream).

Expected figures come from git over the forge's own repositories (tests/gitbuild.py oracle_pairs).
"""

from __future__ import annotations

import json

import pytest

from bot.config import Settings
from bot.engine.audiences import Audience
from bot.engine.engine import Engine
from bot.engine.query import Query
from bot.errors import GadError
from tests.faults.test_counter_names import canary  # noqa: F401  (a fixture: a program that tells when it ran)
from tests.forgestub import ForgeStub
from tests.gitbuild import RepoBuilder, oracle_pairs

TOKEN = "forge-token-123"


@pytest.fixture
def forge(request, tmp_path):
    kind = getattr(request, "param", "github")
    with ForgeStub(tmp_path / "srv", kind, token=TOKEN, max_per_page=2) as stub:
        yield stub


def engine_for(forge: ForgeStub, tmp_path, **env) -> Engine:
    settings = Settings.from_env({"GAD_DATA_DIR": str(tmp_path / "data"), "GAD_FORGES": forge.forges_setting,
                                  "GAD_HTTPS_TOKENS": f"127.0.0.1={TOKEN}", **env})
    return Engine.open(settings)


def gad(engine: Engine, name: str) -> int:
    return engine.report(Query(repos=(name,))).totals.two_gad


def oracle(forge: ForgeStub, full_names) -> int:
    pairs = set()
    for full_name in full_names:
        pairs |= oracle_pairs(forge.base / f"{full_name}.git")
    return 2 * len(pairs)


@pytest.mark.parametrize("forge", ["github", "gitlab", "gitea"], indirect=True)
def test_an_organization_is_tracked_whole(forge, tmp_path):
    owner_path = "acme/platform" if forge.kind == "gitlab" else "acme"
    names = [f"{owner_path}/web", f"{owner_path}/api", f"{owner_path}/old", f"{owner_path}/secret"]
    if forge.kind == "gitlab":
        names.append("acme/platform/infra/deploy")  # a subgroup's project
    forge.add(names[0], commits=[("ann@acme.example", "2024-03-01"), ("bob@acme.example", "2024-03-01")])
    forge.add(names[1], commits=[("ann@acme.example", "2024-03-01"), ("cy@acme.example", "2024-03-05")])
    forge.add(names[2], archived=True)
    forge.add(names[3], private=True, commits=[("dee@acme.example", "2024-04-01")])
    for extra in names[4:]:
        forge.add(extra, commits=[("eve@acme.example", "2024-05-01")])
    forge.add(f"{owner_path}/fork-of-x", fork=True)
    forge.add(f"{owner_path}/nothing", empty=True)
    forge.add("other/thing")  # another owner: not listed
    engine = engine_for(forge, tmp_path)

    owner = engine.org_owner(forge.owner_url(owner_path))
    assert owner is not None and owner.owner == owner_path
    result = engine.track_org(owner)

    project = owner_path.replace("/", "/")
    assert result.sentence() == (f"{project}: {len(names)} repositories (1 archived), 1 fork and 1 empty one left out.")
    assert sorted(engine.projects()[result.org]) == sorted(n.lower() for n in names)
    assert gad(engine, result.org) == oracle(forge, names)
    assert engine.org_of("127.0.0.1:%d" % forge.port, owner_path.upper()) == result.org
    assert engine.org_of("127.0.0.1:%d" % forge.port, "nobody") is None
    # the token went with every API request; pages were followed (2 a page)
    assert all(TOKEN in auth for _, auth in forge.api_requests)
    assert sum("page=" in path for path, _ in forge.api_requests) >= 2


def test_forks_on_keeps_forks(forge, tmp_path):
    forge.add("acme/web")
    forge.add("acme/fork", fork=True, commits=[("zed@else.example", "2024-06-01")])
    engine = engine_for(forge, tmp_path)
    result = engine.track_org(engine.org_owner(forge.owner_url("acme")), forks=True)
    assert result.sentence() == "acme: 2 repositories."
    assert gad(engine, "acme") == oracle(forge, ["acme/web", "acme/fork"])


def test_private_repositories_need_the_token(forge, tmp_path):
    forge.add("acme/web")
    forge.add("acme/secret", private=True)
    engine = engine_for(forge, tmp_path, GAD_HTTPS_TOKENS="example.com=nothing-here")
    result = engine.track_org(engine.org_owner(forge.owner_url("acme")))
    assert engine.projects()["acme"] == ["acme/web"]
    assert result.repositories == 1


def test_a_user_is_listed_when_no_organization_has_the_name(forge, tmp_path):
    forge.add("ann/dots")
    forge.answers.append((404, {"Content-Type": "application/json"}, b'{"message": "Not Found"}'))  # orgs/ann
    engine = engine_for(forge, tmp_path)
    result = engine.track_org(engine.org_owner(forge.owner_url("ann")))
    assert result.repositories == 1
    assert [p for p, _ in forge.api_requests][:2] == ["/api/v3/orgs/ann/repos?type=all&per_page=100",
                                                      "/api/v3/users/ann/repos?type=owner&per_page=100"]


@pytest.mark.parametrize("forge", ["github", "gitlab", "gitea"], indirect=True)
def test_sync_tracks_new_renames_and_marks_gone(forge, tmp_path):
    web = forge.add("acme/web", commits=[("ann@acme.example", "2024-03-01")])
    api = forge.add("acme/api", commits=[("bob@acme.example", "2024-03-02")])
    engine = engine_for(forge, tmp_path)
    engine.track_org(engine.org_owner(forge.owner_url("acme")))
    before = gad(engine, "acme")

    forge.rename(web, "acme/website")
    forge.delete(api)
    forge.add("acme/new", commits=[("cy@acme.example", "2024-03-03")])
    (result,) = engine.sync_orgs()
    kinds = sorted((c.kind, c.name, c.old_name) for c in result.changes)
    assert kinds == [("gone", "acme/api", None), ("new", "acme/new", None), ("renamed", "acme/website", "acme/web")]
    assert sorted(engine.projects()["acme"]) == ["acme/api", "acme/new", "acme/website"]
    assert gad(engine, "acme") == before + 2  # cy's day; the gone repository's history stays counted
    assert engine.repo("acme/website").source == forge.clone_url("acme/website")
    # the renamed one fetches from its new home
    engine.sync(["acme/website"])
    assert engine.repo("acme/website").last_error is None
    assert engine.sync_orgs() == [type(result)("acme", 3)]  # nothing changed: nothing said


@pytest.mark.parametrize("forge", ["github", "gitlab", "gitea"], indirect=True)
def test_rate_limits_are_waited_out(forge, tmp_path):
    forge.add("acme/web")
    forge.answers.append((429, {"Retry-After": "1", "Content-Type": "application/json"}, b"{}"))
    forge.answers.append((403, {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "1"}, b"{}"))
    engine = engine_for(forge, tmp_path)
    seen = []
    result = engine.track_org(engine.org_owner(forge.owner_url("acme")), progress=seen.append)
    assert result.repositories == 1
    assert result.waited_seconds >= 2
    assert any(p.phase == "rate limit" for p in seen)


def test_a_long_rate_limit_is_said_not_waited(forge, tmp_path):
    forge.add("acme/web")
    forge.answers.append((429, {"Retry-After": "86400"}, b"{}"))
    engine = engine_for(forge, tmp_path)
    with pytest.raises(GadError, match="rate limit .* spent until about"):
        engine.track_org(engine.org_owner(forge.owner_url("acme")))
    assert engine.repos() == [] and engine.projects() == {}


@pytest.mark.parametrize("limit", ["deadline", "count"])
def test_rate_limit_waits_count_in_the_listings_deadline_and_in_one_budget(forge, tmp_path, monkeypatch, limit):
    """Issue 31: waits were counted per request (5 of up to 300 s for every page, 1,000 pages) and outside the
    listing's deadline, so one listing could hold a sync worker for days. Here each of 5 pages is rate limited
    once for 1 s: with a listing deadline of 2.5 s (waits count in it), or 2 waits in all, the listing gives up
    after the second wait, with one sentence, and nothing is tracked."""
    import time

    import bot.store.forges as forges

    for n in range(10):  # 2 a page: 5 pages
        forge.add(f"acme/r{n}", empty=True)
    real = forge._handle
    limited: set[str] = set()

    def rate_limited_once_a_page(h):
        if h.path.startswith("/api/") and h.path not in limited:
            limited.add(h.path)
            forge.answers.insert(0, (429, {"Retry-After": "1", "Content-Type": "application/json"}, b"{}"))
        return real(h)

    forge._handle = rate_limited_once_a_page
    if limit == "deadline":
        monkeypatch.setattr(forges, "LISTING_DEADLINE", 2.5)
    else:
        monkeypatch.setattr(forges, "MAX_RATE_WAITS", 2)
    engine = engine_for(forge, tmp_path)
    started = time.monotonic()
    with pytest.raises(GadError, match=r"rate limit for this token is spent until about \d\d:\d\d UTC; track the "
                                       r"organization again then"):
        engine.track_org(engine.org_owner(forge.owner_url("acme")))
    assert 2 <= time.monotonic() - started < 4.5  # two waits of 1 s, not five
    assert len(limited) == 3 and engine.projects() == {} and engine.repos() == []


@pytest.mark.parametrize("forge", ["github", "gitlab", "gitea"], indirect=True)
def test_clone_urls_off_the_forge_are_not_fetched(forge, tmp_path):
    from tests.forgestub import StubRepo

    forge.add("acme/web")
    url_key = "http_url_to_repo" if forge.kind == "gitlab" else "clone_url"
    rows = [dict(forge._row(StubRepo(n, f"acme/{name}")), **{url_key: url}) for n, (name, url) in enumerate(
        [("evil", "file:///etc"), ("ext", "ext::sh -c touch% /tmp/pwned"), ("meta", "http://169.254.169.254/x.git")])]
    forge.answers.append((200, {"Content-Type": "application/json"}, json.dumps(rows).encode()))
    engine = engine_for(forge, tmp_path)
    result = engine.track_org(engine.org_owner(forge.owner_url("acme")))
    assert result.repositories == 0 and len(result.refused) == 3
    assert "3 not fetched because its clone URL" in result.sentence()
    assert engine.repos() == []


@pytest.mark.parametrize("forge", ["github", "gitlab", "gitea"], indirect=True)
def test_a_huge_body_is_refused(forge, tmp_path):
    forge.answers.append((200, {"Content-Type": "application/json"}, b"[" + b" " * (50 * 1024 * 1024) + b"]"))
    engine = engine_for(forge, tmp_path)
    with pytest.raises(GadError, match="MB"):
        engine.track_org(engine.org_owner(forge.owner_url("acme")))
    assert engine.projects() == {}


def test_too_many_repositories_are_refused(forge, tmp_path):
    for n in range(4):
        forge.add(f"acme/r{n}", empty=True)
    engine = engine_for(forge, tmp_path, GAD_FORGE_MAX_REPOS="3")
    with pytest.raises(GadError, match="more than 3 repositories"):
        engine.track_org(engine.org_owner(forge.owner_url("acme")))
    assert engine.projects() == {} and engine.repos() == []


def test_an_index_from_before_organizations_is_upgraded(tmp_path, monkeypatch):
    """Migration 9 (forge_orgs) adds the organization tables to an older index; its repositories stay as they were."""
    import bot.store.tables.schema as index_module  # where the migrations live
    from bot.store.index import Index
    from bot.store.orgindex import OrgIndex

    path = tmp_path / "index.sqlite"
    (number,) = [m[0] for m in index_module.MIGRATIONS if m[1] == "forge_orgs"]
    old = [m for m in index_module.MIGRATIONS if m[0] < number]
    monkeypatch.setattr(index_module, "MIGRATIONS", old)
    monkeypatch.setattr(index_module, "SCHEMA_VERSION", number - 1)
    before = Index(path)
    # the row as that release wrote it (today's add_repo writes columns of later migrations)
    before.execute("INSERT INTO repos (name, source, mirror_path, in_place, created_at, guarded) "
                   "VALUES ('web', 'https://github.com/acme/web', 'mirrors/m', 0, '2026-01-01T00:00:00+00:00', 1)")
    before.close()
    monkeypatch.undo()
    after = Index(path)
    assert after.schema_version() == index_module.SCHEMA_VERSION
    assert [(r.name, r.guarded, r.audience) for r in after.repos()] == [("web", True, "everyone")]  # as it was
    rows = OrgIndex(after)
    org = rows.add_org("acme", "github.com", "github", "Acme", "https://github.com/Acme", False, True)
    assert rows.org_for("GitHub.com", "ACME") == org and org.owner == "acme"


# -- the faces ----------------------------------------------------------------------------------------


def test_track_an_organization_from_slack(forge, tmp_path, monkeypatch):
    """A signed `/gad track URL` -> Bolt -> the engine lists the loopback forge and tracks each repository ->
    one progress message, updated, then the answer replacing it; the project answers reports."""
    import dataclasses
    import time

    from bot.faces import slack as face_module
    from tests.slackstub import SlackStub
    from tests.test_surfaces import ADMIN, Bot, read

    forge.add("acme/web", commits=[("ann@acme.example", "2024-03-01"), ("bob@acme.example", "2024-03-02")])
    forge.add("acme/api", archived=True, commits=[("ann@acme.example", "2024-03-01")])
    forge.add("acme/fork", fork=True)
    with SlackStub() as stub:
        bot = Bot(tmp_path, stub)
        bot.engine.settings = dataclasses.replace(bot.settings, forges=Settings.from_env(
            {"GAD_FORGES": forge.forges_setting}).forges, https_tokens={"127.0.0.1": TOKEN})
        # The source policy and the egress guard refuse every loopback address (tested with public-looking
        # hosts in test_hostile_listings_from_slack_are_refused and tests/faults/test_egress.py); here the
        # face's flow is what is tested, so the listing and its clones are unguarded.
        monkeypatch.setattr(face_module, "check_remote_source", lambda text, policy: text)
        owner_of, track_org = bot.engine.org_owner, bot.engine.track_org
        monkeypatch.setattr(bot.engine, "org_owner", lambda url, guarded=False: owner_of(url))
        monkeypatch.setattr(bot.engine, "track_org", lambda owner, guarded=False, **k: track_org(owner, **k))
        ack, name = bot.slash(f"track {forge.owner_url('acme')}", user=ADMIN)
        assert ack["text"].startswith("Tracking") and "I will update this message as it goes" in ack["text"]
        deadline = time.monotonic() + 120
        while not any(b["text"].startswith("acme:") for b in stub.responses(name)) and time.monotonic() < deadline:
            time.sleep(0.05)
        bodies = stub.responses(name)
        final = bodies[-1]
        assert final["text"] == "acme: 2 repositories (1 archived), 1 fork left out."
        assert final["replace_original"] is True
        assert "Reports, compare and subscriptions can name `acme`" in read(final)
        assert all(b.get("replace_original") for b in bodies)  # progress updated in place, never repeated
        # tracked with the forge's token: only admins see it until one opens it (issue 31)
        assert "Only admins may see it for now (fetched with the operator's credentials" in read(final)
        assert "`/gad access acme everyone`" in read(final)
        assert "No repository or project named `acme` is tracked" in read(bot.ask("acme"))
        assert "Done: `acme` (organization) is seen by everyone" in read(bot.ask("access acme everyone", user=ADMIN))
        expected = oracle(forge, ["acme/web", "acme/api"])
        answer = bot.ask("acme")["text"]
        assert answer in [f"acme ({a} and {b}): 2GAD {expected} person-days, all history (2024-03-01 to 2024-03-02)"
                          for a, b in (("acme/api", "acme/web"), ("acme/web", "acme/api"))]


def test_track_an_organization_from_the_cli(forge, tmp_path):
    from click.testing import CliRunner

    from bot.faces.cli import cli

    forge.add("acme/web")
    forge.add("acme/fork", fork=True, commits=[("zed@else.example", "2024-06-01")])
    env = {"GAD_DATA_DIR": str(tmp_path / "data"), "GAD_FORGES": forge.forges_setting,
           "GAD_HTTPS_TOKENS": f"127.0.0.1={TOKEN}"}
    result = CliRunner().invoke(cli, ["track", forge.owner_url("acme"), "--forks"], env=env)
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[0] == "acme: 2 repositories."
    engine = Engine.open(Settings.from_env(env))
    assert gad(engine, "acme") == oracle(forge, ["acme/web", "acme/fork"])
    engine.index.close()
    forge.add("acme/new", commits=[("cy@acme.example", "2024-03-03")])
    synced = CliRunner().invoke(cli, ["sync", "acme"], env=env)
    assert synced.exit_code == 0, synced.output
    assert "acme: 3 repositories; `acme/new` is new in acme: now tracked." in synced.output.splitlines()


def test_a_guarded_listing_never_reaches_a_private_address(tmp_path):
    """An organization typed in Slack: its API requests go through the egress proxy, which refuses a forge whose
    name is (or resolves to) a loopback or private address; nothing is stored."""
    from tests.faults import StallServer

    with StallServer() as server:
        host = f"127.0.0.1:{server.port}"
        settings = Settings.from_env({"GAD_DATA_DIR": str(tmp_path / "data"),
                                      "GAD_FORGES": f"{host}=gitea:https://{host}/api/v1"})
        engine = Engine.open(settings)
        owner = engine.org_owner(f"https://{host}/acme", guarded=True)
        with pytest.raises(GadError, match="Listing the organization was stopped: .*127.0.0.1"):
            engine.track_org(owner, guarded=True)
        assert server.accepted == 0  # not a single connection reached it
    assert engine.projects() == {} and engine.repos() == []


def test_forks_on_is_part_of_the_one_grammar():
    from datetime import date

    from bot.engine.query import Track, parse_command

    assert parse_command("track https://github.com/acme forks:on", date(2026, 12, 4)) == \
        Track("https://github.com/acme", None, True)
    assert parse_command("track https://github.com/acme", date(2026, 12, 4)).forks is False


def test_each_periodic_sync_lists_the_organization_again_and_tells_its_channels(forge, tmp_path):
    """The scheduler's sync: the organization listed again; the channel subscribed to its project told, in one
    message, of each repository renamed, deleted upstream or new, as Slack received it."""
    from datetime import date

    from bot.digests import subscriptions as subs
    from bot.digests.schedule import DigestScheduler
    from bot.engine.query import parse_command
    from tests.slackstub import SlackStub

    web = forge.add("acme/web", commits=[("ann@acme.example", "2024-03-01")])
    api = forge.add("acme/api", commits=[("bob@acme.example", "2024-03-02")])
    with SlackStub() as stub:
        stub.add_channel("C1")
        engine = engine_for(forge, tmp_path, SLACK_BOT_TOKEN=stub.good_token, SLACK_API_URL=stub.api_url)
        engine.track_org(engine.org_owner(forge.owner_url("acme")))
        # tracked with the forge's token, so admins only at first; an admin opens it (closed: tests/test_audiences.py)
        engine.set_access("acme", Audience.parse("everyone"))
        subs.subscribe(engine, "C1", parse_command("subscribe acme", date(2026, 12, 4)))
        subs.subscribe(engine, "C2", parse_command("subscribe acme/web", date(2026, 12, 4)))
        forge.rename(web, "acme/website")
        forge.delete(api)
        forge.add("acme/new", commits=[("cy@acme.example", "2024-03-03")])
        RepoBuilder(forge.base / "acme/website.git", bare=True).commit(name="Dee", email="dee@acme.example",
                                                                       date="2024-05-05")  # a push
        scheduler = DigestScheduler(engine.settings, engine)
        scheduler.sync_all()  # the organization's repositories are fetched with it, in one batch
        (call,) = stub.calls_to("chat.postMessage")
        assert call.args["channel"] == "C1"
        assert call.args["text"] == (
            "acme changed on its forge:\n"
            "• `acme/web` was renamed or moved upstream: now `acme/website`, its history kept.\n"
            "• `acme/api` was deleted upstream: its history stays counted in acme.\n"
            "• `acme/new` is new in acme: now tracked.")
        assert subs.get(engine.index, "C2").repos == ("acme/website",)  # a subscription follows the rename
        stub.clear_calls()
        scheduler.sync_all()  # nothing changed: nothing said
        assert stub.calls_to("chat.postMessage") == []
    assert gad(engine, "acme") == oracle(forge, ["acme/website", "acme/new"]) + 2  # bob's day stays counted
    assert engine.repo("acme/website").commits == 2  # the push is in


def test_serve_lists_an_organization_in_a_sync_worker_and_tells_its_channels(forge, tmp_path):
    """In `serve` the periodic listing runs in the sync worker processes (bot/service/syncs.py): a new repository
    is cloned and indexed from there, and the worker tells the subscribed channel."""
    import time
    from datetime import date

    from bot.digests import subscriptions as subs
    from bot.engine.query import parse_command
    from bot.service.syncs import SyncQueue
    from tests.slackstub import SlackStub

    forge.add("acme/web", commits=[("ann@acme.example", "2024-03-01")])
    with SlackStub() as stub:
        stub.add_channel("C1")
        engine = engine_for(forge, tmp_path, SLACK_BOT_TOKEN=stub.good_token, SLACK_API_URL=stub.api_url)
        engine.track_org(engine.org_owner(forge.owner_url("acme")))
        engine.set_access("acme", Audience.parse("everyone"))  # an admin opens it (tracked with a token)
        subs.subscribe(engine, "C1", parse_command("subscribe acme", date(2026, 12, 4)))
        forge.add("acme/new", commits=[("cy@acme.example", "2024-03-03")])
        done = []
        queue = SyncQueue(engine.settings, workers=1, on_done=done.append)
        queue.start()
        try:
            assert queue.sync_orgs_due(["acme"]) == 1
            deadline = time.monotonic() + 120
            while not done and time.monotonic() < deadline:
                time.sleep(0.1)
        finally:
            queue.shutdown()
        assert [(d.job.kind, d.job.name, d.error) for d in done] == [("org-fetch", "acme", None)]
        (call,) = stub.calls_to("chat.postMessage")
        assert call.args["text"] == "acme changed on its forge:\n• `acme/new` is new in acme: now tracked."
    assert gad(engine, "acme") == oracle(forge, ["acme/web", "acme/new"])


def test_a_repository_that_cannot_be_cloned_fails_alone_and_is_tried_again(forge, tmp_path):
    from tests.forgestub import StubRepo

    forge.add("acme/web")
    forge.listed.append(StubRepo(99, "acme/missing"))  # listed, but the forge serves no such repository
    forge.add("acme/api", commits=[("cy@acme.example", "2024-03-03")])
    engine = engine_for(forge, tmp_path, GAD_FORGE_FETCHES="1")  # all three in one lane, one after another
    result = engine.track_org(engine.org_owner(forge.owner_url("acme")))
    assert result.repositories == 2 and [name for name, _ in result.failed] == ["acme/missing"]
    assert "; 1 could not be tracked (acme/missing: " in result.sentence()
    assert sorted(engine.projects()["acme"]) == ["acme/api", "acme/web"]
    assert gad(engine, "acme") == oracle(forge, ["acme/web", "acme/api"])
    forge.listed.pop(1)
    forge.add("acme/missing", commits=[("dee@acme.example", "2024-03-04")])
    forge.listed[-1].id = 99  # the same repository, now served
    again = engine.track_org(engine.org_owner(forge.owner_url("acme")))
    assert again.new == 1 and again.repositories == 3 and not again.failed


def test_kill_9_in_the_middle_keeps_what_is_finished_and_tracking_again_goes_on(forge, tmp_path):
    """`gad-bot track URL` killed (its whole process group) once some repositories are done: they stay
    tracked and counted; tracking again clones only the rest, and the figures equal git's."""
    import sqlite3
    import time

    from tests.faults import kill9, start_cli

    names = [f"acme/r{n:02d}" for n in range(12)]
    for n, name in enumerate(names):
        forge.add(name, commits=[(f"p{n % 5}@acme.example", f"2024-03-{n + 1:02d}"), ("ann@acme.example", "2024-04-01")])
    data = tmp_path / "data"
    env = {"GAD_FORGES": forge.forges_setting, "GAD_FORGE_FETCHES": "1"}
    proc = start_cli("track", forge.owner_url("acme"), data=data, **env)
    deadline = time.monotonic() + 120
    finished = 0
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            with sqlite3.connect(data / "index.sqlite", timeout=5) as db:
                finished = db.execute("SELECT count(*) FROM forge_org_repos WHERE state = 'tracked'").fetchone()[0]
        except sqlite3.Error:
            finished = 0
        if finished >= 3:
            break
        time.sleep(0.05)
    kill9(proc)
    assert 3 <= finished < len(names), "the track must be killed in the middle"
    forge.wait_idle()  # a clone the kill cut off may still be read and counted by the forge: count it before
    engine = engine_for(forge, tmp_path, GAD_FORGE_FETCHES="1")
    done_before = {r.name for r in engine.repos() if r.commits}
    assert len(done_before) >= finished
    clones_before = sum(1 for m, p, _ in forge.requests if "git-upload-pack" in p and m == "POST")
    result = engine.track_org(engine.org_owner(forge.owner_url("acme")))
    assert result.repositories == len(names) and not result.failed
    clones_after = sum(1 for m, p, _ in forge.requests if "git-upload-pack" in p and m == "POST")
    assert clones_after - clones_before <= len(names) - len(done_before)  # the finished ones are not cloned again
    assert gad(engine, "acme") == oracle(forge, names)


# -- an attacker's forge: every answer is a stranger's word ------------------------------------------

JSON = {"Content-Type": "application/json"}


def rows_of(forge: ForgeStub, full_names) -> bytes:
    """One page of the listing as the forge writes it, naming only `full_names` (already added)."""
    return json.dumps([forge._row(r) for r in forge.listed if r.full_name in full_names]).encode()


def refused_listing(forge: ForgeStub, tmp_path, sentence: str) -> Engine:
    """Track `acme` from the loopback forge, which must be refused with `sentence` (a regex), nothing stored."""
    engine = engine_for(forge, tmp_path)
    with pytest.raises(GadError, match=sentence):
        engine.track_org(engine.org_owner(forge.owner_url("acme")))
    assert engine.projects() == {} and engine.repos() == []
    return engine


@pytest.mark.parametrize("forge", ["github", "gitlab", "gitea"], indirect=True)
def test_a_json_nesting_bomb_is_one_sentence(forge, tmp_path):
    """200 KB of `[[[[...]]]]`: Python's JSON parser gives up with a RecursionError, which is no ValueError."""
    forge.answers.append((200, JSON, b"[" * 100_000 + b"]" * 100_000))
    refused_listing(forge, tmp_path, "did not answer the listing of `acme` with JSON gad-bot can read")


def test_a_rate_limit_reset_beyond_any_calendar_is_said_not_a_crash(forge, tmp_path):
    forge.add("acme/web")
    forge.answers.append((403, {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "9" * 30}, b"{}"))
    refused_listing(forge, tmp_path, "rate limit .* spent until about")


@pytest.mark.parametrize("forge", ["github", "gitlab"], indirect=True)
def test_pagination_that_goes_round_in_a_circle_is_refused(forge, tmp_path):
    """Each page's `next` is on the forge's own origin, but the pages lead back to one already sent."""
    from tests.forgestub import API_PREFIX

    for n in range(3):
        forge.add(f"acme/r{n}")
    if forge.kind == "github":
        first = f"http://{forge.host}{API_PREFIX['github']}/orgs/acme/repos?type=all&per_page=100"
        loop = [{"Link": f'<{first}&page=2>; rel="next"'}, {"Link": f'<{first}>; rel="next"'}]
    else:
        loop = [{"X-Next-Page": "2"}, {"X-Next-Page": "3"}, {"X-Next-Page": "2"}]
    forge.answers.extend((200, {**JSON, **headers}, rows_of(forge, ["acme/r0"])) for headers in loop)
    refused_listing(forge, tmp_path, "pointed the next page of the listing of `acme` back at a page it had already sent")
    assert len(forge.api_requests) == len(loop)


def test_a_next_page_on_another_host_is_never_asked(forge, tmp_path):
    with ForgeStub(tmp_path / "other", "github", token=TOKEN) as other:
        other.add("acme/evil")
        forge.add("acme/web")
        link = f'<http://{other.host}/api/v3/orgs/acme/repos?type=all&per_page=100&page=2>; rel="next"'
        forge.answers.append((200, {**JSON, "Link": link}, rows_of(forge, ["acme/web"])))
        refused_listing(forge, tmp_path, "next page of the listing of `acme` at another address")
        assert other.api_requests == []


def test_an_api_redirect_to_another_host_does_not_take_the_token(forge, tmp_path):
    """The token is the forge's: a redirect off the API's origin is refused before anything is sent there; one
    within it is followed, the token with it."""
    with ForgeStub(tmp_path / "other", "github", token=TOKEN) as other:
        other.add("acme/web")
        forge.answers.append((302, {"Location": f"http://{other.host}/api/v3/orgs/acme/repos?per_page=100"}, b""))
        engine = refused_listing(forge, tmp_path, "sent gad-bot to another address")
        assert other.api_requests == []
    forge.add("acme/web")
    moved = "/api/v3/orgs/acme/repos?type=all&per_page=100&moved=1"
    forge.answers.append((301, {"Location": moved}, b""))
    assert engine.track_org(engine.org_owner(forge.owner_url("acme"))).repositories == 1
    assert forge.api_requests[-1] == (moved, f"Bearer {TOKEN}")


def test_a_slow_loris_api_is_given_up_at_the_deadline(tmp_path, monkeypatch):
    """A forge that sends one byte every 50 ms answers every read in time: only a deadline on the whole request
    (bot.store.forges.REQUEST_DEADLINE, and LISTING_DEADLINE over all of them) stops the listing."""
    import time

    import bot.store.forges as forges
    from tests.faults import TrickleServer

    with TrickleServer(interval=0.05) as server:  # ~3.4 KB: 170 s without a deadline
        host = f"127.0.0.1:{server.port}"
        settings = Settings.from_env({"GAD_DATA_DIR": str(tmp_path / "data"),
                                      "GAD_FORGES": f"{host}=gitea:http://{host}/api/v1"})
        engine = Engine.open(settings)
        for request_deadline, listing_deadline in ((2.0, 600.0), (600.0, 2.0)):
            monkeypatch.setattr(forges, "REQUEST_DEADLINE", request_deadline)
            monkeypatch.setattr(forges, "LISTING_DEADLINE", listing_deadline)
            started = time.monotonic()
            with pytest.raises(GadError, match=f"API at 127.0.0.1 took more than 2 seconds to answer one request"):
                engine.track_org(engine.org_owner(f"http://{host}/acme"))
            assert time.monotonic() - started < 10
    assert engine.projects() == {} and engine.repos() == []


@pytest.mark.parametrize("forge", ["github", "gitlab", "gitea"], indirect=True)
def test_clone_urls_that_lead_elsewhere_are_not_fetched(forge, tmp_path):
    """A listing naming its repositories' clone URLs on another host or port, with credentials in them, over
    another scheme, as command-line options, or hiding a second URL behind a newline (urlsplit drops it)."""
    from tests.faults import GitHttpServer
    from tests.forgestub import StubRepo

    forge.add("acme/web")
    with GitHttpServer(tmp_path / "elsewhere") as elsewhere:
        RepoBuilder(tmp_path / "elsewhere" / "acme" / "web.git", bare=True).commit(name="Zed", email="z@x.example",
                                                                                   date="2024-01-01")
        good, there = forge.clone_url("acme/web"), elsewhere.url("acme/web.git")
        hostile = [f"http://ann:hunter2-PASSWORD@{forge.host}/acme/web.git", there,
                   f"http://localhost:{forge.port}/acme/web.git", f"https://{forge.host}/acme/web.git",
                   f"{good}?x=1", "--upload-pack=touch /tmp/gad-pwned", f"git@127.0.0.1:acme/web.git",
                   f"{good}\n{there}", f"{good} {there}"]
        url_key = "http_url_to_repo" if forge.kind == "gitlab" else "clone_url"
        rows = [dict(forge._row(StubRepo(n, f"acme/h{n}")), **{url_key: url}) for n, url in enumerate(hostile)]
        forge.answers.append((200, JSON, json.dumps(rows).encode()))
        engine = engine_for(forge, tmp_path)
        result = engine.track_org(engine.org_owner(forge.owner_url("acme")))
        assert result.repositories == 0 and len(result.refused) == len(hostile)
        assert engine.repos() == [] and elsewhere.requests == []
        assert not any("hunter2" in why for _, why in result.refused)
        assert "hunter2" not in result.sentence()


def test_hostile_names_and_refs_in_a_listing_stay_names(forge, tmp_path, canary):
    """Full names with `..`, a newline and 900 characters, and a repository whose default branch is named
    `--upload-pack=gadpwn`: each is tracked under a plain name inside the data directory, nothing runs, and the
    figures are git's."""
    from tests.forgestub import StubRepo

    names = ["acme/dots", "acme/newline", "acme/long"]
    for name in names:
        forge.add(name, commits=[(f"{name[5:]}@acme.example", "2024-03-01")])
    hostile_ref = RepoBuilder(forge.base / "acme" / "dots.git", bare=True)
    hostile_ref.commit("--upload-pack=gadpwn", name="Ann", email="ann@acme.example", date="2024-03-04")
    hostile_ref.set_head("--upload-pack=gadpwn")
    full_names = ["acme/../../../etc", "acme/new\nline--upload-pack=gadpwn", "acme/" + "x" * 900]
    rows = [dict(forge._row(StubRepo(n, name)), full_name=full_name)
            for n, (name, full_name) in enumerate(zip(names, full_names))]
    forge.answers.append((200, JSON, json.dumps(rows).encode()))
    engine = engine_for(forge, tmp_path)
    result = engine.track_org(engine.org_owner(forge.owner_url("acme")))
    assert result.repositories == 3 and not result.failed
    assert sorted(engine.projects()["acme"]) == ["acme/etc", "acme/new-line--upload-pack-gadpwn", "acme/" + "x" * 900]
    assert gad(engine, "acme") == oracle(forge, names)
    assert not canary.exists()
    data = (tmp_path / "data").resolve()
    assert all(repo.mirror_path.resolve().is_relative_to(data) for repo in engine.repos())


@pytest.mark.parametrize("value, fragment", [
    ("git.corp.example", "does not start with a host name"),
    ("=github", "does not start with a host name"),
    ("https://git.corp.example=gitlab", "does not start with a host name"),
    ("git.corp.example:99999=gitea", "does not start with a host name"),
    ("git.corp.example:0=gitea", "does not start with a host name"),
    ("git.corp.example=bitbucket", "of git.corp.example names no forge kind"),
    ("git.corp.example=gitlab:ftp://git.corp.example/api/v4", "API base that is not an http"),
    ("git.corp.example=github:https://git.corp.example:70000/api/v3", "API base that is not an http"),
    ("git.corp.example=github:https://x-token:ghp_SECRET@git.corp.example/api/v3", "API base that is not an http"),
    ("git.corp.example=github:https://git.corp.example/api/v3?token=ghp_SECRET", "API base that is not an http"),
])
def test_odd_gad_forges_values_are_one_sentence_without_what_was_pasted(value, fragment, tmp_path):
    """An entry that cannot be used is refused at start with a sentence naming the host at most: an API URL
    pasted with a token in it does not reach the log; a port out of range never reaches a connection."""
    from bot.errors import ConfigError

    with pytest.raises(ConfigError, match=fragment) as refused:
        Settings.from_env({"GAD_DATA_DIR": str(tmp_path), "GAD_FORGES": value})
    assert "SECRET" not in str(refused.value) and "e.g. git.corp.example=gitlab" in str(refused.value)


def test_gad_forges_as_an_operator_may_write_it(tmp_path):
    settings = Settings.from_env({"GAD_DATA_DIR": str(tmp_path), "GAD_FORGES": (
        " Git.Corp.Example = GitLab , ghe.corp.example:443=github:https://ghe.corp.example/api/v3/,"
        "tea.corp.example:3000=gitea:http://[fd00::1]:3000/api/v1")})
    assert settings.forges == (("git.corp.example", "gitlab", None),
                               ("ghe.corp.example", "github", "https://ghe.corp.example/api/v3"),
                               ("tea.corp.example:3000", "gitea", "http://[fd00::1]:3000/api/v1"))


@pytest.mark.parametrize("forge", ["github", "gitlab", "gitea"], indirect=True)
def test_a_huge_body_without_a_length_is_cut_off(forge, tmp_path):
    """50 MB sent chunked, with no Content-Length to refuse up front: reading stops past 8 MB."""
    sent = []

    def pieces():
        yield b"["
        for _ in range(50 * 16):  # 64 KB each
            sent.append(1)
            yield b" " * 65536
        yield b"]"

    forge.answers.append((200, JSON, pieces()))
    refused_listing(forge, tmp_path, "more than 8 MB for one page; gad-bot stopped reading")
    assert len(sent) < 50 * 16 / 2  # gad-bot hung up long before the forge was done


def test_an_organization_of_100000_repositories_is_refused_after_the_first_5000(forge, tmp_path):
    """GAD_FORGE_MAX_REPOS at its default: the listing stops at the page that passes 5,000, not after 1,000 pages."""
    from tests.forgestub import StubRepo

    forge.max_per_page = 100
    forge.listed.extend(StubRepo(n, f"acme/r{n}", empty=True) for n in range(100_000))
    refused_listing(forge, tmp_path, "acme has more than 5,000 repositories")
    assert len(forge.api_requests) == 51


@pytest.mark.parametrize("status", [401, 404, 500, 200])
def test_what_a_forge_answers_never_reaches_the_sentence_or_the_log(forge, tmp_path, caplog, status):
    """A forge that echoes the request's token in its error body: the sentence says what happened in gad-bot's
    words, and nothing of the body (nor the token) is in it or in the log, even at DEBUG."""
    import logging

    caplog.set_level(logging.DEBUG)
    forge.answers.append((status, JSON, json.dumps({"message": f"Bad credentials {TOKEN} BODY-MARKER"}).encode()))
    engine = engine_for(forge, tmp_path)
    with pytest.raises(GadError) as refused:
        engine.track_org(engine.org_owner(forge.owner_url("acme")))
    for text in (str(refused.value), caplog.text):
        assert TOKEN not in text and "BODY-MARKER" not in text
    assert forge.api_requests[0][1] == f"Bearer {TOKEN}"  # the forge did get the token: it was there to leak


@pytest.mark.parametrize("url", [
    "https://github.com/../acme", "https://github.com/%2e%2e", "https://github.com/acme?per_page=1",
    "https://github.com/acme#x", "https://ann:hunter2@github.com/acme", "https://github.com/ac%20me",
    "http://github.com/acme", "https://github.com:8443/acme", "https://github.com/" + "a" * 256,
    "https://github.com/acme/web", "https://github.com/acme/web.git", "ext::sh -c touch% /tmp/x", "file:///etc",
    "https://gitlab.com/group/../../admin", "https://gitlab.com/group/sub.git", "https://codeberg.org/org/../x",
])
def test_a_url_that_is_not_plainly_an_owner_is_not_an_organization(url):
    """What a member types is a stranger's text: only https://KNOWN-HOST/OWNER (GitLab: /GROUP/SUBGROUP...) made
    of plain segments names an organization; anything else goes the way of an ordinary source (and its policy)."""
    from bot.store.forges import Forges

    forges = Forges.from_entries(())
    assert forges.owner_of(url) is None
    assert forges.owner_of("https://GitHub.com/Acme").url == "https://github.com/Acme"  # the plain one is


def test_a_ref_name_longer_than_a_file_name_fails_that_repository_alone(forge, tmp_path):
    """A branch of 300 characters and a tag 4,200 deep, in packed-refs where git keeps them: no mirror can hold
    them as files, so that repository is not tracked (one sentence, tried again at the next sync); the rest of
    the organization is, with git's figures."""
    import pygit2

    forge.add("acme/web")
    forge.add("acme/long")
    path = forge.base / "acme" / "long.git"
    tip = pygit2.Repository(str(path)).references["refs/heads/main"].target
    with open(path / "packed-refs", "a") as packed:
        packed.write(f"{tip} refs/heads/{'x' * 300}\n{tip} refs/tags/{'y/' * 2100}z\n")
    engine = engine_for(forge, tmp_path)
    result = engine.track_org(engine.org_owner(forge.owner_url("acme")))
    assert result.repositories == 1 and [name for name, _ in result.failed] == ["acme/long"]
    assert "could not be tracked (acme/long: Fetching from" in result.sentence()
    assert str(tmp_path) not in result.sentence() and "'refs/heads/xxx" in result.sentence()  # the ref, not the server's path
    assert engine.projects()["acme"] == ["acme/web"]
    assert gad(engine, "acme") == oracle(forge, ["acme/web"])


def test_a_periodic_sync_indexes_what_changed_and_what_was_left_to_do_and_nothing_else(forge, tmp_path, monkeypatch):
    """The periodic sync of an organization (the listing, then every repository fetched): a repository pushed to
    and one whose changed paths an interrupted index left undone go to the index workers; one in which nothing
    changed does not (no worker process to start for it) and is marked synced all the same. Figures are git's."""
    from datetime import datetime, timedelta, timezone

    from bot.engine import lanes
    from bot.engine.query import Query

    for name in ("acme/pushed", "acme/same", "acme/unfinished"):
        forge.add(name)
    engine = engine_for(forge, tmp_path)
    engine.track_org(engine.org_owner(forge.owner_url("acme")))
    RepoBuilder(forge.base / "acme/pushed.git", bare=True).commit(name="Cy", email="cy@acme.example", date="2024-03-05")
    unfinished = engine.repo("acme/unfinished")
    with engine.index.transaction() as db:
        db.execute("UPDATE commit_chunks SET path_offsets = NULL, path_ids = NULL WHERE repo_id = ?", (unfinished.id,))
    assert engine.index.chunks_lacking_paths(unfinished.id)
    submitted: list[int] = []
    submit = lanes.IndexPool.submit
    monkeypatch.setattr(lanes.IndexPool, "submit", lambda pool, repo_id, fetch=False: submitted.append(repo_id) or
                        submit(pool, repo_id, fetch))
    before = datetime.now(timezone.utc) - timedelta(seconds=1)
    (result,) = engine.sync_orgs(fetch=True)
    assert not result.error and not result.failed
    assert sorted(submitted) == sorted([engine.repo("acme/pushed").id, unfinished.id])
    assert engine.repo("acme/same").last_sync_at >= before and engine.repo("acme/same").last_error is None
    assert engine.index.chunks_lacking_paths(unfinished.id) == []
    assert gad(engine, "acme") == oracle(forge, ["acme/pushed", "acme/same", "acme/unfinished"]) == 6
    assert engine.report(Query(repos=("acme/unfinished",), paths=("file1.txt",))).totals.two_gad == 2  # Ann's day


# -- issue 31: what a listing names ---------------------------------------------------------------------------------

HOSTILE_ID = "7\n<!channel> <https://evil.example|login> `x`"


def open_to_everyone(engine, *names: str) -> None:
    """What an admin's `gad-bot access NAME everyone` does: the channel may be told of them."""
    from bot.engine.audiences import Audience

    for name in names:
        engine.set_access(name, Audience.parse("everyone"))


def test_a_taken_name_takes_only_sanitised_parts_of_the_forges_id_and_the_news_is_escaped(forge, tmp_path):
    """A new repository whose name is taken (`acme/Web` beside the tracked `acme/web`) was tracked as the name plus
    the listing's `id`, raw: a newline, `<!channel>`, link markup and backticks landed in a tracked name, and the
    organization news posted it with its fallback `text` unescaped. The name is now made of sanitised parts only,
    and the news' text is escaped as its blocks are; the new repository's figures are git's."""
    from datetime import date

    from bot.digests import subscriptions as subs
    from bot.digests.schedule import DigestScheduler
    from bot.engine.query import parse_command
    from tests.slackstub import SlackStub

    forge.add("acme/web", commits=[("ann@acme.example", "2024-03-01")])
    with SlackStub() as stub:
        stub.add_channel("C1")
        engine = engine_for(forge, tmp_path, SLACK_BOT_TOKEN=stub.good_token, SLACK_API_URL=stub.api_url)
        engine.track_org(engine.org_owner(forge.owner_url("acme")))
        open_to_everyone(engine, "acme", "acme/web")  # fetched with a token, they start as admins
        subs.subscribe(engine, "C1", parse_command("subscribe acme", date(2026, 12, 4)))
        twin = forge.add("acme/Web", commits=[("bob@acme.example", "2024-03-02"), ("bob@acme.example", "2024-03-03")])
        twin.id = HOSTILE_ID
        DigestScheduler(engine.settings, engine).sync_all()
        (call,) = stub.calls_to("chat.postMessage")
    name = "acme/web-7-channel-https-evil.example-login-x"
    assert sorted(engine.projects()["acme"]) == ["acme/web", name]
    assert gad(engine, name) == oracle(forge, ["acme/Web"]) == 4
    assert call.args["text"] == f"acme changed on its forge:\n• `{name}` is new in acme: now tracked."
    assert call.args["blocks"][0]["text"]["text"] == call.args["text"]


def test_org_news_text_is_escaped_as_its_blocks_are(forge, tmp_path):
    """Whatever a change's name holds (a name the operator gave from the CLI is not checked), the notification
    text Slack reads `<!channel>` in is escaped exactly as the blocks are."""
    from bot.digests.orgnews import announce_org_changes
    from bot.engine.forgeorgs import OrgChange, OrgSyncResult
    from bot.store.orgindex import OrgIndex
    from tests.slackstub import SlackStub

    with SlackStub() as stub:
        engine = engine_for(forge, tmp_path, SLACK_BOT_TOKEN=stub.good_token, SLACK_API_URL=stub.api_url)
        OrgIndex(engine.index).add_org("acme", forge.host, "github", "acme", forge.owner_url("acme"), False, False)
        from datetime import date

        from bot.digests import subscriptions as subs
        from bot.engine.query import parse_command

        forge.add("acme/web")
        engine.track_org(engine.org_owner(forge.owner_url("acme")))
        open_to_everyone(engine, "acme")
        stub.add_channel("C1")
        subs.subscribe(engine, "C1", parse_command("subscribe acme", date(2026, 12, 4)))
        from bot.faces.slack import web_client

        result = OrgSyncResult("acme", 2, (OrgChange("acme", "new", "acme/<!channel>&<https://x.example|y>"),))
        announce_org_changes(engine.index, web_client(engine.settings), [result])
        (call,) = stub.calls_to("chat.postMessage")
    assert call.args["text"] == ("acme changed on its forge:\n• `acme/&lt;!channel&gt;&amp;&lt;https://x.example|y&gt;` "
                                 "is new in acme: now tracked.")
    assert call.args["blocks"][0]["text"]["text"] == call.args["text"]


@pytest.mark.parametrize("forge", ["github", "gitlab", "gitea"], indirect=True)
def test_an_organizations_repositories_stay_under_it_and_look_alikes_are_refused(forge, tmp_path):
    """Org `evil`'s listing names `victim/web` (on one of evil's clone URLs), `evil/x` whose clone URL is victim's
    (and two that reach it through `..`), and
    `evil/рlain` (a Cyrillic р) and `evil/ｐlain` (fullwidth) beside `evil/plain`, and a Cyrillic-only look-alike
    of the tracked `evil/payp`: only `evil/plain` is tracked, each other one said, nothing of the victim's fetched."""
    from tests.forgestub import StubRepo

    forge.add("victim/web", commits=[("vic@victim.example", "2024-01-01")])
    forge.add("evil/plain", commits=[("eve@evil.example", "2024-02-01")])
    forge.add("evil/payp", commits=[("eve@evil.example", "2024-02-02")])
    engine = engine_for(forge, tmp_path)
    assert engine.track_org(engine.org_owner(forge.owner_url("evil"))).repositories == 2
    url_key = "http_url_to_repo" if forge.kind == "gitlab" else "clone_url"
    name_key = "path_with_namespace" if forge.kind == "gitlab" else "full_name"
    listed = [forge._row(StubRepo(n, name)) for n, name in enumerate(["evil/plain", "evil/payp"], start=1)]
    listed[0]["id"], listed[1]["id"] = [r.id for r in forge.listed if r.full_name.startswith("evil/")]
    hostile = [("victim/web", forge.clone_url("evil/plain")), ("evil/x", forge.clone_url("victim/web")),
               ("evil/рlain", forge.clone_url("evil/plain")), ("evil/ｐlain", forge.clone_url("evil/plain")),
               ("evil/раур", forge.clone_url("evil/plain")), ("evil/y", forge.clone_url("evil/../victim/web")),
               ("evil/z", forge.clone_url("evil/%2e%2e/victim/web"))]
    for n, (name, url) in enumerate(hostile, start=100):
        listed.append(dict(forge._row(StubRepo(n, name)), **{name_key: name, url_key: url}))
    forge.answers.append((200, JSON, json.dumps(listed).encode()))
    result = engine.track_org(engine.org_owner(forge.owner_url("evil")))
    assert sorted(engine.projects()["evil"]) == ["evil/payp", "evil/plain"]
    assert sorted(r.name for r in engine.repos()) == ["evil/payp", "evil/plain"]
    why = dict(result.refused)
    assert why["victim/web"] == "it is named outside evil; gad-bot tracks only the organization's own repositories"
    assert why["evil/x"].endswith("is not under evil; gad-bot only fetches the organization's own repositories")
    assert why["evil/рlain"] == "its name mixes letters of several scripts (Cyrillic, Latin)"
    assert why["evil/ｐlain"].startswith("its name holds compatibility characters")
    assert why["evil/раур"] == "its name looks like `evil/payp` but is spelled with other letters"
    assert why["evil/y"].endswith("is not under evil; gad-bot only fetches the organization's own repositories")
    assert why["evil/z"].endswith("is not under evil; gad-bot only fetches the organization's own repositories")
    assert not any("victim" in path for _, path, _ in forge.requests)  # nothing of the victim's was fetched


@pytest.mark.parametrize("lanes", ["1", "8"])
def test_two_entries_of_one_name_in_one_listing_are_both_tracked(forge, tmp_path, lanes):
    """`acme/Web` and `acme/web` (two repositories: a forge compares names with case, gad-bot's names are lower case)
    in one listing were given one name and raced on one staging directory: one or both failed at random. Each now
    has a name of its own and a mirror of its own; each figure is git's."""
    forge.add("acme/Web", commits=[("ann@acme.example", "2024-03-01")])
    forge.add("acme/web", commits=[("bob@acme.example", "2024-03-02"), ("bob@acme.example", "2024-03-03")])
    engine = engine_for(forge, tmp_path, GAD_FORGE_FETCHES=lanes)
    result = engine.track_org(engine.org_owner(forge.owner_url("acme")))
    assert result.failed == () and result.repositories == 2
    upper, lower = [r.id for r in forge.listed]
    by_name = {r.name: r for r in engine.repos()}
    assert sorted(by_name) == ["acme/web", f"acme/web-{lower}"]
    assert gad(engine, "acme/web") == oracle(forge, ["acme/Web"]) == 2
    assert gad(engine, f"acme/web-{lower}") == oracle(forge, ["acme/web"]) == 4
    assert len({r.mirror_path for r in by_name.values()}) == 2
