"""The /gad command through a real Bolt app: signed requests dispatched, answers on a loopback Slack."""

from __future__ import annotations

import json
import time

import pytest
from slack_bolt.request import BoltRequest

from bot.config import Settings
from bot.engine.engine import Engine
from bot.faces.slack import build_app
from tests.conftest import TODAY
from tests.gitbuild import RepoBuilder
from tests.slackstub import SlackStub, block_actions_payload, signed_interaction, signed_slash_command

SECRET = "s3cr3t-signing-secret-for-tests"


@pytest.fixture
def stub():
    with SlackStub() as running:
        yield running


@pytest.fixture
def bot(tmp_path, stub):
    upstream = RepoBuilder(tmp_path / "web")
    upstream.commit(email="ann@example.com", date="2024-01-02")
    upstream.commit(email="bob@example.com", date="2024-01-03")
    upstream.commit(email="ann@example.com", date="2024-02-01")
    settings = Settings.from_env({"GAD_DATA_DIR": str(tmp_path / "data"), "SLACK_BOT_TOKEN": stub.good_token,
                                  "SLACK_SIGNING_SECRET": SECRET, "SLACK_API_URL": stub.api_url,
                                  "GAD_ADMINS": "UADMIN"})
    engine = Engine.open(settings)
    engine.track(str(upstream.path), "web")
    app, face = build_app(settings, engine, socket_mode=False, today=lambda: TODAY)
    return app, engine


def dispatch(app, stub, text, *, user="U123", timestamp=None, secret=SECRET, name=None):
    fields = stub.slash_fields(text, user_id=user, response_name=name)
    body, headers = signed_slash_command(secret, fields, timestamp=timestamp)
    response = app.dispatch(BoltRequest(body=body.decode(), headers={k.lower(): v for k, v in headers.items()}))
    return response, fields["response_url"].rsplit("/", 1)[-1]


def ack_body(response) -> dict:
    return json.loads(response.body) if response.body else {}


def answer(stub, name, timeout: float = 10) -> dict:
    """The answer at a response_url: where a report stands in the queue ("Queued: ...") is a notice before it."""
    count = 1
    while True:
        got = stub.wait_for_response(name, count=count, timeout=timeout)
        answers = [m for m in got if not str(m.get("text", "")).startswith("Queued:")]
        if answers:
            return answers[-1]
        count = len(got) + 1


def all_text(message: dict) -> str:
    return json.dumps(message)


def test_report_answers_ephemerally_with_figures(bot, stub):
    app, _ = bot
    response, name = dispatch(app, stub, "web since:2024-01 until:2024-01")
    assert response.status == 200
    message = answer(stub, name)
    assert message["response_type"] == "ephemeral"
    # ann 2024-01-02 and bob 2024-01-03: 2 person-days in January, 2GAD 4 (ann's February commit is outside)
    assert message["text"] == "web: 2GAD 4 person-days, 2024-01-01 to 2024-01-31"
    assert "gad_share" in all_text(message)  # the Share button
    assert len(message["blocks"]) <= 50


def test_public_token_posts_in_channel_without_share_button(bot, stub):
    app, _ = bot
    _, name = dispatch(app, stub, "web public")
    message = answer(stub, name)
    assert message["response_type"] == "in_channel"
    assert "gad_share" not in all_text(message)


@pytest.mark.parametrize("text, fragment", [
    ("web since:2024-13", "not a period"),
    ("web colour:blue", "not a token"),
    ("web since:2024-06 until:2024-01", "starts after"),
    ("nope", "No repository or project named `nope`"),
    ("wbe", "did you mean `web`"),
])
def test_errors_are_one_ephemeral_sentence(bot, stub, text, fragment):
    app, _ = bot
    response, name = dispatch(app, stub, text)
    assert response.status == 200
    if response.body:  # rejected in the ack itself
        body = ack_body(response)
    else:  # rejected once the index was consulted
        body = answer(stub, name)
    assert fragment in all_text(body)
    assert body.get("response_type", "ephemeral") == "ephemeral"
    assert "Traceback" not in all_text(body)


def test_help_for_empty_and_help(bot, stub):
    """Help names what the person may see, so their first help waits for what Slack says of them (after the ack);
    while that is known (GAD_MEMBERSHIP_CACHE_SECONDS), help comes in the ack itself."""
    app, _ = bot
    for number, text in enumerate(("", "help")):
        response, name = dispatch(app, stub, text)
        if number == 0:
            assert ack_body(response) == {}
            body = answer(stub, name)
        else:
            body = ack_body(response)
        assert "subscribe" in all_text(body) and "since:" in all_text(body)
        assert "`/gad web" in all_text(body)  # an example about what is tracked (and open to everyone)


def test_curly_quotes_are_straightened(bot, stub):
    app, _ = bot
    _, name = dispatch(app, stub, "web author:\u201cann@*\u201d")
    assert "2GAD" in all_text(answer(stub, name))


def test_repos_lists_tracked(bot, stub):
    app, _ = bot
    _, name = dispatch(app, stub, "repos")
    assert "web" in all_text(answer(stub, name))


def test_admin_commands_refuse_others_politely(bot, stub):
    app, engine = bot
    response, name = dispatch(app, stub, "untrack web", user="U999")
    message = ack_body(response)  # refused in the ack itself
    assert "Only the people" in all_text(message) and "UADMIN" in all_text(message)
    assert engine.known_names() == ["web"]


def test_track_refuses_unsafe_sources(bot, stub):
    app, engine = bot
    for text, fragment in [("track file:///etc", "https"), ("track https://user:hunter2@example.com/x.git", "secret"),
                           ("track /srv/git/x", "https"), ("track https://127.0.0.1/x.git", "")]:
        response, name = dispatch(app, stub, text, user="UADMIN")
        message = ack_body(response)  # refused in the ack itself, before "Tracking ..." is ever said
        assert message["response_type"] == "ephemeral" and "Tracking" not in all_text(message)
        assert "hunter2" not in all_text(message)
        assert fragment.lower() in all_text(message).lower()
    assert engine.known_names() == ["web"]


def test_untrack_by_admin(bot, stub):
    app, engine = bot
    _, name = dispatch(app, stub, "untrack web", user="UADMIN")
    question = answer(stub, name)
    assert "Untrack `web`?" in all_text(question) and engine.known_names() == ["web"]  # asked first
    url = stub.response_url("confirm")
    payload = block_actions_payload("gad_untrack", "web", user_id="UADMIN", response_url=url)
    body, headers = signed_interaction(SECRET, payload)
    app.dispatch(BoltRequest(body=body.decode(), headers={k.lower(): v for k, v in headers.items()}))
    assert "Untracked `web`." in all_text(answer(stub, "confirm"))
    assert engine.known_names() == []


def test_forged_and_replayed_requests_get_401(bot, stub):
    app, _ = bot
    response, _ = dispatch(app, stub, "web", secret="wrong-secret")
    assert response.status == 401
    response, _ = dispatch(app, stub, "web", timestamp=int(time.time()) - 6 * 60)
    assert response.status == 401


def test_share_button_posts_for_everyone(bot, stub):
    app, _ = bot
    _, name = dispatch(app, stub, "web since:2024-01")
    (button,) = [e for b in answer(stub, name)["blocks"] if b["type"] == "actions" for e in b["elements"]]
    url = stub.response_url("share")
    payload = block_actions_payload("gad_share", button["value"], response_url=url)
    body, headers = signed_interaction(SECRET, payload)
    response = app.dispatch(BoltRequest(body=body.decode(), headers={k.lower(): v for k, v in headers.items()}))
    assert response.status == 200
    private, shared = stub.wait_for_response("share", count=2, timeout=10)
    assert private["replace_original"] is True and "gad_share" not in all_text(private)  # no second press
    assert shared["response_type"] == "in_channel" and shared["replace_original"] is False
    assert "U123" in all_text(shared)  # says who shared it


def test_mentions_in_user_text_cannot_ping(bot, stub):
    app, _ = bot
    from tests.test_render import all_texts

    _, name = dispatch(app, stub, "web author:<!channel>")
    message = answer(stub, name)
    shown = all_texts(message["text"], message["blocks"])  # what Slack renders (button values are not)
    assert "channel" in " ".join(shown)
    assert not any("<!channel>" in t for t in shown)


def test_twenty_at_once_all_acked_and_answered(bot, stub):
    import concurrent.futures

    app, _ = bot
    with concurrent.futures.ThreadPoolExecutor(20) as pool:
        results = list(pool.map(lambda i: dispatch(app, stub, "web by:month", name=f"burst{i}"), range(20)))
    assert all(r.status == 200 for r, _ in results)
    for _, name in results:
        assert "2GAD" in all_text(answer(stub, name))


def test_home_tab_lists_repositories(bot, stub):
    from tests.slackstub import app_home_opened_event, event_callback, signed_event

    app, _ = bot
    body, headers = signed_event(SECRET, event_callback(app_home_opened_event("U123")))
    response = app.dispatch(BoltRequest(body=body.decode(), headers={k.lower(): v for k, v in headers.items()}))
    assert response.status == 200
    stub.wait_for("views.publish", timeout=10)
    assert "web" in json.dumps(stub.home_views["U123"])


def test_long_work_answers_in_dm_after_the_response_url_expires(stub):
    import time as clock

    from slack_sdk.webhook import WebhookClient

    from bot.faces.slack import RESPONSE_URL_LIFETIME, Responder
    from bot.slackapi import web_client

    settings = Settings.from_env({"GAD_DATA_DIR": "/tmp/unused", "SLACK_BOT_TOKEN": stub.good_token,
                                  "SLACK_API_URL": stub.api_url})
    url = stub.response_url("slow")
    respond = lambda **kw: WebhookClient(url).send_dict(kw)
    started = clock.monotonic() - RESPONSE_URL_LIFETIME.total_seconds() - 1  # began 29+ minutes ago
    Responder(respond, web_client(settings), "U123", started=started).final("done", [])
    assert stub.responses("slow") == []
    post = stub.wait_for("chat.postMessage")[-1]
    assert post.params["channel"] == "U123" and post.params["text"] == "done"


def test_progress_updates_keep_the_last_use_for_the_answer(stub):
    from slack_sdk.webhook import WebhookClient

    from bot.faces import slack as face

    url = stub.response_url("progress")
    respond = lambda **kw: WebhookClient(url).send_dict(kw)
    responder = face.Responder(respond, None, "U123")
    original, face.PROGRESS_EVERY_SECONDS = face.PROGRESS_EVERY_SECONDS, 0.0
    try:
        for step in range(10):
            responder.progress(f"step {step}", [])
    finally:
        face.PROGRESS_EVERY_SECONDS = original
    responder.final("tracked", [])
    bodies = stub.responses("progress")
    assert len(bodies) == 5  # Slack allows five uses of a response_url
    assert bodies[-1]["text"] == "tracked" and all(b.get("replace_original") for b in bodies[:-1])


def test_format_csv_attaches_a_file(bot, stub):
    app, _ = bot
    _, name = dispatch(app, stub, "web by:month format:csv")
    assert "2GAD" in all_text(answer(stub, name))
    files = stub.uploaded_files()
    assert len(files) == 1
    lines = files[0].data.decode().splitlines()
    assert lines[0].startswith("month,active_days,") and lines[1].startswith("2024-01,") and lines[-1].startswith("TOTAL,")


def test_phase_clock_estimates_the_time_left_from_the_rate_so_far():
    from bot.faces.slack import PhaseClock

    now = [100.0]
    clock = PhaseClock(lambda: now[0])
    assert clock.seconds_left("index", 0, 1000) is None  # the phase starts: no rate yet
    now[0] = 110.0
    assert clock.seconds_left("index", 250, 1000) == 30.0  # 250 in 10 s: 750 more in 30 s
    assert clock.seconds_left("index", 10, 0) is None  # no total known: no estimate
    assert clock.seconds_left("paths", 5, 100) is None  # another phase starts its own clock
    now[0] = 120.0
    assert clock.seconds_left("paths", 50, 100) == 10.0
