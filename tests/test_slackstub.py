"""The Slack stand-in, proven against the real slack_sdk / slack_bolt clients."""

from __future__ import annotations

import json
import threading
import time
from urllib.parse import parse_qsl

import pytest
from slack_bolt import App, BoltRequest
from slack_bolt.adapter.socket_mode import SocketModeHandler
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.builtin_handlers import RateLimitErrorRetryHandler
from slack_sdk.signature import SignatureVerifier
from slack_sdk.webhook import WebhookClient

from tests.slackstub import (
    SlackStub,
    app_home_opened_event,
    block_actions_payload,
    event_callback,
    signed_event,
    signed_interaction,
    signed_request,
    signed_slash_command,
    slack_stub,  # noqa: F401  (fixture)
    slash_fields,
)

SECRET = "8f742231b10e8888abcd99yyyzzz85a5"


def web(stub: SlackStub, **kw) -> WebClient:
    kw.setdefault("token", stub.good_token)
    return WebClient(base_url=stub.api_url, **kw)


def header(resp, name: str) -> str | None:
    return {k.lower(): v for k, v in resp.headers.items()}.get(name.lower())


# ------------------------------------------------------------------ Web API


def test_api_url_shape(slack_stub):
    assert slack_stub.api_url.startswith("http://127.0.0.1:")
    assert slack_stub.api_url.endswith("/api/")


def test_auth_test_good_token_returns_ids_and_scopes_header(slack_stub):
    slack_stub.scopes = ["commands", "chat:write"]
    resp = web(slack_stub).auth_test()
    assert resp["ok"] is True
    assert resp["team_id"] == slack_stub.team_id
    assert resp["user_id"] == slack_stub.bot_user_id
    assert resp["bot_id"] == slack_stub.bot_id
    assert header(resp, "x-oauth-scopes") == "commands,chat:write"
    (call,) = slack_stub.calls_to("auth.test")
    assert call.token == slack_stub.good_token
    assert call.headers["authorization"] == f"Bearer {slack_stub.good_token}"
    assert call.path == "/api/auth.test" and call.status == 200


def test_auth_test_bad_or_missing_token(slack_stub):
    with pytest.raises(SlackApiError) as e:
        web(slack_stub, token="xoxb-wrong").auth_test()
    assert e.value.response["error"] == "invalid_auth"
    with pytest.raises(SlackApiError) as e:
        WebClient(base_url=slack_stub.api_url).auth_test()
    assert e.value.response["error"] == "not_authed"
    with pytest.raises(SlackApiError) as e:
        web(slack_stub, token=slack_stub.app_token).auth_test()
    assert e.value.response["error"] == "not_allowed_token_type"
    slack_stub.token_revoked = True
    with pytest.raises(SlackApiError) as e:
        web(slack_stub).auth_test()
    assert e.value.response["error"] == "token_revoked"


def test_chat_post_message_is_recorded(slack_stub):
    blocks = [{"type": "section", "text": {"type": "mrkdwn", "text": "*2GAD* 42"}}]
    resp = web(slack_stub).chat_postMessage(channel="C123", text="42 person-days", blocks=blocks)
    assert resp["ok"] and resp["channel"] == "C123"
    assert resp["message"]["text"] == "42 person-days"
    assert resp["message"]["bot_id"] == slack_stub.bot_id
    (call,) = slack_stub.wait_for("chat.postMessage")
    assert call.args["channel"] == "C123"
    assert call.args["blocks"] == blocks
    assert call.response["ts"] == resp["ts"]
    assert call.time <= time.time()
    # ts values are unique and increasing
    resp2 = web(slack_stub).chat_postMessage(channel="C123", text="again")
    assert float(resp2["ts"]) > float(resp["ts"]) or resp2["ts"] > resp["ts"]


def test_wait_for_blocks_until_a_call_from_another_thread(slack_stub):
    client = web(slack_stub)
    t = threading.Thread(target=lambda: client.chat_postMessage(channel="C123", text="hi"))
    t.start()
    calls = slack_stub.wait_for("chat.postMessage", count=1, timeout=5)
    t.join()
    assert len(calls) == 1 and calls[0].ok
    with pytest.raises(TimeoutError):
        slack_stub.wait_for("chat.update", timeout=0.05)


def test_rate_limit_with_retry_after_is_retried_by_the_sdk(slack_stub, monkeypatch):
    from slack_sdk.http_retry import builtin_handlers

    monkeypatch.setattr(builtin_handlers.random, "random", lambda: 0.0)  # the handler's jitter
    slack_stub.fail_next("chat.postMessage", status=429, retry_after=0)
    client = web(slack_stub, retry_handlers=[RateLimitErrorRetryHandler(max_retry_count=1)])
    resp = client.chat_postMessage(channel="C123", text="after the storm")
    assert resp["ok"]
    first, second = slack_stub.calls_to("chat.postMessage")
    assert first.status == 429 and first.response == {"ok": False, "error": "ratelimited"}
    assert second.status == 200 and second.ok


def test_rate_limit_without_retry_handler_surfaces_retry_after(slack_stub):
    slack_stub.fail_next("chat.postMessage", status=429, retry_after=7)
    with pytest.raises(SlackApiError) as e:
        web(slack_stub).chat_postMessage(channel="C123", text="x")
    assert e.value.response.status_code == 429
    assert e.value.response["error"] == "ratelimited"
    assert e.value.response.headers["Retry-After"] == "7"


def test_scripted_errors_and_times(slack_stub):
    client = web(slack_stub)
    slack_stub.fail_next("chat.postMessage", error="channel_not_found", times=2)
    for _ in range(2):
        with pytest.raises(SlackApiError) as e:
            client.chat_postMessage(channel="C123", text="x")
        assert e.value.response["error"] == "channel_not_found"
    assert client.chat_postMessage(channel="C123", text="x")["ok"]

    slack_stub.fail_next("chat.postMessage", error="missing_scope", needed="chat:write.public")
    with pytest.raises(SlackApiError) as e:
        client.chat_postMessage(channel="C123", text="x")
    assert e.value.response["needed"] == "chat:write.public"
    assert "chat:write" in e.value.response["provided"]

    slack_stub.fail_next("users.info", status=503)
    with pytest.raises(SlackApiError) as e:
        client.users_info(user="U123")
    assert e.value.response.status_code == 503

    with pytest.raises(ValueError):
        slack_stub.fail_next("chat.postMessage")  # status 200 needs an error


def test_stall_next_delays_the_answer(slack_stub):
    slack_stub.stall_next("chat.postMessage", 0.2)
    start = time.monotonic()
    assert web(slack_stub).chat_postMessage(channel="C123", text="slow")["ok"]
    assert time.monotonic() - start >= 0.2
    start = time.monotonic()
    web(slack_stub).chat_postMessage(channel="C123", text="fast")
    assert time.monotonic() - start < 0.2


def test_unknown_method(slack_stub):
    with pytest.raises(SlackApiError) as e:
        web(slack_stub).api_call("gad.nonsense")
    assert e.value.response["error"] == "unknown_method"


def test_channel_states_and_scopes(slack_stub):
    client = web(slack_stub)
    slack_stub.add_channel("C0ARCHIVED", "old", is_archived=True)
    slack_stub.add_channel("C0OUTSIDE", "random", is_member=False)
    slack_stub.add_channel("G0SECRET", "secret", is_member=False)
    for channel, error in [("C0ARCHIVED", "is_archived"), ("C0OUTSIDE", "not_in_channel"),
                           ("G0SECRET", "channel_not_found"), ("nonsense", "channel_not_found")]:
        with pytest.raises(SlackApiError) as e:
            client.chat_postMessage(channel=channel, text="x")
        assert e.value.response["error"] == error, channel
    slack_stub.scopes.append("chat:write.public")
    assert client.chat_postMessage(channel="C0OUTSIDE", text="x")["ok"]

    slack_stub.scopes.remove("chat:write")
    with pytest.raises(SlackApiError) as e:
        client.chat_postMessage(channel="C123", text="x")
    assert e.value.response["error"] == "missing_scope"
    assert e.value.response["needed"] == "chat:write"

    with pytest.raises(SlackApiError) as e:
        client.chat_postEphemeral(channel="C123", user="U123", text="x")
    assert e.value.response["error"] == "missing_scope"


@pytest.mark.filterwarnings("ignore:The top-level `text` argument is missing")
def test_block_kit_limits(slack_stub):
    too_many = [{"type": "divider"}] * 51
    with pytest.raises(SlackApiError) as e:
        web(slack_stub).chat_postMessage(channel="C123", text="x", blocks=too_many)
    assert e.value.response["error"] == "invalid_blocks"
    long = [{"type": "section", "text": {"type": "mrkdwn", "text": "x" * 3001}}]
    with pytest.raises(SlackApiError) as e:
        web(slack_stub).chat_postMessage(channel="C123", text="x", blocks=long)
    assert "3001" in e.value.response["errors"][0]
    with pytest.raises(SlackApiError) as e:
        web(slack_stub).chat_postMessage(channel="C123")
    assert e.value.response["error"] == "no_text"


def test_other_methods_answer_like_slack(slack_stub):
    client = web(slack_stub)
    slack_stub.user_tz = "Europe/Berlin"
    slack_stub.admins.add("U0ADMIN")
    user = client.users_info(user="U0ADMIN")["user"]
    assert user["tz"] == "Europe/Berlin" and user["is_admin"] is True
    assert user["tz_offset"] in (3600, 7200) and user["tz_label"] in ("CET", "CEST")
    assert client.users_info(user="U123")["user"]["is_admin"] is False
    slack_stub.users["U123"] = {"deleted": True}
    assert client.users_info(user="U123")["user"]["deleted"] is True
    with pytest.raises(SlackApiError):
        client.users_info(user="not-a-user")

    channel = client.conversations_info(channel="C123")["channel"]
    assert channel["id"] == "C123" and channel["name"] == "general" and channel["is_member"]

    posted = client.chat_postMessage(channel="C123", text="v1")
    updated = client.chat_update(channel="C123", ts=posted["ts"], text="v2")
    assert updated["ts"] == posted["ts"] and updated["text"] == "v2"
    link = client.chat_getPermalink(channel="C123", message_ts=posted["ts"])
    assert link["permalink"].endswith("/archives/C123/p" + posted["ts"].replace(".", ""))
    eph = client.chat_postEphemeral(channel="C123", user="U123", text="only you")
    assert eph["message_ts"]

    view = {"type": "home", "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": "hi"}}]}
    published = client.views_publish(user_id="U123", view=view)
    assert published["view"]["type"] == "home"
    assert slack_stub.home_views["U123"]["blocks"] == view["blocks"]
    assert slack_stub.calls_to("views.publish")[0].args["view"] == view


def test_files_upload_v2_end_to_end(slack_stub):
    data = b"period,2gad\n2026-W48,14\n" * 100
    resp = web(slack_stub).files_upload_v2(
        file=data, filename="report.csv", title="Weekly 2GAD", channel="C123", initial_comment="here"
    )
    assert resp["ok"]
    assert resp["file"]["name"] == "report.csv" and resp["file"]["size"] == len(data)
    (f,) = slack_stub.uploaded_files()
    assert f.data == data and f.title == "Weekly 2GAD" and f.channel_id == "C123"
    assert f.initial_comment == "here" and f.id == resp["file"]["id"]
    methods = [c.method for c in slack_stub.calls]
    assert methods == ["files.getUploadURLExternal", f"upload:{f.id}", "files.completeUploadExternal"]
    assert slack_stub.calls_to("files.getUploadURLExternal")[0].args["length"] == str(len(data))


def test_files_upload_completion_without_upload_fails(slack_stub):
    client = web(slack_stub)
    url = client.files_getUploadURLExternal(filename="a.png", length=3)
    with pytest.raises(SlackApiError) as e:
        client.files_completeUploadExternal(files=[{"id": url["file_id"]}], channel_id="C123")
    assert e.value.response["error"] == "file_not_found"


# ------------------------------------------------------------------ response_url


def test_webhook_client_to_response_url(slack_stub):
    url = slack_stub.response_url("r1")
    assert url == f"{slack_stub.base_url}/response/r1"
    resp = WebhookClient(url).send(text="Working on it", response_type="ephemeral")
    assert resp.status_code == 200 and resp.body == "ok"
    assert slack_stub.responses("r1") == [{"text": "Working on it", "response_type": "ephemeral"}]
    assert slack_stub.responses(url) == slack_stub.responses("r1")
    assert slack_stub.calls_to("response:r1")[0].status == 200


def test_response_url_expires_after_five_uses_or_on_demand(slack_stub):
    hook = WebhookClient(slack_stub.response_url("r2"))
    statuses = [hook.send(text=f"#{i}").status_code for i in range(6)]
    assert statuses == [200] * 5 + [404]
    last = hook.send(text="again")
    assert last.body == "expired_url"
    assert len(slack_stub.responses("r2")) == 5

    hook3 = WebhookClient(slack_stub.response_url("r3", max_uses=1))
    assert hook3.send(text="one").status_code == 200
    assert hook3.send(text="two").status_code == 404

    hook4 = WebhookClient(slack_stub.response_url("r4"))
    slack_stub.expire("r4")
    resp = hook4.send(text="late")
    assert (resp.status_code, resp.body) == (404, "expired_url")

    resp = WebhookClient(slack_stub.response_url("r5")).send_dict({"response_type": "in_channel"})
    assert (resp.status_code, resp.body) == (400, "no_text")


# ------------------------------------------------------------------ HTTP mode signing


def test_signed_slash_command_is_what_slack_sends(slack_stub):
    fields = slack_stub.slash_fields("report last 2 weeks")
    assert list(fields)[:9] == ["token", "team_id", "team_domain", "channel_id", "channel_name",
                                "user_id", "user_name", "command", "text"]
    assert fields["user_id"] == "U123" and fields["channel_id"] == "C123"
    assert fields["response_url"].startswith(slack_stub.base_url + "/response/")
    body, headers = signed_slash_command(SECRET, fields, timestamp=1700000000)
    assert headers["Content-Type"] == "application/x-www-form-urlencoded"
    assert b"text=report+last+2+weeks" in body
    assert b"command=%2Fgad" in body
    assert dict(parse_qsl(body.decode(), keep_blank_values=True)) == fields
    verifier = SignatureVerifier(SECRET, clock=type("C", (), {"now": lambda self: 1700000010.0})())
    assert verifier.is_valid_request(body, headers)
    assert not SignatureVerifier("other").is_valid_request(body, headers)

    body2, headers2 = signed_request(SECRET, "{}", "application/json")
    assert SignatureVerifier(SECRET).is_valid_request(body2, headers2)
    assert slash_fields("x")["response_url"].startswith("https://hooks.slack.com/commands/")


def test_bolt_http_mode_accepts_signed_requests(slack_stub):
    # process_before_response: listeners run inline, so `seen` is filled on return
    app = App(client=web(slack_stub), signing_secret=SECRET, process_before_response=True)
    seen = {}

    @app.command("/gad")
    def on_command(ack, command):
        seen["command"] = command["text"]
        ack(text="ok")

    @app.action("refresh")
    def on_action(ack, body):
        seen["action"] = body["actions"][0]["value"]
        ack()

    @app.event("app_home_opened")
    def on_home(event):
        seen["home"] = event["user"]

    body, headers = signed_slash_command(SECRET, slack_stub.slash_fields("report"))
    resp = app.dispatch(BoltRequest(body=body.decode(), headers=headers))
    assert resp.status == 200 and resp.body == "ok"

    body, headers = signed_slash_command("wrong-secret", slack_stub.slash_fields("report"))
    assert app.dispatch(BoltRequest(body=body.decode(), headers=headers)).status == 401

    body, headers = signed_interaction(SECRET, block_actions_payload("refresh", "w48"))
    assert app.dispatch(BoltRequest(body=body.decode(), headers=headers)).status == 200

    body, headers = signed_event(SECRET, event_callback(app_home_opened_event("U777")))
    assert app.dispatch(BoltRequest(body=body.decode(), headers=headers)).status == 200
    assert seen == {"command": "report", "action": "w48", "home": "U777"}


# ------------------------------------------------------------------ Socket Mode


def test_socket_mode_requires_the_app_token(slack_stub):
    with pytest.raises(SlackApiError) as e:
        web(slack_stub).apps_connections_open(app_token="xapp-wrong")
    assert e.value.response["error"] == "invalid_auth"
    with pytest.raises(SlackApiError) as e:
        web(slack_stub).apps_connections_open(app_token=slack_stub.good_token)
    assert e.value.response["error"] == "not_allowed_token_type"
    url = web(slack_stub).apps_connections_open(app_token=slack_stub.app_token)["url"]
    assert url.startswith(f"ws://127.0.0.1:{slack_stub.ws_port}/link/?ticket=")


def test_bolt_socket_mode_slash_command_is_acked(slack_stub):
    app = App(client=web(slack_stub))
    home_done = threading.Event()

    @app.command("/gad")
    def on_command(ack, respond, command):
        ack(text=f"Working on `{command['text']}`…")
        respond(text="2GAD: 42", response_type="in_channel")

    @app.action("refresh")
    def on_action(ack):
        ack()

    @app.event("app_home_opened")
    def on_home(client, event):
        client.views_publish(user_id=event["user"], view={"type": "home", "blocks": []})
        home_done.set()

    handler = SocketModeHandler(app, app_token=slack_stub.app_token)
    handler.connect()
    try:
        fields = slack_stub.slash_fields("report", response_name="sock1")
        envelope_id = slack_stub.socket_send_slash_command(fields)
        assert slack_stub.wait_for_ack(envelope_id) == {"text": "Working on `report`…"}
        assert slack_stub.wait_for_response("sock1") == [{"text": "2GAD: 42", "response_type": "in_channel"}]

        eid = slack_stub.socket_send_interactive(block_actions_payload("refresh", "x"))
        assert slack_stub.wait_for_ack(eid) is None  # an empty ack
        assert slack_stub.acks[eid] == {"envelope_id": eid}

        eid = slack_stub.socket_send_event(app_home_opened_event("U555"))
        slack_stub.wait_for_ack(eid)
        assert home_done.wait(5)
        assert slack_stub.wait_for("views.publish")[0].args["user_id"] == "U555"

        (open_call,) = slack_stub.calls_to("apps.connections.open")
        assert open_call.token == slack_stub.app_token
        with pytest.raises(TimeoutError):
            slack_stub.wait_for_ack("never-sent", timeout=0.05)
    finally:
        start = time.monotonic()
        slack_stub.close_socket_mode(handler)
        assert time.monotonic() - start < 2.5
    slack_stub.wait_for_no_socket()
    assert slack_stub.socket_connections == 0


def test_socket_mode_reconnects_after_disconnect_message(slack_stub):
    app = App(client=web(slack_stub))

    @app.command("/gad")
    def on_command(ack):
        ack()

    handler = slack_stub.connect_socket_mode(app)  # closed by the stub on exit
    assert slack_stub.socket_connects == 1
    slack_stub.socket_send_disconnect("refresh_requested")
    slack_stub.wait_for("apps.connections.open", count=2)
    slack_stub.wait_for_socket_connects(2)
    eid = slack_stub.socket_send_slash_command(slack_stub.slash_fields("again"))
    assert slack_stub.wait_for_ack(eid) is None
    assert handler.client.is_connected()
    assert slack_stub.socket_connects == 2


def test_upload_url_accepts_multipart_too(slack_stub):
    import urllib.request

    url = web(slack_stub).files_getUploadURLExternal(filename="chart.png", length=4)
    boundary = "XyZ"
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"chart.png\"\r\n"
            f"Content-Type: image/png\r\n\r\n").encode() + b"\x89PNG" + f"\r\n--{boundary}--\r\n".encode()
    req = urllib.request.Request(url["upload_url"], data=body, method="POST",
                                 headers={"Content-Type": f"multipart/form-data; boundary={boundary}"})
    with urllib.request.urlopen(req) as resp:
        assert resp.status == 200 and resp.read() == b"OK - 4"
    assert slack_stub.files[url["file_id"]].data == b"\x89PNG"


def test_websocket_client_adapter_works_too(slack_stub):
    from slack_bolt.adapter.socket_mode.websocket_client import SocketModeHandler as WSCHandler

    app = App(client=web(slack_stub))

    @app.command("/gad")
    def on_command(ack):
        ack(text="via websocket-client")

    handler = WSCHandler(app, app_token=slack_stub.app_token)
    handler.connect()
    try:
        eid = slack_stub.socket_send_slash_command(slack_stub.slash_fields("x"))
        assert slack_stub.wait_for_ack(eid) == {"text": "via websocket-client"}
    finally:
        slack_stub.close_socket_mode(handler)


def test_context_manager_stops_servers():
    with SlackStub() as stub:
        url = stub.api_url
        assert web(stub).auth_test()["ok"]
    with pytest.raises(Exception):
        WebClient(base_url=url, token="xoxb-x", timeout=1, retry_handlers=[]).auth_test()
