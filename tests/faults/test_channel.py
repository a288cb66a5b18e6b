"""Issue 11, parts 6 and 7: who may change a channel's digest, and what people who are not admins see.

A real `gad-bot serve` takes signed slash commands from the Slack stand-in; what people read is
what the stand-in's response_urls received.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.faults import Serve, run_cli, track_here
from tests.gitbuild import RepoBuilder
from tests.slackstub import SlackStub

ADMIN, OTHER_ADMIN, MEMBER = "UADMIN01", "UADMIN02", "UMEMBER1"


@pytest.fixture
def stub():
    with SlackStub() as running:
        yield running


@pytest.fixture
def source(tmp_path) -> Path:
    upstream = RepoBuilder(tmp_path / "srv" / "web-source")
    upstream.commit(email="ann@example.com", date="2024-01-02")
    return upstream.path


@pytest.fixture
def data(tmp_path, source) -> Path:
    path = tmp_path / "data"
    track_here(str(source), "web", path)
    return path


def _ask(serve: Serve, stub, text: str, user: str, name: str) -> dict:
    status, body, took = serve.post(stub.slash_fields(text, response_name=name, user_id=user))
    assert status == 200 and took < 3
    return stub.wait_for_response(name, timeout=15)[-1]


def test_anyone_may_change_a_digest_and_everyone_is_told(data, stub, tmp_path):
    """GAD_SUBSCRIBERS=anyone (the default): a member undoes an admin's digest, in plain sight."""
    with Serve(data, stub, logs=tmp_path / "logs", GAD_ADMINS=ADMIN) as serve:
        made = _ask(serve, stub, "subscribe web", ADMIN, "sub")
        removed = _ask(serve, stub, "unsubscribe all", MEMBER, "unsub")
        nothing = _ask(serve, stub, "unsubscribe all", MEMBER, "again")
        assert serve.stop() == 0
    print(made["text"], "|", removed["text"], "|", nothing["text"])
    assert made["response_type"] == "in_channel"
    assert made["blocks"][0]["text"]["text"].startswith(f"<@{ADMIN}> subscribed this channel to `web`.")
    assert removed["response_type"] == "in_channel"
    assert removed["blocks"][0]["text"]["text"].startswith(
        f"<@{MEMBER}> unsubscribed this channel from its weekly digest (it covered `web`).")
    assert nothing["response_type"] == "ephemeral"  # no change, nothing to announce


def test_only_admins_may_change_a_digest_when_the_operator_says_so(data, stub, tmp_path):
    with Serve(data, stub, logs=tmp_path / "logs", GAD_ADMINS=f"{ADMIN},{OTHER_ADMIN}",
               GAD_SUBSCRIBERS="admins") as serve:
        made = _ask(serve, stub, "subscribe web", ADMIN, "sub")
        refused = _ask(serve, stub, "unsubscribe all", MEMBER, "unsub")
        status, body, _ = serve.post(stub.slash_fields("track https://github.com/o/n", response_name="track",
                                                       user_id=MEMBER))
        assert status == 200
        track = json.loads(body)  # refused in the ack itself (issue 18), before "Tracking ..." is said
        still = _ask(serve, stub, "subscriptions", MEMBER, "list")
        assert serve.stop() == 0
    print(refused["blocks"][0]["text"]["text"])
    assert made["response_type"] == "in_channel"
    assert refused["response_type"] == "ephemeral"
    # gad-bot's own mentions of the admins are real mentions; before: `&lt;@UADMIN01&gt;`
    assert refused["blocks"][0]["text"]["text"] == (
        f":warning: Only the people gad-bot's operator listed can change this channel's digest "
        f"(<@{ADMIN}>, <@{OTHER_ADMIN}>); ask one of them.")
    assert refused["text"] == (f"Only the people gad-bot's operator listed can change this channel's digest "
                               f"(<@{ADMIN}>, <@{OTHER_ADMIN}>); ask one of them.")  # the notification too
    assert f"(<@{ADMIN}>, <@{OTHER_ADMIN}>); ask one of them." in track["blocks"][0]["text"]["text"]
    assert "`web`" in json.dumps(still)  # the digest is still there


def test_repos_shows_server_paths_to_admins_only(data, stub, tmp_path, source):
    shutil.move(source, tmp_path / "moved-away")  # the next sync fails, and its error names paths
    assert run_cli("sync", "web", data=data).returncode == 1
    with Serve(data, stub, logs=tmp_path / "logs", GAD_ADMINS=ADMIN) as serve:
        member = json.dumps(_ask(serve, stub, "repos", MEMBER, "member"))
        admin = json.dumps(_ask(serve, stub, "repos", ADMIN, "admin"))
        assert serve.stop() == 0
    print(member)
    assert str(source) in admin and str(tmp_path) in admin
    assert str(tmp_path) not in member and "/srv/" not in member and "data/mirrors" not in member
    assert "a directory on the gad-bot server" in member and "`web`" in member


def _reference(message: dict) -> str:
    """The reference id an error message gives (`error_blocks` shows it as `reference abc12345`)."""
    import re

    found = re.search(r"\b([0-9a-f]{8})\b", json.dumps(message))
    assert found, message
    return found.group(1)


def test_server_paths_and_the_rules_file_reach_admins_only(data, stub, tmp_path):
    """Issue 22: `/gad gone vs:cocomo` with a missing mirror named the mirror's path, and a
    malformed GAD_ORG_FILE its path and offending line, to anyone. Members now get a sentence and
    a reference id (the detail is logged under it); admins get the detail."""
    other = RepoBuilder(tmp_path / "srv" / "gone-source")
    other.commit(email="bo@example.com", date="2024-01-03")
    track_here(str(other.path), "gone", data)
    [mirror] = (data / "mirrors").glob("gone-*.git")
    shutil.rmtree(mirror)
    rules = tmp_path / "secret-rules" / "orgs.txt"
    rules.parent.mkdir()
    rules.write_text("intel.com Intel\nlocalhost Internal-Codename-Zebra\n")
    answers = {}
    with Serve(data, stub, logs=tmp_path / "logs", GAD_ADMINS=ADMIN) as serve:
        for who, user in (("member", MEMBER), ("admin", ADMIN)):
            answers["mirror", who] = json.dumps(_ask(serve, stub, "gone vs:cocomo", user, f"mirror-{who}"))
        assert serve.stop() == 0
    mirror_log = serve.stderr
    with Serve(data, stub, logs=tmp_path / "logs-2", GAD_ADMINS=ADMIN, GAD_ORG_FILE=str(rules)) as serve:
        for who, user in (("member", MEMBER), ("admin", ADMIN)):
            answers["rules", who] = json.dumps(_ask(serve, stub, "web by:org", user, f"rules-{who}"))
        assert serve.stop() == 0
    rules_log = serve.stderr
    print(answers)
    for what, log in (("mirror", mirror_log), ("rules", rules_log)):
        member = answers[what, "member"]
        assert str(tmp_path) not in member and "mirrors" not in member and "orgs.txt" not in member
        assert "line 2" not in member and "Zebra" not in member and "localhost" not in member
        assert "operator" in member
        reference = _reference(json.loads(member))
        detailed = [line for line in log.splitlines() if reference in line]
        assert detailed and (str(mirror) in detailed[0] if what == "mirror" else "line 2" in detailed[0])
    assert str(mirror) in answers["mirror", "admin"]  # an admin sees what to fix
    assert str(rules) in answers["rules", "admin"] and "line 2" in answers["rules", "admin"]
