"""`gad-bot serve` as a real process (issue 3's round trip): HTTP and Socket Mode against a loopback Slack.

The repository is tracked before serve starts; Slack's side is tests/slackstub.py: the Web API
(auth.test at start-up), the response_url the answers go to, and the Socket Mode WebSocket. HTTP
requests are form-encoded and signed exactly as Slack sends them, and posted with urllib.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
import urllib.request

import pytest

from tests.faults import ROOT, SIGNING_SECRET, Serve, cli_env, run_cli, track_here
from tests.gitbuild import RepoBuilder
from tests.slackstub import SlackStub


@pytest.fixture
def stub():
    with SlackStub() as running:
        yield running


@pytest.fixture(scope="module")
def tracked_once(tmp_path_factory):
    """A data directory with `web` (3 commits by 2 people on 3 days) tracked through the CLI, once per module."""
    base = tmp_path_factory.mktemp("serve-process")
    upstream = RepoBuilder(base / "web")
    upstream.commit(email="ann@example.com", date="2024-01-02")
    upstream.commit(email="bob@example.com", date="2024-01-03")
    upstream.commit(email="ann@example.com", date="2024-02-01")
    path = base / "data"
    track_here(str(upstream.path), "web", path)
    return path


@pytest.fixture
def data(tracked_once, tmp_path):
    """Each test's own copy of it (the index keeps mirror paths relative to the data directory)."""
    path = tmp_path / "data"
    shutil.copytree(tracked_once, path)
    return path


@pytest.fixture(scope="module")
def shared(tracked_once, tmp_path_factory):
    """One HTTP serve (and its Slack stand-in) for the tests that only ask it questions, each under response
    names of its own; it must still exit 0 on SIGTERM, with no traceback, after all of them."""
    data = tmp_path_factory.mktemp("shared-serve") / "data"
    shutil.copytree(tracked_once, data)
    with SlackStub() as stub:
        # serve keeps what Slack says of a person (their zone too) for a while: the zone the subscription test
        # reads is set before anyone asks (the other tests' figures do not depend on it)
        stub.user_tz = "Europe/Paris"
        with Serve(data, stub, logs=data.parent / "logs") as serve:
            yield serve
            assert serve.stop(signal.SIGTERM) == 0
    assert "Traceback" not in serve.stderr


def _answer_text(stub, name: str) -> str:
    return json.dumps(stub.wait_for_response(name, timeout=15))


def test_http_slash_command_round_trip(shared):
    serve, stub = shared, shared.stub
    with urllib.request.urlopen(serve.url + "/healthz", timeout=5) as health:
        assert health.status == 200 and health.read() == b"ok\n"
    status, body, took = serve.post(stub.slash_fields("web since:2024-01 until:2024-01", response_name="jan"))
    assert status == 200 and took < 3, (status, took)
    answer = _answer_text(stub, "jan")
    assert "2GAD" in answer and "4 person-days" in answer  # 2 people x 1 day each in January, doubled
    # a rejected typo is answered in the ack itself
    status, body, took = serve.post(stub.slash_fields("web since:2024-13", response_name="typo"))
    assert status == 200 and took < 3 and "not a period" in body.decode()
    # the container health check sees the heartbeat
    assert run_cli("healthcheck", data=serve.data).returncode == 0


def test_forged_signature_and_stale_timestamp_get_401(shared):
    serve, stub = shared, shared.stub
    status, _, _ = serve.post(stub.slash_fields("web", response_name="forged"), secret="not-the-signing-secret")
    assert status == 401
    status, _, _ = serve.post(stub.slash_fields("web", response_name="stale"), timestamp=int(time.time()) - 6 * 60)
    assert status == 401
    unsigned = urllib.request.Request(serve.url + "/slack/events", data=b"command=%2Fgad&text=web", method="POST",
                                      headers={"Content-Type": "application/x-www-form-urlencoded"})
    try:
        urllib.request.urlopen(unsigned, timeout=5)
        status = 200
    except urllib.error.HTTPError as error:
        status = error.code
    assert status == 401
    # a later question is answered: serve has taken everything sent before it (a forged question that passed the
    # gate would have been acked 200 above, and queued before this one)
    status, _, _ = serve.post(stub.slash_fields("web", response_name="after-forged"))
    assert status == 200 and stub.wait_for_response("after-forged", timeout=30)
    assert stub.responses("forged") == [] and stub.responses("stale") == []  # nothing ran


def test_socket_mode_round_trip(data, stub, tmp_path):
    with Serve(data, stub, socket_mode=True, logs=tmp_path / "logs") as serve:
        stub.wait_for_socket(1, timeout=15)
        assert stub.calls_to("apps.connections.open")[0].token == stub.app_token
        envelope = stub.socket_send_slash_command(stub.slash_fields("web by:month", response_name="sock"))
        started = time.monotonic()
        stub.wait_for_ack(envelope, timeout=10)
        assert time.monotonic() - started < 3
        answer = _answer_text(stub, "sock")
        assert "2GAD" in answer and "2024-02" in answer
        sent = time.monotonic()
        assert serve.stop(signal.SIGTERM) == 0
        assert time.monotonic() - sent < 10
    assert "Traceback" not in serve.stderr


@pytest.mark.parametrize("mode", ["http", "socket"])
def test_sigterm_exits_0_within_seconds(data, stub, tmp_path, mode):
    import tempfile
    from pathlib import Path

    # serve's temporary directory: its fork server's socket is made in it (a short path: a socket's is bounded)
    temporary = Path(tempfile.mkdtemp(prefix="gad-serve-"))
    try:
        with Serve(data, stub, socket_mode=mode == "socket", logs=tmp_path / "logs", TMPDIR=str(temporary)) as serve:
            # idle: everything started (a SIGTERM in the middle of the start is test_leftovers' subject)
            serve.wait_serving()
            assert list(temporary.glob("pymp-*")), "serve's fork server made no directory where TMPDIR says"
            sent = time.monotonic()
            serve.send(signal.SIGTERM)
            code = serve.proc.wait(timeout=15)
            took = time.monotonic() - sent
        left = sorted(path.name for path in temporary.iterdir())
    finally:
        shutil.rmtree(temporary, ignore_errors=True)
    assert code == 0, serve.stderr
    assert left == [], f"serve left {left} in its temporary directory"  # its exit skips multiprocessing's own
    # An idle serve has nothing to drain: it must not wait out GAD_SHUTDOWN_GRACE_SECONDS (20) or a
    # Socket Mode reconnect. The bound is loose because a loaded 2-core box took 6 s to start stopping.
    assert took < 12, f"serve ({mode}) took {took:.1f}s to stop after SIGTERM"
    assert "Traceback" not in serve.stderr


BAD_SETTINGS = {
    "no bot token": ({"SLACK_BOT_TOKEN": "", "SLACK_SIGNING_SECRET": "s" * 32}, "SLACK_BOT_TOKEN is not set"),
    "user token": ({"SLACK_BOT_TOKEN": "xoxp-1-2-3-user", "SLACK_SIGNING_SECRET": "s" * 32}, "xoxb-"),
    "http without signing secret": ({"SLACK_SIGNING_SECRET": ""}, "SLACK_SIGNING_SECRET"),
    "app token that is not xapp-": ({"SLACK_APP_TOKEN": "xoxb-not-an-app-token"}, "SLACK_APP_TOKEN"),
    "bot token refused (invalid_auth)": ({"SLACK_BOT_TOKEN": "xoxb-0000-0000-wrongtoken", "SLACK_SIGNING_SECRET": "s" * 32},
                                         "invalid_auth"),
    "app token refused (invalid_auth)": ({"SLACK_APP_TOKEN": "xapp-1-A0GADAPP1-0000-wrongapptoken"}, "SLACK_APP_TOKEN"),
}
@pytest.mark.parametrize("case", list(BAD_SETTINGS))
def test_bad_settings_exit_non_zero_with_one_clear_line(tmp_path, stub, case):
    data = tmp_path / "data"
    overrides, fragment = BAD_SETTINGS[case]
    env = {"SLACK_BOT_TOKEN": stub.good_token, "SLACK_API_URL": stub.api_url, "SLACK_SIGNING_SECRET": SIGNING_SECRET}
    env.update(overrides)
    env = {k: v for k, v in env.items() if v}
    result = subprocess.run([sys.executable, "-m", "bot.faces.cli", "serve", "--port", "0", "--host", "127.0.0.1"], cwd=ROOT,
                            env=cli_env(data, **env), capture_output=True, text=True, timeout=60)
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("gad-bot: ") and fragment in lines[0], lines[0]


def test_home_share_and_subscriptions_through_a_running_serve(shared):
    """The wiring of `gad-bot serve` itself: App Home, Share and the digest commands (digests are on)."""
    from tests.faults import SIGNING_SECRET
    from tests.slackstub import app_home_opened_event, block_actions_payload, event_callback, signed_event, \
        signed_interaction

    serve, stub = shared, shared.stub  # stub.user_tz is Europe/Paris (the fixture)
    status, _ = serve.post_signed(*signed_event(SIGNING_SECRET, event_callback(app_home_opened_event("U123"))))
    assert status == 200
    stub.wait_for("views.publish", timeout=15)
    home = json.dumps(stub.home_views["U123"], ensure_ascii=False)
    assert "`web` · 2GAD 0 person-days in " in home  # the last full week before today: no commits
    assert "no weekly figure yet" not in home
    # a private answer, then its Share button as Slack sends it back
    serve.post(stub.slash_fields("web since:2024-01 until:2024-01", response_name="private"))
    private = stub.wait_for_response("private", timeout=15)[-1]
    assert private["text"] == "web: 2GAD 4 person-days, 2024-01-01 to 2024-01-31"
    (button,) = [e for b in private["blocks"] if b["type"] == "actions" for e in b["elements"]]
    payload = block_actions_payload("gad_share", button["value"], response_url=stub.response_url("shared"))
    assert serve.post_signed(*signed_interaction(SIGNING_SECRET, payload))[0] == 200
    replaced, in_channel = stub.wait_for_response("shared", count=2, timeout=15)
    assert in_channel["response_type"] == "in_channel" and in_channel["text"] == private["text"]
    # subscribe in the subscriber's zone, list, preview
    serve.post(stub.slash_fields("subscribe web day:mon time:9", response_name="sub"))
    assert "Mondays at 09:00 (Europe/Paris)" in _answer_text(stub, "sub")
    serve.post(stub.slash_fields("subscriptions", response_name="list"))
    assert "*Schedule:* Mondays at 09:00 (Europe/Paris)" in _answer_text(stub, "list")
    serve.post(stub.slash_fields("digest", response_name="preview"))
    assert "Preview: Weekly 2GAD digest" in _answer_text(stub, "preview")


def test_a_request_cut_off_by_the_shutdown_is_one_line_not_a_traceback():
    import logging
    import threading

    from bot.faces.server import _CutOffByShutdown

    stop = threading.Event()
    cut = _CutOffByShutdown(stop)
    try:
        raise OSError(9, "Bad file descriptor")
    except OSError:
        import sys
        exc_info = sys.exc_info()
    before = logging.LogRecord("waitress", logging.ERROR, __file__, 1, "Exception when servicing %r", ("t",), exc_info)
    assert cut.filter(before) and before.exc_info is not None  # while serving, a server error stays one
    stop.set()
    after = logging.LogRecord("waitress", logging.ERROR, __file__, 1, "Exception when servicing %r", ("t",), exc_info)
    assert cut.filter(after)
    assert after.exc_info is None and after.levelno == logging.INFO
    assert after.getMessage() == "a request in flight was cut off by the shutdown (OSError)"


def test_serve_keeps_the_home_tabs_figures_before_anyone_opens_it(stub, tmp_path):
    """Right after its start, and after a sync, serve's thread computes each repository's figure of the last full
    week, so the first person to open the Home tab waits for none: the open computes nothing (its log line says so).
    Figures by hand: ann on the Wednesday of that week is 1 person-day (2GAD 2); bob on its Thursday makes 2 (4)."""
    import re
    from datetime import datetime, timedelta, timezone

    from tests.faults import SIGNING_SECRET
    from tests.slackstub import app_home_opened_event, event_callback, signed_event

    today = datetime.now(timezone.utc).date()
    monday = today - timedelta(days=today.weekday() + 7)  # the Monday of the last full week, as the tab shows it
    week = f"{monday.isocalendar().year}-W{monday.isocalendar().week:02d}"
    upstream = RepoBuilder(tmp_path / "web")
    upstream.commit(email="ann@example.com", date="2024-01-02")
    upstream.commit(email="ann@example.com", date=f"{monday + timedelta(days=2)}T09:00")
    data = tmp_path / "data"
    track_here(str(upstream.path), "web", data)

    def kept_lines(serve) -> int:
        return len(re.findall(r"Home tab: weekly figures of 1 repository computed in [\d.]+ s, before anyone opened it",
                              serve.stderr))

    def wait_for(condition, what: str) -> None:
        deadline = time.monotonic() + 60  # a loaded 2-core machine starts serve's workers slowly
        while not condition():
            assert time.monotonic() < deadline, f"{what} within 60 s; serve's log:\n{serve.stderr[-3000:]}"
            time.sleep(0.05)

    def open_home(count: int) -> str:
        status, _ = serve.post_signed(*signed_event(SIGNING_SECRET, event_callback(app_home_opened_event("U123"))))
        assert status == 200
        stub.wait_for("views.publish", count=count, timeout=15)
        return json.dumps(stub.home_views["U123"], ensure_ascii=False)

    with Serve(data, stub, logs=tmp_path / "logs", GAD_ADMINS="U123", GAD_LOG_LEVEL="DEBUG") as serve:
        wait_for(lambda: kept_lines(serve) == 1, "serve computed web's figure without a Home open")
        assert f"`web` · 2GAD 2 person-days in {week}" in open_home(1)
        assert "Home tab for U123: 1 repository, 0 weekly figures computed" in serve.stderr, serve.stderr[-3000:]

        upstream.commit(email="bob@example.com", date=f"{monday + timedelta(days=3)}T09:00")
        serve.post(stub.slash_fields("sync web", response_name="sync", user_id="U123"))
        assert "`web`: 3 commits (+1)" in _answer_text(stub, "sync")
        wait_for(lambda: kept_lines(serve) == 2, "serve computed web's figure of its new generation after the sync")
        assert f"`web` · 2GAD 4 person-days in {week}" in open_home(2)
        assert serve.stderr.count("Home tab for U123: 1 repository, 0 weekly figures computed") == 2, \
            serve.stderr[-3000:]
        assert serve.stop(signal.SIGTERM) == 0
    assert "Traceback" not in serve.stderr
