"""Secrets never leave: every log line, message, listing and error text is searched for them.

gad-bot is started with a known bot token, signing secret, app token and HTTPS token (at
GAD_LOG_LEVEL=DEBUG, the chattiest setting), made to use and to fail with each, and fed a URL
with a password in it. Then everything it wrote or sent is collected: the serve processes'
stdout/stderr, every request the Slack stand-in received (bodies, query strings and headers,
except the Authorization header that carries the token to Slack by design), every Socket Mode
message, `gad-bot repos` (text and JSON), CLI errors and the in-process log (caplog).
"""

from __future__ import annotations

import json
import logging
import signal
from pathlib import Path

from tests.faults import GitHttpServer, Serve, run_cli
from tests.gitbuild import RepoBuilder
from tests.slackstub import SlackStub

BOT_TOKEN = "xoxb-7777-8888-SeCrEtBoTtOkEn1234"
APP_TOKEN = "xapp-1-A0GADAPP1-9999-SeCrEtApPtOkEn5678"
SIGNING = "SeCrEtSiGnInG0123456789abcdef0000"
HTTPS_TOKEN = "ghp_SeCrEtHtTpStOkEn000111222333"
URL_PASSWORD = "SeCrEtUrLpAsSwOrD987"
SECRETS = (BOT_TOKEN, APP_TOKEN, SIGNING, HTTPS_TOKEN, URL_PASSWORD,
           "SeCrEtBoTtOkEn", "SeCrEtApPtOkEn", "SeCrEtSiGnInG", "SeCrEtHtTpStOkEn", "SeCrEtUrLpAsSwOrD")


def _leaks(label: str, text: str) -> list[str]:
    return [f"{label}: {s}" for s in SECRETS if s in text]


def _stub_texts(stub: SlackStub) -> str:
    parts = []
    for call in stub.calls:
        headers = {k: v for k, v in call.headers.items() if k != "authorization"}
        parts.append(json.dumps([call.method, call.path, call.query, headers, call.response], default=str))
        parts.append(call.raw.decode("utf-8", "replace"))
    parts.append(json.dumps(stub.socket_messages, default=str))
    return "\n".join(parts)


def test_no_secret_appears_anywhere(tmp_path, caplog):
    small = RepoBuilder(tmp_path / "srv" / "small.git", bare=True)
    for day in range(1, 6):
        small.commit(email=f"dev{day % 2}@example.com", date=f"2024-01-{day:02d}")
    data = tmp_path / "data"
    leaks: list[str] = []
    env = dict(GAD_HTTPS_TOKENS=f"127.0.0.1={HTTPS_TOKEN}", GAD_LOG_LEVEL="DEBUG")
    # The commands run as processes: what their workers and fetch children write is then theirs to check too.

    with GitHttpServer(tmp_path / "srv") as git_server:
        tracked = run_cli("track", git_server.url("small.git"), "--name", "small", data=data, process=True, **env)
        assert tracked.returncode == 0, tracked.stderr
        leaks += _leaks("track", tracked.stdout + tracked.stderr)
        # 1. the repository turns private: the HTTPS token is sent (whether or not the sync then succeeds,
        #    see test_remote.py::test_private_https_repository_with_a_token) ...
        git_server.mode, git_server.password = "auth", HTTPS_TOKEN
        small.commit(email="dev3@example.com", date="2024-01-09")
        first = run_cli("sync", "small", data=data, process=True, **env)
        assert any(auth for _, _, auth in git_server.requests), "the token was never sent"
        leaks += _leaks("sync", first.stdout + first.stderr)
        # ... and refused (rotated upstream): the error names the setting, never the value
        git_server.password = "rotated"
        small.commit(email="dev4@example.com", date="2024-01-10")
        failed = run_cli("sync", "small", data=data, process=True, **env)
        assert failed.returncode == 1 and "GAD_HTTPS_TOKENS" in failed.stdout, failed.stdout + failed.stderr
        leaks += _leaks("sync", failed.stdout + failed.stderr)
        # 2. a URL with a password in it is refused without being echoed
        typed = run_cli("track", f"http://gad:{URL_PASSWORD}@127.0.0.1:{git_server.port}/small.git", data=data,
                        process=True, **env)
        assert typed.returncode == 2
        leaks += _leaks("track with credentials", typed.stdout + typed.stderr)
        for args in (("repos",), ("repos", "--json")):
            listing = run_cli(*args, data=data, process=True, **env)
            assert listing.returncode == 0
            leaks += _leaks(" ".join(args), listing.stdout + listing.stderr)

        with SlackStub(good_token=BOT_TOKEN, app_token=APP_TOKEN) as stub:
            # 3. HTTP mode: signed requests, an admin's sync that fails on the HTTPS token, a pasted password
            with Serve(data, stub, secret=SIGNING, logs=tmp_path / "http", GAD_ADMINS="U123", **env) as serve:
                for name, text in (("sync", "sync small"), ("paste", f"track https://gad:{URL_PASSWORD}@github.com/a/b"),
                                   ("repos", "repos")):
                    status, body, _ = serve.post(stub.slash_fields(text, response_name=name))
                    assert status == 200
                    leaks += _leaks(f"ack of {name}", body.decode("utf-8", "replace"))
                    if name == "paste":  # refused in the ack itself
                        assert "credentials" in body.decode().lower() or "secret" in body.decode().lower()
                        continue
                    stub.wait_for_response(name, timeout=20)
                assert "GAD_HTTPS_TOKENS" in json.dumps(stub.responses("sync"))
                forged, _, _ = serve.post(stub.slash_fields("repos"), secret="not-the-secret")
                assert forged == 401
                assert serve.stop(signal.SIGTERM) == 0
                assert " DEBUG " in serve.stderr  # the chattiest log level really was on
                leaks += _leaks("serve (HTTP) output", serve.stdout + serve.stderr)
            # 4. Socket Mode with the app token
            with Serve(data, stub, socket_mode=True, logs=tmp_path / "socket", **env) as serve:
                envelope = stub.socket_send_slash_command(stub.slash_fields("repos", response_name="sock"))
                stub.wait_for_ack(envelope, timeout=10)
                stub.wait_for_response("sock", timeout=20)
                assert serve.stop(signal.SIGTERM) == 0
                leaks += _leaks("serve (Socket Mode) output", serve.stdout + serve.stderr)
            leaks += _leaks("requests received by Slack", _stub_texts(stub))

            # 5. in process, with the log captured: the same failures through Engine and the Bolt app
            from slack_bolt.request import BoltRequest

            from bot.config import Settings
            from bot.engine.engine import Engine
            from bot.faces.slack import build_app
            from tests.slackstub import signed_slash_command

            caplog.set_level(logging.DEBUG)
            settings = Settings.from_env({"GAD_DATA_DIR": str(data), "SLACK_BOT_TOKEN": BOT_TOKEN,
                                          "SLACK_SIGNING_SECRET": SIGNING, "SLACK_API_URL": stub.api_url,
                                          "GAD_ADMINS": "U123", **env})
            engine = Engine.open(settings)
            result = engine.sync(["small"])[0]
            assert result.error and "GAD_HTTPS_TOKENS" in result.error
            leaks += _leaks("SyncResult.error", result.error)
            app, _ = build_app(settings, engine, socket_mode=False)
            for name, text in (("inproc-paste", f"track https://gad:{URL_PASSWORD}@github.com/a/b"),
                               ("inproc-sync", "sync small")):
                body, headers = signed_slash_command(SIGNING, stub.slash_fields(text, response_name=name))
                response = app.dispatch(BoltRequest(body=body.decode(), headers={k.lower(): v for k, v in headers.items()}))
                assert response.status == 200
                leaks += _leaks(f"in-process ack of {name}", response.body or "")
                if name != "inproc-paste":  # the paste is refused in the ack
                    stub.wait_for_response(name, timeout=20)
            leaks += _leaks("in-process replies", json.dumps([stub.responses(n) for n in ("inproc-paste", "inproc-sync")]))
            engine.index.close()
    leaks += _leaks("in-process log", caplog.text + "\n".join(str(r.args) for r in caplog.records))
    assert leaks == []
    # And on disk: the index keeps no secret either.
    raw = b"".join(p.read_bytes() for p in data.glob("index.sqlite*"))
    assert not [s for s in SECRETS if s.encode() in raw]
    assert not [s for s in SECRETS for p in Path(data).rglob("config") if s in p.read_text(errors="replace")]
