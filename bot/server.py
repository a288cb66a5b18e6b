"""Running the Slack app: Socket Mode or HTTP (waitress), the scheduler beside it, a clean SIGTERM."""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
import time
from pathlib import Path

from .config import Settings
from .engine import Engine
from .errors import ConfigError

log = logging.getLogger(__name__)

HEARTBEAT_SECONDS = 30


def heartbeat_path(settings: Settings) -> Path:
    return settings.data_dir / "serve.heartbeat"


def heartbeat_age(settings: Settings) -> float | None:
    """Seconds since the serving process last said it was alive, or None."""
    try:
        return time.time() - heartbeat_path(settings).stat().st_mtime
    except OSError:
        return None


class _Heartbeat(threading.Thread):
    def __init__(self, settings: Settings):
        super().__init__(name="heartbeat", daemon=True)
        self.path = heartbeat_path(settings)
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.is_set():
            self.path.touch()
            self.stopped.wait(HEARTBEAT_SECONDS)

    def stop(self) -> None:
        self.stopped.set()
        self.path.unlink(missing_ok=True)


def wsgi_app(bolt_app):
    """/slack/events to Bolt, /healthz answered here (no Slack round trip)."""
    from slack_bolt.adapter.wsgi import SlackRequestHandler

    slack = SlackRequestHandler(bolt_app, path="/slack/events")

    def application(environ, start_response):
        if environ.get("PATH_INFO") == "/healthz":
            start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "3")])
            return [b"ok\n"]
        return slack(environ, start_response)

    return application


def _digests(settings: Settings, engine: Engine):
    """The subscriptions face and the scheduler that delivers digests and syncs repositories."""
    from .schedule import DigestScheduler
    from .slack import web_client
    from .subscriptions import DigestFace

    face = DigestFace(settings, engine)
    scheduler = DigestScheduler(settings, engine, client_factory=lambda: web_client(settings))
    face.on_change = scheduler.reload
    return face, scheduler


def run_server(settings: Settings, *, socket_mode: bool, host: str, port: int) -> None:
    """Serve until SIGTERM or SIGINT; then stop taking requests, stop the scheduler, exit."""
    from slack_bolt.error import BoltError

    from .slack import build_app, web_client

    # Acks and report work share one interpreter: a shorter GIL switch interval (default 5 ms) lets a
    # waiting ack run sooner while a large report computes.
    sys.setswitchinterval(0.0005)
    engine = Engine.open(settings)
    engine.store.sweep()
    digests, scheduler = _digests(settings, engine)
    try:
        app, _ = build_app(settings, engine, digests=digests, socket_mode=socket_mode)
    except BoltError as error:
        raise ConfigError(f"Slack refused SLACK_BOT_TOKEN ({error}); check the token and SLACK_API_URL.") from None
    stop = threading.Event()
    heartbeat = _Heartbeat(settings)

    def on_signal(signum, frame):
        log.info("received signal %s, shutting down", signum)
        stop.set()
        if server is not None:
            server.close()

    server = None
    handler = None
    # Before connecting: a SIGTERM that arrives while Socket Mode connects (the process is already
    # "up" for a supervisor) must still end it cleanly, not with the default action.
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    if socket_mode:  # connect first: a refused app token is a setting to fix, said before anything starts
        from slack_bolt.adapter.socket_mode import SocketModeHandler
        from slack_sdk.errors import SlackApiError

        handler = SocketModeHandler(app, settings.slack_app_token, web_client=web_client(settings, token=""))
        quiet = logging.getLogger("gad-bot.bolt")
        level = quiet.level
        quiet.setLevel(logging.CRITICAL)  # a refusal here becomes the one line below, not a log record too
        try:
            handler.connect()
        except SlackApiError as error:
            raise ConfigError(f"Slack refused SLACK_APP_TOKEN ({error.response.get('error', 'error')}); create an "
                              "app-level token with connections:write under Basic Information.") from None
        finally:
            quiet.setLevel(level)
    heartbeat.start()
    if scheduler is not None:
        scheduler.start()
    try:
        if handler is not None:
            log.info("gad-bot serving in Socket Mode")
            print("gad-bot: serving in Socket Mode", flush=True)
            stop.wait()
            handler.close()
        else:
            import waitress

            server = waitress.create_server(wsgi_app(app), host=host, port=port, threads=16,
                                            ident="gad-bot", channel_timeout=30)
            log.info("gad-bot serving HTTP on %s:%s (/slack/events, /healthz)", host, port)
            print(f"gad-bot: serving HTTP on {host}:{port}", flush=True)
            try:
                if not stop.is_set():  # a SIGTERM may have come before the server existed to close
                    server.run()
            except (OSError, ValueError):
                if not stop.is_set():
                    raise
    finally:
        if scheduler is not None:
            scheduler.shutdown(wait=False)  # a sync in flight rolls back; the next run redoes it
        heartbeat.stop()
        engine.index.close()
        log.info("gad-bot stopped")
    os._exit(0) if stop.is_set() else None  # lazy-listener threads must not hold the exit
