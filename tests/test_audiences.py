"""Who may see what (issue 31), in the engine: audiences parsed, viewers checked, names hidden, projects trimmed.

Expected figures come from git (tests/gitbuild.oracle_pairs), never from the engine; the faces' tests (through
signed requests and the Slack stand-in) are in tests/test_access_faces.py.
"""

from __future__ import annotations

import dataclasses

import pytest

from bot.config import Settings
from bot.engine.audiences import ADMINS_AUDIENCE, EVERYONE_AUDIENCE, OPERATOR, Audience, Viewer, slack_id
from bot.engine.query import parse_query
from bot.errors import PermissionDeniedError, QueryError, UnknownRepoError
from tests.conftest import TODAY
from tests.gitbuild import RepoBuilder, oracle_pairs

MEMBER = Viewer("U1", member=True)  # a full member of the workspace, in no channel or group an audience names
ENG = Viewer("U2", member=True, within=frozenset({"U2", "C0ENG"}))  # in #eng
GUEST = Viewer("U3", member=False, guest=True, within=frozenset({"U3"}))  # a guest: never part of `everyone`
GUEST_IN_ENG = Viewer("U4", member=False, guest=True, within=frozenset({"U4", "C0ENG"}))
ADMIN = Viewer("U9", admin=True, member=True)


@pytest.mark.parametrize("stored, everyone, ids", [
    (None, True, ()),  # rows written before audiences existed
    ("everyone", True, ()),
    ("admins", False, ()),
    ("C0ENG S0BACK U0ANA", False, ("C0ENG", "S0BACK", "U0ANA")),
    ("U0ANA C0ENG U0ANA", False, ("C0ENG", "U0ANA")),
    ("", False, ()),  # unreadable: admins only (fail closed)
    ("C0ENG <script>", False, ()),
])
def test_stored_audiences_parse_and_anything_unreadable_is_admins_only(stored, everyone, ids):
    audience = Audience.parse(stored)
    assert (audience.everyone, audience.ids) == (everyone, ids)


@pytest.mark.parametrize("words, text", [
    (["everyone"], "everyone"),
    (["Admins"], "admins"),
    (["<#C0ENG|eng>", "<!subteam^S0BACK|@backend>", "<@U0ANA>"], "C0ENG S0BACK U0ANA"),
    (["C0ENG", "<#C0ENG>"], "C0ENG"),
])
def test_what_an_admin_types_becomes_an_audience(words, text):
    assert Audience.from_words(words).text() == text


@pytest.mark.parametrize("words, said", [
    ([], "Say who may see it"),
    (["everyone", "C0ENG"], "stand alone"),
    (["#eng"], "is not a channel, user group or person"),
    (["C0ENG", "bob"], "`bob` is not a channel"),
])
def test_a_wrong_audience_gets_one_sentence(words, said):
    with pytest.raises(QueryError) as refused:
        Audience.from_words(words)
    assert said in str(refused.value)


def test_slack_ids_are_read_from_every_form_slack_sends():
    assert [slack_id(w) for w in ("<#C0ENG|eng>", "<@U0ANA|ana>", "<!subteam^S0BACK|@backend>", "W0GRID", "eng")] \
        == ["C0ENG", "U0ANA", "S0BACK", "W0GRID", None]


@pytest.mark.parametrize("viewer, everyone, admins, eng_list", [
    (MEMBER, True, False, False),
    (ENG, True, False, True),
    (GUEST, False, False, False),  # a guest is not `everyone`
    (GUEST_IN_ENG, False, False, True),  # ... but sees what names a channel they are in
    (ADMIN, True, True, True),
    (OPERATOR, True, True, True),
    (Viewer.of_channel("C0ENG", shared_outside=False), True, False, True),
    (Viewer.of_channel("C0EXT", shared_outside=True), False, False, False),  # shared with another company
    (Viewer.of_channel("C0ENG", shared_outside=True), False, False, True),  # named in the audience itself
])
def test_who_sees_which_audience(viewer, everyone, admins, eng_list):
    seen = [viewer.sees(a) for a in (EVERYONE_AUDIENCE, ADMINS_AUDIENCE, Audience(False, ("C0ENG",)))]
    assert seen == [everyone, admins, eng_list]


# -- the engine ------------------------------------------------------------------------------------


@pytest.fixture
def two(tmp_path, engine):
    """`web` (open to everyone) and `vault` (open to #eng), and a project `all` of both; figures from git."""
    web, vault = RepoBuilder(tmp_path / "web"), RepoBuilder(tmp_path / "vault")
    web.commit(name="Ann", email="ann@corp.example", date="2024-03-04T10:00")
    web.commit(name="Bob", email="bob@corp.example", date="2024-03-05T10:00")
    vault.commit(name="Ann", email="ann@corp.example", date="2024-03-04T16:00")  # Ann's day again: counted once
    vault.commit(name="Cy", email="cy@corp.example", date="2024-03-06T09:00", offset=120)
    engine.track(str(web.path), "web")
    engine.track(str(vault.path), "vault")
    engine.set_access("vault", Audience(False, ("C0ENG",)))
    engine.project_add("all", ["web", "vault"])
    return engine, web, vault


def _person_days(*builders) -> int:
    return 2 * len(set().union(*(oracle_pairs(b.path) for b in builders)))


def test_a_member_outside_the_audience_is_answered_as_if_it_were_not_tracked(two):
    engine, web, vault = two
    with pytest.raises(UnknownRepoError) as unknown:
        engine.report(parse_query(["vault"], TODAY), TODAY, viewer=MEMBER)
    # word for word what a name that was never tracked gets, offering only what the member may see
    assert str(unknown.value) == str(UnknownRepoError("vault", ["web", "all"])) == \
        "No repository or project named `vault` is tracked; did you mean `all`?"
    assert "vault" not in engine.known_names(MEMBER) and "web" in engine.known_names(MEMBER)
    assert [r.name for r in engine.repos(MEMBER)] == ["web"]
    assert [r.name for r in engine.repos(GUEST)] == []  # a guest sees no `everyone` repository either


def test_a_typo_never_suggests_what_the_person_may_not_see(two):
    engine, _, _ = two
    with pytest.raises(UnknownRepoError) as typo:
        engine.report(parse_query(["vaul"], TODAY), TODAY, viewer=MEMBER)
    assert "vault" not in str(typo.value)
    with pytest.raises(UnknownRepoError) as insider:
        engine.report(parse_query(["vaul"], TODAY), TODAY, viewer=ENG)
    assert "vault" in str(insider.value)  # the same typo by someone in #eng is offered it


def test_an_insider_reads_the_figures_git_gives(two):
    engine, web, vault = two
    report = engine.report(parse_query(["vault"], TODAY), TODAY, viewer=ENG)
    assert report.totals.two_gad == _person_days(vault) == 4
    assert report.notes == () or all("restricted" not in n for n in report.notes)


def test_a_project_counts_only_what_the_viewer_may_see_and_says_how_many_it_left_out(two):
    engine, web, vault = two
    outside = engine.report(parse_query(["all"], TODAY), TODAY, viewer=MEMBER)
    inside = engine.report(parse_query(["all"], TODAY), TODAY, viewer=ENG)
    assert outside.totals.two_gad == _person_days(web) == 4
    assert inside.totals.two_gad == _person_days(web, vault) == 6  # Ann's 2024-03-04 once
    assert "1 of `all`'s repositories are left out: you are not in their audience." in outside.notes
    assert not any("left out" in n for n in inside.notes)
    assert engine.projects(MEMBER) == {"all": ["web"]} and engine.projects(ENG) == {"all": ["vault", "web"]}


def test_a_compare_item_the_viewer_may_not_see_is_unknown(two):
    from bot.engine.query import parse_command

    engine, _, _ = two
    command = parse_command("compare web vault", TODAY)
    with pytest.raises(UnknownRepoError):
        engine.compare(command, TODAY, viewer=MEMBER)
    rows = engine.compare(command, TODAY, viewer=ENG).rows
    assert [r.item for r in rows] == ["web", "vault"]


def test_an_admin_sees_everything_and_is_told_what_is_restricted(two):
    engine, _, vault = two
    report = engine.report(parse_query(["vault"], TODAY), TODAY, viewer=ADMIN)
    assert report.totals.two_gad == _person_days(vault)
    assert "`vault` is restricted: this answer is yours, and Share posts it only in a channel of its audience " \
           "(`/gad access vault` says who may see it)." in report.notes
    cli = engine.report(parse_query(["vault"], TODAY), TODAY)  # the operator at the shell: no such note
    assert not any("restricted" in n for n in cli.notes)


def test_an_organization_or_project_audience_hides_the_project_name(two):
    engine, _, _ = two
    engine.set_access("all", ADMINS_AUDIENCE)
    with pytest.raises(UnknownRepoError):
        engine.report(parse_query(["all"], TODAY), TODAY, viewer=ENG)
    assert "all" not in engine.known_names(ENG) and engine.projects(ENG) == {}
    assert engine.report(parse_query(["all"], TODAY), TODAY, viewer=ADMIN).totals.two_gad == 6


def test_access_reads_back_what_was_set(two):
    engine, _, _ = two
    access = engine.access("vault")
    assert (access.kind, access.audience.text(), access.follows) == ("repository", "C0ENG", None)
    assert engine.access("all").kind == "project"
    with pytest.raises(UnknownRepoError):
        engine.access("nosuch")


def test_person_detail_for_admins_only(tmp_path, two):
    engine, web, vault = two
    strict = dataclasses.replace(engine.settings, person_detail="admins")
    from bot.engine.engine import Engine

    engine = Engine(strict, index=engine.index)
    ann = Viewer("U5", member=True, emails=("ann@corp.example",))
    by_person = engine.report(parse_query(["web", "by:person"], TODAY), TODAY, viewer=MEMBER)
    assert by_person.rows == () and by_person.by is None and by_person.totals.two_gad == 4
    assert any("Figures per person are for admins here" in n for n in by_person.notes)
    with pytest.raises(PermissionDeniedError) as other:
        engine.report(parse_query(["web", "author:bob@corp.example"], TODAY), TODAY, viewer=ann)
    assert "for admins here" in str(other.value)
    own = engine.report(parse_query(["web", "author:ann@corp.example", "by:person"], TODAY), TODAY, viewer=ann)
    assert [(r.key, r.totals.two_gad) for r in own.rows] == [("ann@corp.example", 2)]
    admin = engine.report(parse_query(["web", "by:person"], TODAY), TODAY, viewer=ADMIN)
    assert sorted(r.key for r in admin.rows) == ["ann@corp.example", "bob@corp.example"]


@pytest.mark.parametrize("source, env, audience", [
    ("https://github.com/acme/web.git", {}, "everyone"),
    ("https://github.com/acme/web.git", {"GAD_HTTPS_TOKENS": "github.com=t0ken"}, "admins"),
    ("https://git.corp.example/acme/web.git", {"GAD_HTTPS_TOKENS": "github.com=t0ken"}, "everyone"),
    ("https://ci:secret@git.corp.example/acme/web.git", {}, "admins"),  # a password in the URL
    ("ssh://git@git.corp.example/acme/web.git", {"GAD_SSH_KEY": "/keys/id"}, "admins"),
    ("git@git.corp.example:acme/web.git", {"GAD_SSH_KEY": "/keys/id"}, "admins"),
    ("git://git.corp.example/acme/web.git", {}, "everyone"),
    ("/srv/git/web", {}, "everyone"),  # a local path: the operator's own
])
def test_the_first_audience_of_a_repository(tmp_path, source, env, audience):
    from bot.engine.engine import Engine

    engine = Engine(Settings.from_env({"GAD_DATA_DIR": str(tmp_path / "data"), **env}))
    assert engine.tracking.first_audience(source, in_place=False).text() == audience


def test_a_repository_tracked_from_a_local_path_is_open_to_everyone(tmp_path, engine):
    web = RepoBuilder(tmp_path / "web")
    web.commit()
    engine.track(str(web.path), "web")
    assert engine.repo("web").audience == "everyone"
    assert [r.name for r in engine.repos(MEMBER)] == ["web"]


# -- the upgrade, doctor and the operator's CLI ----------------------------------------------------------


def test_an_upgrade_keeps_what_was_tracked_open_says_so_once_and_doctor_says_it_until_an_admin_looks(
        tmp_path, monkeypatch, caplog):
    import bot.store.tables.schema as schema
    from bot.engine.engine import Engine
    from bot.faces.doctor import check_audiences
    from bot.store.index import Index
    from tests.faults import run_cli

    data = tmp_path / "data"
    (number,) = [m[0] for m in schema.MIGRATIONS if m[1] == "audiences"]
    old = [m for m in schema.MIGRATIONS if m[0] < number]  # the schema as the release before audiences left it
    monkeypatch.setattr(schema, "MIGRATIONS", old)
    monkeypatch.setattr(schema, "SCHEMA_VERSION", old[-1][0])
    before = Index(data / "index.sqlite")  # as the release before audiences wrote it
    for name in ("web", "api"):
        before.execute("INSERT INTO repos (name, source, mirror_path, in_place, created_at) VALUES "
                       "(?, ?, ?, 0, '2026-01-01T00:00:00+00:00')", (name, f"https://github.com/acme/{name}",
                                                                    f"mirrors/{name}"))
    before.close()
    monkeypatch.undo()
    with caplog.at_level("WARNING"):
        engine = Engine(Settings.from_env({"GAD_DATA_DIR": str(data)}))
        Engine(Settings.from_env({"GAD_DATA_DIR": str(data)}))  # opened again: said once only
    said = [r.getMessage() for r in caplog.records if "before audiences existed" in r.getMessage()]
    assert said == ["2 repositories tracked before audiences existed stay open to everyone in the workspace, as they "
                    "were; review who may see each with `gad-bot access NAME` (docs/operations.md)"]
    assert [r.audience for r in engine.repos()] == ["everyone", "everyone"]  # as before the upgrade
    (check,) = check_audiences(engine)
    assert check.warning and check.what.startswith("2 repositories tracked before audiences existed are open")
    done = run_cli("access", "web", "admins", data=data)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "web (repository) is seen by: admins only.\n"
    assert check_audiences(Engine(Settings.from_env({"GAD_DATA_DIR": str(data)}))) == []
    shown = run_cli("access", "api", data=data)
    assert shown.stdout.startswith("api (repository) is seen by: everyone in the workspace")
    wrong = run_cli("access", "api", "#eng", data=data)
    assert wrong.returncode == 2 and wrong.stderr.startswith("gad-bot: `#eng` is not a channel, user group or person")
    assert run_cli("access", "api", "C0ENG", "U0ANA", data=data).stdout == "api (repository) is seen by: C0ENG, U0ANA.\n"


def test_an_organizations_private_repositories_keep_admins_while_it_opens(tmp_path):
    """A forge org tracked with a token starts as admins; opened to everyone, its public repositories follow and its
    private one keeps `admins` of its own (tests/forgestub.py serves GitHub's REST API on loopback)."""
    from bot.engine.engine import Engine
    from tests.forgestub import ForgeStub

    with ForgeStub(tmp_path / "srv", "github", token="forge-token") as forge:
        forge.add("acme/web", commits=[("ann@acme.example", "2024-03-01")])
        forge.add("acme/secret", commits=[("bob@acme.example", "2024-03-02")], private=True)
        engine = Engine(Settings.from_env({"GAD_DATA_DIR": str(tmp_path / "data"), "GAD_FORGES": forge.forges_setting,
                                           "GAD_HTTPS_TOKENS": "127.0.0.1=forge-token"}))
        org = engine.track_org(engine.org_owner(forge.owner_url("acme"))).org
    assert {r.name: (r.audience, r.audience_own) for r in engine.repos()} == {
        "acme/web": ("admins", False), "acme/secret": ("admins", True)}
    opened = engine.set_access(org, EVERYONE_AUDIENCE)
    assert (opened.kind, opened.own) == ("organization", ("acme/secret",))
    assert [r.name for r in engine.repos(MEMBER)] == ["acme/web"]
    assert engine.access("acme/web").follows == org and engine.access("acme/secret").follows is None
    report = engine.report(parse_query([org], TODAY), TODAY, viewer=MEMBER)
    assert "1 of `acme`'s repositories are left out: you are not in their audience." in report.notes


def test_a_repository_made_private_on_the_forge_closes_to_admins_at_the_next_listing(tmp_path):
    """Opened with its organization while public, `acme/plans` is then made private upstream (a security fix under
    way): its new history is fetched with the operator's token, so the next listing closes it to admins, as if it had
    been private when first listed; an admin may open it again, and a later listing leaves that be."""
    from bot.engine.engine import Engine
    from tests.forgestub import ForgeStub

    with ForgeStub(tmp_path / "srv", "github", token="forge-token") as forge:
        forge.add("acme/web", commits=[("ann@acme.example", "2024-03-01")])
        plans = forge.add("acme/plans", commits=[("bob@acme.example", "2024-03-02")])
        engine = Engine(Settings.from_env({"GAD_DATA_DIR": str(tmp_path / "data"), "GAD_FORGES": forge.forges_setting,
                                           "GAD_HTTPS_TOKENS": "127.0.0.1=forge-token"}))
        org = engine.track_org(engine.org_owner(forge.owner_url("acme"))).org
        engine.set_access(org, EVERYONE_AUDIENCE)
        assert [r.name for r in engine.repos(MEMBER)] == ["acme/plans", "acme/web"]
        plans.private = True
        engine.sync_orgs([org])
        assert [r.name for r in engine.repos(MEMBER)] == ["acme/web"]
        assert engine.access("acme/plans").audience == ADMINS_AUDIENCE and engine.access("acme/plans").follows is None
        with pytest.raises(UnknownRepoError):
            engine.report(parse_query(["acme/plans"], TODAY), TODAY, viewer=MEMBER)
        engine.set_access("acme/plans", EVERYONE_AUDIENCE)  # an admin opens it, knowing
        engine.sync_orgs([org])
        assert [r.name for r in engine.repos(MEMBER)] == ["acme/plans", "acme/web"]
