"""Running the Slack app: Socket Mode or HTTP (waitress), the scheduler beside it, a clean SIGTERM."""

from __future__ import annotations

import logging
import os
import faulthandler
import signal
import sys
import threading
import time

from .. import metrics
from ..config import Settings
from ..engine.engine import Engine
from ..errors import ConfigError
from ..service.health import Health, with_health
from ..service.liveness import Heartbeat, ServeLock
from ..service.tokencheck import TokenCheck

log = logging.getLogger(__name__)

# On SIGTERM, how long the questions already acked (whose lazy work asks Slack who asks, then queues) may take
# to reach the report queue, so that the drain tells each person rather than dropping what was acked.
SETTLE_SECONDS = 5.0

_REASONS = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 404: "Not Found", 405: "Method Not Allowed",
            411: "Length Required", 413: "Content Too Large", 415: "Unsupported Media Type",
            503: "Service Unavailable"}


def _plain(start_response, status: int, text: str) -> list[bytes]:
    body = (text + "\n").encode()
    start_response(f"{status} {_REASONS[status]}", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
    return [body]


class _CutOffByShutdown(logging.Filter):
    """A request in flight when SIGTERM closed the server fails writing to its closed socket: that is
    the shutdown we asked for, said in one line, not a traceback waitress logs as a server error."""

    def __init__(self, stop: threading.Event):
        super().__init__()
        self.stop = stop

    def filter(self, record: logging.LogRecord) -> bool:
        if self.stop.is_set() and record.exc_info and str(record.msg).startswith("Exception when servicing"):
            error = record.exc_info[1]
            record.msg, record.args = "a request in flight was cut off by the shutdown (%s)", (type(error).__name__,)
            record.exc_info, record.exc_text, record.levelno, record.levelname = None, None, logging.INFO, "INFO"
        return True


def wsgi_app(bolt_app, gate, hooks=None):
    """/slack/events to Bolt once `gate` (bot.faces.slack.RequestGate) passes it; /healthz answered here;
    /hooks/* to `hooks` (bot.faces.webhooks.wsgi_hooks) when forge webhooks are configured.

    The body is read only after its Content-Length passed the gate (waitress refuses larger
    bodies itself, before buffering them: `max_request_body_size`), and nothing of a refused
    request is logged but its status and the gate's reason.
    """
    import io

    from slack_bolt.adapter.wsgi import SlackRequestHandler

    slack = SlackRequestHandler(bolt_app, path="/slack/events")

    def refuse(start_response, status: int, reason: str) -> list[bytes]:
        log.info("refused a request to /slack/events: %s (%s)", status, reason)
        return _plain(start_response, status, _REASONS[status].lower())

    def application(environ, start_response):
        path = environ.get("PATH_INFO")
        if path == "/healthz":
            return _plain(start_response, 200, "ok")
        if hooks is not None and path.startswith("/hooks/"):
            return hooks(environ, start_response)
        if path != "/slack/events":
            return _plain(start_response, 404, "not found")
        started = time.monotonic()
        try:
            return slack_request(environ, start_response)
        finally:
            metrics.ACK_SECONDS.observe(time.monotonic() - started)  # Bolt acks in the HTTP answer

    def slack_request(environ, start_response):
        if environ.get("REQUEST_METHOD") != "POST":
            return _plain(start_response, 405, "POST only")
        verdict = gate.check_length(environ.get("CONTENT_LENGTH"))
        if verdict.status != 200:
            return refuse(start_response, verdict.status, verdict.reason)
        length = int(environ["CONTENT_LENGTH"])
        body = environ["wsgi.input"].read(length) if length else b""
        headers = {key[5:].replace("_", "-").lower(): value for key, value in environ.items()
                   if key.startswith("HTTP_")}
        headers["content-type"] = environ.get("CONTENT_TYPE", "")
        verdict = gate.check(headers, body)
        if verdict.status != 200:
            return refuse(start_response, verdict.status, verdict.reason)
        environ["wsgi.input"] = io.BytesIO(body)
        return slack(environ, start_response)

    return application


# Slowloris: a stranger may open many connections and send nothing, or a byte now and then.
# Slack sends a whole request at once and within seconds, so connections are plentiful, idle ones
# are closed soon, a request must arrive whole within REQUEST_SECONDS, and at the limit the
# connections idle longest are closed to make room (docs/operations.md: the proxy in front).
CONNECTION_LIMIT = 1000
IDLE_SECONDS = 10  # no byte received for this long, and no request being answered: closed
REQUEST_SECONDS = 10  # from a request's first byte to its last (headers and body)
SHED_LOG_EVERY_SECONDS = 60
ACCEPT_BATCH = 256  # connections taken from the kernel's queue in one turn of the loop


def http_server(application, *, host: str, port: int, threads: int = 16, max_body_bytes: int | None = None):
    """A waitress server for `application` that sheds idle and trickling connections (see above).

    Larger bodies than `max_body_bytes` (default: Slack's bound) are refused with 413 unread."""
    import resource

    from waitress.adjustments import Adjustments
    from waitress.channel import HTTPChannel
    from waitress.server import MultiSocketServer, TcpWSGIServer
    from waitress.task import ThreadedTaskDispatcher

    from .slack import MAX_BODY_BYTES

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = CONNECTION_LIMIT + 256  # the connections, the index, the mirrors, the workers' pipes
    if soft != resource.RLIM_INFINITY and soft < wanted and (hard == resource.RLIM_INFINITY or hard >= wanted):
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))

    class Channel(HTTPChannel):
        request_started: float | None = None  # when the first byte of the request being read arrived

        def received(self, data):
            if data and self.request is None:
                self.request_started = time.time()
            result = super().received(data)
            if self.request is None:
                self.request_started = None  # whole: it is being answered, or it was
            return result

    class Server(TcpWSGIServer):
        channel_class = Channel
        last_shed_log = 0.0

        def maintenance(self, now):
            for channel in list(self.active_channels.values()):
                if channel.requests:
                    continue  # a whole request is being answered
                started = getattr(channel, "request_started", None)
                if channel.last_activity < now - IDLE_SECONDS or (started and now - started > REQUEST_SECONDS):
                    channel.will_close = True

        def readable(self):
            now = time.time()
            if now >= self.next_channel_cleanup:
                self.next_channel_cleanup = now + self.adj.cleanup_interval
                self.maintenance(now)
            if not self.accepting:
                return False
            if len(self._map) < self.adj.connection_limit:
                return True
            self._shed(now)
            return False  # accepting again once the shed connections are closed, a moment later

        def handle_accept(self):
            # waitress takes one connection per turn of its loop, and a turn looks at every open
            # connection: behind a hundred queued ones, a real request waited seconds
            for _ in range(ACCEPT_BATCH):
                before = len(self._map)
                super().handle_accept()
                if len(self._map) == before or len(self._map) >= self.adj.connection_limit:
                    break  # nothing more waiting (or no room)

        def _shed(self, now: float) -> None:
            """Close the quarter of the connections that have been idle longest (none being answered)."""
            idle = sorted((c for c in self.active_channels.values() if not c.requests and not c.will_close),
                          key=lambda c: c.last_activity)
            for channel in idle[:max(1, len(idle) // 4)]:
                channel.will_close = True
            if idle and now - self.last_shed_log > SHED_LOG_EVERY_SECONDS:
                self.last_shed_log = now
                log.warning("%d connections open (the limit): closed the %d idle longest", len(self._map),
                            max(1, len(idle) // 4))

    # waitress answers 413 to a larger Content-Length (or chunked body) before reading it; poll(),
    # not select(), since select() cannot watch descriptors above 1024
    adj = Adjustments(host=host, port=port, threads=threads, ident="gad-bot", connection_limit=CONNECTION_LIMIT,
                      channel_timeout=IDLE_SECONDS, cleanup_interval=1, asyncore_use_poll=True,
                      max_request_body_size=max_body_bytes or MAX_BODY_BYTES, max_request_header_size=65536)
    sockets, dispatcher = {}, ThreadedTaskDispatcher()
    dispatcher.set_thread_count(adj.threads)
    servers = [Server(application, sockets, dispatcher=dispatcher, adj=adj, sockinfo=info) for info in adj.listen]
    if len(servers) == 1:
        return servers[0]
    return MultiSocketServer(sockets, adj, [(s.effective_host, s.effective_port) for s in servers], dispatcher,
                             servers[0].log_info)


def _digests(settings: Settings, engine: Engine, syncer=None, org_syncer=None, sweeper=None):
    """The subscriptions face and the scheduler that delivers digests and has repositories synced (by `syncer`)."""
    from ..digests.schedule import DigestScheduler
    from .slack import web_client
    from ..digests.face import DigestFace

    face = DigestFace(settings, engine)

    def teams():  # Slack's user groups, for the digests of teams (bot/service/members.py)
        from ..service.members import Members

        return Members(settings, engine.index, web_client(settings)).teams()

    scheduler = DigestScheduler(settings, engine, client_factory=lambda: web_client(settings), syncer=syncer,
                                org_syncer=org_syncer, sweeper=sweeper, teams=teams)
    face.on_change = scheduler.reload
    return face, scheduler


def _webhooks(settings: Settings, engine: Engine, syncs):
    """The WSGI application of /hooks/* (None when GAD_WEBHOOK_SECRETS is not set)."""
    if not settings.webhook_secrets:
        return None
    from .webhooks import WebhookFace, wsgi_hooks

    return wsgi_hooks(WebhookFace(settings, engine, syncs))


def _hook_server(hooks, host: str, port: int):
    """Socket Mode has no HTTP server for Slack: the forges' webhooks get their own, on GAD_WEBHOOK_PORT."""
    from .webhooks import MAX_BODY_BYTES

    server = http_server(hooks, host=host, port=port, threads=4, max_body_bytes=MAX_BODY_BYTES)
    log.info("gad-bot taking forge webhooks on %s:%s (/hooks/github|gitlab|gitea)", host, port)
    print(f"gad-bot: taking webhooks on {host}:{port}", flush=True)
    return server


def _run_quietly(server, stop: threading.Event) -> None:
    try:
        server.run()
    except (OSError, ValueError):
        if not stop.is_set():
            log.exception("the webhook server stopped")


def sweep_leftovers(settings: Settings) -> None:
    """Remove the scratch directories (exported trees for `vs:cocomo`) that a killed process left in the data directory."""
    from ..scratch import sweep

    sweep(settings.data_dir / "tmp")


SLACK_RETRY_SECONDS = (2, 60)  # first and longest wait between two tries at Slack's API at start


def wait_for_slack(settings: Settings, stop: threading.Event, first: float = SLACK_RETRY_SECONDS[0]) -> bool:
    """Ask Slack's API (auth.test) until it answers. A refused token is a setting to fix: ConfigError, one
    sentence. No answer at all (a network that comes up after the service, a proxy not there yet, Slack down)
    is said once in one sentence, then asked again, waiting twice as long each time up to a minute, until it
    answers (True) or serve is told to stop (False): a supervisor's restart loop would only say it again."""
    from slack_sdk.errors import SlackApiError

    from .slack import web_client
    from ..service.tokencheck import TRANSIENT

    client = web_client(settings)
    wait, said = first, False
    while not stop.is_set():
        try:
            client.auth_test()
        except SlackApiError as error:
            code = str(error.response.get("error") or "error")
            if code not in TRANSIENT:
                raise ConfigError(f"Slack refused SLACK_BOT_TOKEN ({code}); copy the Bot User OAuth Token (xoxb-...) "
                                  "again from OAuth & Permissions, or reinstall the app.") from None
            reason = f"it answered {code}"
        except Exception as error:  # no answer: refused, unreachable, a time-out, DNS
            reason = type(error).__name__
        else:
            if said:
                log.info("Slack's API answers now; starting")
            return True
        if not said:
            log.error("cannot reach Slack's API at %s (%s); gad-bot keeps trying, every %d s at most, and starts "
                      "once it answers", settings.slack_api_url, reason, SLACK_RETRY_SECONDS[1])
            said = True
        stop.wait(wait)
        wait = min(wait * 2, SLACK_RETRY_SECONDS[1])
    return False


def run_server(settings: Settings, *, socket_mode: bool, host: str, port: int) -> None:
    """Serve until SIGTERM or SIGINT; then stop taking requests, let queued reports finish within
    GAD_SHUTDOWN_GRACE_SECONDS (telling each person whose report is cut off), stop the scheduler, exit.

    One `serve` per data directory: a second is refused at once (ServeLock), before it touches anything.
    """
    lock = ServeLock.acquire(settings)
    try:
        _run_locked(settings, lock, socket_mode=socket_mode, host=host, port=port)
    finally:
        lock.release()


def _run_locked(settings: Settings, lock: ServeLock, *, socket_mode: bool, host: str, port: int) -> None:
    from slack_bolt.error import BoltError

    from .slack import build_app, web_client

    from ..service.syncs import SyncQueue
    from ..service.workers import ReportPool

    # Digests and the Home tab still compute in this process: a shorter GIL switch interval
    # (default 5 ms) lets a waiting ack run sooner meanwhile. Reports and syncs run in worker processes.
    sys.setswitchinterval(0.0005)
    engine = Engine.open(settings)
    sweep_leftovers(settings)  # the mirrors' leftovers are swept in a sync worker once it is up (below)
    syncs = SyncQueue(settings)
    digests, scheduler = _digests(settings, engine, syncer=syncs.sync_due, org_syncer=syncs.sync_orgs_due,
                                  sweeper=syncs.sweep_due)
    hooks = _webhooks(settings, engine, syncs)
    reports = ReportPool(settings, workers=settings.report_workers or None, per_user=settings.reports_per_user)
    stop = threading.Event()
    server = None
    hook_server = None
    handler = None

    def on_signal(signum, frame):
        log.info("received signal %s, shutting down", signum)
        stop.set()
        if server is not None:
            server.close()
        if hook_server is not None:
            hook_server.close()

    # Before Slack is first asked: a SIGTERM that arrives while serve waits for Slack's API or connects Socket
    # Mode (the process is already "up" for a supervisor) must still end it cleanly, not with the default action.
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    if not wait_for_slack(settings, stop):
        engine.index.close()
        log.info("gad-bot stopped before Slack's API answered")
        return
    try:
        app, face = build_app(settings, engine, digests=digests, socket_mode=socket_mode, reports=reports,
                              syncs=syncs)
    except BoltError as error:
        raise ConfigError(f"Slack refused SLACK_BOT_TOKEN ({error}); check the token and SLACK_API_URL.") from None
    home_weeks = face.home_weeks
    syncs.on_done = home_weeks.wake  # a finished sync (its new generation): the Home tab's figure of it, now
    logging.getLogger("waitress").addFilter(_CutOffByShutdown(stop))
    token = TokenCheck(settings, lambda: web_client(settings))
    health = Health(settings, engine, reports, scheduler, syncs=syncs, token=token)
    reports.on_fault = health.suspect_index  # a report that met a damaged page: readiness checks the index now
    mode = "Socket Mode" if socket_mode else f"HTTP on {host}:{port}"
    heartbeat = Heartbeat(settings, lock, describe=lambda: health.serve_state(mode))
    health.on_change = token.on_change = heartbeat.wake  # `gad-bot status` reads a new FAIL at once, not in 30 s
    metrics.watch(health.snapshot)
    # `kill -USR1 PID` writes every thread's stack to the log's stderr: what a stuck serve is waiting for, at 3 a.m.
    faulthandler.register(signal.SIGUSR1, all_threads=True)
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
    from ..version import package_version

    # once the settings are known to work: a refused token is the one line, not a start-up line before it
    log.info("gad-bot %s starting: schema %s, mode %s, data directory %s", package_version(),
             engine.index.schema_version(), mode, settings.data_dir)
    if not stop.is_set():  # a SIGTERM during the connect: no workers to start only to stop them again
        reports.start()  # once the settings are known to work: a refused token exits without workers to stop
        syncs.start()
        # What a killed clone, fetch or untrack left, orphan mirrors included: in a worker, as before each periodic
        # sync, since listing every mirror's objects (1.5 s for 200 mirrors) here held serve's first answer.
        syncs.sweep_due()
        log.info("computing reports in %d worker processes, syncs in %d", reports.workers, syncs.workers)
        # The Home tab's weekly figures of every repository, in a thread: the first person to open the tab does not
        # wait for them all (1.8 s at 2,000 repositories), and serve answers meanwhile.
        home_weeks.start()
    if scheduler is not None:
        scheduler.start()
    heartbeat.start()  # after the scheduler: its first beat lists the jobs for `gad-bot status`
    health.start()
    token.start()
    try:
        if handler is not None:
            log.info("gad-bot serving in Socket Mode")
            print("gad-bot: serving in Socket Mode", flush=True)
            if hooks is not None and settings.webhook_port:
                hook_server = _hook_server(with_health(hooks, health), host, settings.webhook_port)
                threading.Thread(target=_run_quietly, args=(hook_server, stop), name="webhooks", daemon=True).start()
            stop.wait()
            handler.close()
        else:
            from .slack import RequestGate

            gate = RequestGate(settings.slack_signing_secret, engine.index)
            server = http_server(with_health(wsgi_app(app, gate, hooks), health), host=host, port=port)
            log.info("gad-bot serving HTTP on %s:%s (/slack/events, /healthz, /readyz, /metrics%s)", host, port,
                     ", /hooks/github|gitlab|gitea" if hooks is not None else "")
            print(f"gad-bot: serving HTTP on {host}:{port}", flush=True)
            try:
                if not stop.is_set():  # a SIGTERM may have come before the server existed to close
                    server.run()
            except (OSError, ValueError):
                if not stop.is_set():
                    raise
    finally:
        home_weeks.stop()  # it ends between two repositories, well before the index closes below
        if scheduler is not None:
            scheduler.shutdown(wait=False)
        syncs.shutdown()  # a sync in flight rolls back; the next run redoes it
        if stop.is_set():
            if not face.settle(SETTLE_SECONDS):  # questions acked before the signal queue before the drain
                log.warning("shutting down: some questions acked %s s ago were still being queued", SETTLE_SECONDS)
            reports.drain(settings.shutdown_grace_seconds)
        else:
            reports.shutdown()
        heartbeat.stop()
        health.stop()
        token.stop()
        engine.index.close()
        log.info("gad-bot stopped")
    if stop.is_set():
        from ..spawning import remove_server_files

        remove_server_files()  # what the exit handlers that os._exit skips would have removed
        os._exit(0)  # lazy-listener threads must not hold the exit
