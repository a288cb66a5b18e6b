"""A loopback stand-in for Slack, for tests.

One ``SlackStub`` runs, on 127.0.0.1 and in background threads:

* an HTTP server answering the Web API under ``stub.api_url`` (``.../api/<method>``)
  the way slack.com does (JSON bodies, ``ok``/``error``, ``x-oauth-scopes`` header,
  429 + ``Retry-After``), the file-upload URLs that ``files.getUploadURLExternal``
  hands out, and ``response_url`` endpoints (``/response/<name>``);
* a WebSocket server for Socket Mode: ``apps.connections.open`` (called with the app
  token) returns ``ws://127.0.0.1:<port>/link/?ticket=...``; the server says
  ``{"type": "hello", ...}`` first, then sends envelopes on request and records acks.

Point the code under test at it::

    with SlackStub() as stub:
        client = WebClient(base_url=stub.api_url, token=stub.good_token)
        app = App(client=client)                 # Bolt calls auth.test here
        handler = SocketModeHandler(app, app_token=stub.app_token)
        handler.connect()
        env = stub.socket_send_slash_command(stub.slash_fields("report"))
        stub.wait_for_ack(env)
        stub.close_socket_mode(handler)           # fast, quiet shutdown

Everything the stub receives is recorded in ``stub.calls``; everything it answers is
realistic enough that slack_sdk's and slack_bolt's own parsing runs unchanged.
HTTP-mode requests (what Slack POSTs to the app) are built with ``signed_slash_command``,
``signed_interaction``, ``signed_event`` and ``signed_request``.
"""

from __future__ import annotations

import hashlib
import hmac
import itertools
import json
import logging
import threading
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from http.server import BaseHTTPRequestHandler
from typing import Any, Iterator, Mapping
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest

from tests.loopback import LoopbackServer

log = logging.getLogger("tests.slackstub")

TEAM_ID = "T0GAD0001"
TEAM_DOMAIN = "gad-test"
TEAM_NAME = "GAD Test"
BOT_USER_ID = "U0GADBOT1"
BOT_USER_NAME = "gad-bot"
BOT_ID = "B0GADBOT1"
APP_ID = "A0GADAPP1"
VERIFICATION_TOKEN = "vErIfIcAtIoNtOkEn0000000"  # the legacy "token" field in payloads

DEFAULT_BOT_TOKEN = "xoxb-1111-2222-gadstubtoken"
DEFAULT_APP_TOKEN = "xapp-1-A0GADAPP1-3333-gadstubapptoken"
DEFAULT_SCOPES = (
    "commands",
    "chat:write",
    "users:read",
    "users:read.email",
    "usergroups:read",
    "channels:read",
    "groups:read",
    "im:read",
    "mpim:read",
    "files:write",
    "links:read",
    "links:write",
)
RESPONSE_URL_MAX_USES = 5  # Slack: a response_url works up to 5 times ...
RESPONSE_URL_TTL = 30 * 60  # ... within 30 minutes

# Scopes a method needs (Slack answers missing_scope with needed/provided otherwise).
METHOD_SCOPES: dict[str, str] = {
    "chat.postMessage": "chat:write",
    "chat.postEphemeral": "chat:write",
    "chat.update": "chat:write",
    "users.info": "users:read",
    "users.list": "users:read",
    "chat.unfurl": "links:write",
    "users.conversations": "channels:read",
    "conversations.list": "channels:read",
    "usergroups.list": "usergroups:read",
    "usergroups.users.list": "usergroups:read",
    "files.getUploadURLExternal": "files:write",
    "files.completeUploadExternal": "files:write",
}
NO_AUTH_METHODS = {"api.test"}
CHANNEL_READ_SCOPES = {"C": "channels:read", "G": "groups:read", "D": "im:read"}

# Form-encoded parameters whose values are JSON documents (decoded by Call.args).
JSON_PARAMS = {"blocks", "attachments", "view", "files", "metadata", "unfurls", "outputs"}

MAX_MESSAGE_BLOCKS = 50
MAX_VIEW_BLOCKS = 100
MAX_SECTION_TEXT = 3000
MAX_HEADER_TEXT = 150


# ----------------------------------------------------------------------------------
# records


@dataclass
class Call:
    """One HTTP request the stub received (Web API, file upload or response_url)."""

    method: str  # "chat.postMessage", or "upload:<file_id>", or "response:<name>"
    path: str  # HTTP path without the query string, e.g. "/api/chat.postMessage"
    http_method: str  # "POST" / "GET"
    headers: dict[str, str]  # lower-cased names
    query: dict[str, Any]
    body: Any  # dict for form/JSON bodies, str for other text, None when empty/binary
    raw: bytes
    token: str | None
    time: float  # time.time() on arrival
    status: int | None = None  # HTTP status the stub answered (None while in flight)
    response: Any = None  # the JSON (or text) the stub answered

    @property
    def params(self) -> dict[str, Any]:
        """Query string and body parameters merged (body wins), values as sent."""
        merged = dict(self.query)
        if isinstance(self.body, dict):
            merged.update(self.body)
        return merged

    @property
    def args(self) -> dict[str, Any]:
        """Like ``params`` but JSON-in-a-form-field values (blocks, view, ...) decoded."""
        out = {}
        for k, v in self.params.items():
            if k in JSON_PARAMS and isinstance(v, str):
                try:
                    v = json.loads(v)
                except ValueError:
                    pass
            out[k] = v
        return out

    @property
    def ok(self) -> bool | None:
        if isinstance(self.response, dict):
            return bool(self.response.get("ok"))
        return None if self.status is None else self.status == 200


@dataclass
class UploadedFile:
    id: str
    filename: str
    length: int
    upload_url: str
    alt_txt: str | None = None
    snippet_type: str | None = None
    data: bytes | None = None  # set by the upload POST
    title: str | None = None  # set by files.completeUploadExternal
    channel_id: str | None = None
    initial_comment: str | None = None
    thread_ts: str | None = None
    completed: bool = False


@dataclass
class _Failure:
    status: int
    error: str | None
    retry_after: int | None
    extra: dict
    remaining: int


@dataclass
class _ResponseURL:
    name: str
    max_uses: int
    ttl: float
    created: float = field(default_factory=time.monotonic)
    uses: int = 0
    expired: bool = False
    bodies: list = field(default_factory=list)


class _SocketSession:
    def __init__(self, conn, number: int):
        self.conn = conn
        self.number = number
        self.messages: list[Any] = []
        self.disconnect_sent = False
        try:
            self.client_port = conn.remote_address[1]
        except Exception:  # pragma: no cover
            self.client_port = None


# ----------------------------------------------------------------------------------
# HTTP-mode helpers (requests Slack sends *to* the app)


def slack_signature(secret: str, timestamp: str | int, body: bytes | str) -> str:
    """``v0=`` + hex HMAC-SHA256 of ``v0:{timestamp}:{body}`` with the signing secret."""
    if isinstance(body, bytes):
        body = body.decode("utf-8")
    base = f"v0:{timestamp}:{body}".encode("utf-8")
    return "v0=" + hmac.new(secret.encode("utf-8"), base, hashlib.sha256).hexdigest()


def signed_request(
    secret: str, body: bytes | str, content_type: str, timestamp: int | str | None = None
) -> tuple[bytes, dict[str, str]]:
    """Sign an arbitrary body as Slack does; returns (body_bytes, headers)."""
    if isinstance(body, str):
        body = body.encode("utf-8")
    ts = str(int(time.time()) if timestamp is None else timestamp)
    headers = {
        "Content-Type": content_type,
        "X-Slack-Request-Timestamp": ts,
        "X-Slack-Signature": slack_signature(secret, ts, body),
        "User-Agent": "Slackbot 1.0 (+https://api.slack.com/robots)",
        "Content-Length": str(len(body)),
    }
    return body, headers


def signed_slash_command(
    secret: str, fields: Mapping[str, Any], timestamp: int | str | None = None
) -> tuple[bytes, dict[str, str]]:
    """Form-encode slash command fields (in the given order) and sign them."""
    body = urlencode([(k, "" if v is None else str(v)) for k, v in fields.items()])
    return signed_request(secret, body, "application/x-www-form-urlencoded", timestamp)


def signed_interaction(
    secret: str, payload: Mapping[str, Any], timestamp: int | str | None = None
) -> tuple[bytes, dict[str, str]]:
    """Interactive payloads (block_actions, view_submission...): ``payload=<json>`` form."""
    body = urlencode({"payload": json.dumps(payload, separators=(",", ":"))})
    return signed_request(secret, body, "application/x-www-form-urlencoded", timestamp)


def signed_event(
    secret: str, envelope: Mapping[str, Any], timestamp: int | str | None = None
) -> tuple[bytes, dict[str, str]]:
    """Events API requests: a JSON body (use ``event_callback(...)`` to build one)."""
    body = json.dumps(envelope, separators=(",", ":"))
    return signed_request(secret, body, "application/json", timestamp)


_trigger_counter = itertools.count(1)


def _trigger_id() -> str:
    return f"{1000000000 + next(_trigger_counter)}.{4444444444}.{uuid.uuid4().hex}"


def slash_fields(
    text: str = "",
    *,
    response_url: str = f"https://hooks.slack.com/commands/{TEAM_ID}/1000000001/stubresponseurl",
    **overrides: Any,
) -> dict[str, str]:
    """Slash command fields in Slack's order with realistic defaults (user U123, channel C123).

    Prefer ``stub.slash_fields(...)``, whose response_url points at the stub.
    """
    fields = {
        "token": VERIFICATION_TOKEN,
        "team_id": TEAM_ID,
        "team_domain": TEAM_DOMAIN,
        "channel_id": "C123",
        "channel_name": "general",
        "user_id": "U123",
        "user_name": "alice",
        "command": "/gad",
        "text": text,
        "api_app_id": APP_ID,
        "is_enterprise_install": "false",
        "response_url": response_url,
        "trigger_id": _trigger_id(),
    }
    for k, v in overrides.items():
        fields[k] = v
    return fields


def block_actions_payload(
    action_id: str,
    value: str | None = None,
    *,
    block_id: str = "actions",
    user_id: str = "U123",
    channel_id: str = "C123",
    message_ts: str | None = "1700000000.000100",
    response_url: str = f"https://hooks.slack.com/actions/{TEAM_ID}/1000000002/stubresponseurl",
    action_type: str = "button",
    container_type: str = "message",
) -> dict[str, Any]:
    """A ``block_actions`` interactive payload as Slack sends it (one button click)."""
    action: dict[str, Any] = {
        "action_id": action_id,
        "block_id": block_id,
        "type": action_type,
        "action_ts": f"{time.time():.6f}",
    }
    if action_type == "button":
        action["text"] = {"type": "plain_text", "text": action_id, "emoji": True}
    if value is not None:
        action["value"] = value
    payload: dict[str, Any] = {
        "type": "block_actions",
        "user": {"id": user_id, "username": "alice", "name": "alice", "team_id": TEAM_ID},
        "api_app_id": APP_ID,
        "token": VERIFICATION_TOKEN,
        "trigger_id": _trigger_id(),
        "team": {"id": TEAM_ID, "domain": TEAM_DOMAIN},
        "enterprise": None,
        "is_enterprise_install": False,
        "actions": [action],
        "state": {"values": {}},
    }
    if container_type == "message":
        payload["container"] = {
            "type": "message",
            "message_ts": message_ts,
            "channel_id": channel_id,
            "is_ephemeral": False,
        }
        payload["channel"] = {"id": channel_id, "name": "general"}
        payload["message"] = {"type": "message", "ts": message_ts, "bot_id": BOT_ID, "text": "", "blocks": []}
        payload["response_url"] = response_url
    else:  # a Home tab / view
        payload["container"] = {"type": "view", "view_id": "V0GADHOME"}
        payload["view"] = {"id": "V0GADHOME", "type": "home", "team_id": TEAM_ID, "blocks": []}
    return payload


def event_callback(event: Mapping[str, Any], *, event_id: str | None = None) -> dict[str, Any]:
    """Wrap an event in the Events API envelope (``type: event_callback``)."""
    now = int(time.time())
    return {
        "token": VERIFICATION_TOKEN,
        "team_id": TEAM_ID,
        "context_team_id": TEAM_ID,
        "context_enterprise_id": None,
        "api_app_id": APP_ID,
        "event": dict(event),
        "type": "event_callback",
        "event_id": event_id or "Ev" + uuid.uuid4().hex[:10].upper(),
        "event_time": now,
        "authorizations": [
            {
                "enterprise_id": None,
                "team_id": TEAM_ID,
                "user_id": BOT_USER_ID,
                "is_bot": True,
                "is_enterprise_install": False,
            }
        ],
        "is_ext_shared_channel": False,
        "event_context": "4-" + uuid.uuid4().hex,
    }


def app_home_opened_event(user_id: str = "U123", tab: str = "home") -> dict[str, Any]:
    """The inner ``app_home_opened`` event (wrap with ``event_callback``)."""
    return {
        "type": "app_home_opened",
        "user": user_id,
        "channel": "D0GADHOME",
        "tab": tab,
        "event_ts": f"{time.time():.6f}",
    }


def link_shared_event(urls: list[str], *, user_id: str = "U123", channel: str = "C123",
                      message_ts: str = "1700000000.000200") -> dict[str, Any]:
    """The inner ``link_shared`` event (wrap with ``event_callback``), as Slack documents it: one
    entry per link on a domain listed in the app's ``unfurl_domains``."""
    return {
        "type": "link_shared",
        "channel": channel,
        "is_bot_user_member": True,
        "user": user_id,
        "message_ts": message_ts,
        "unfurl_id": f"{message_ts.replace('.', '')}.{uuid.uuid4().hex[:20]}",
        "source": "conversations_history",
        "links": [{"domain": (urlsplit(u).hostname or "").removeprefix("www."), "url": u} for u in urls],
        "event_ts": f"{time.time():.6f}",
    }


def function_executed_event(callback_id: str, inputs: Mapping[str, Any], *, bot_access_token: str,
                            function_execution_id: str | None = None) -> dict[str, Any]:
    """The inner ``function_executed`` event of a custom step run by a workflow (wrap with
    ``event_callback``), as Slack documents it; ``bot_access_token`` is the run's own token."""
    return {
        "type": "function_executed",
        "function": {"id": "Fn0GADSTEP1", "callback_id": callback_id, "title": callback_id, "description": "",
                     "type": "app", "input_parameters": [], "output_parameters": [], "app_id": APP_ID,
                     "date_created": 1700000000, "date_updated": 1700000000, "date_deleted": 0},
        "inputs": dict(inputs),
        "function_execution_id": function_execution_id or "Fx" + uuid.uuid4().hex[:10].upper(),
        "workflow_execution_id": "Wx" + uuid.uuid4().hex[:10].upper(),
        "event_ts": f"{time.time():.6f}",
        "bot_access_token": bot_access_token,
    }


def view_state(view: Mapping[str, Any], answers: Mapping[str, Any]) -> dict[str, Any]:
    """``view.state.values`` as Slack sends it on submit, for the input blocks answered in ``answers``
    (block_id -> a list of option values, a date/time/conversation id, an option value or text)."""
    values: dict[str, Any] = {}
    for block in view.get("blocks") or []:
        if block.get("type") != "input" or block.get("block_id") not in answers:
            continue
        element, answer = block["element"], answers[block["block_id"]]
        kind = element["type"]
        state: dict[str, Any] = {"type": kind}
        if kind == "multi_external_select":
            state["selected_options"] = [{"text": {"type": "plain_text", "text": v, "emoji": True}, "value": v}
                                         for v in answer]
        elif kind == "static_select":
            (option,) = [o for o in element["options"] if o["value"] == answer]
            state["selected_option"] = option
        elif kind == "datepicker":
            state["selected_date"] = answer
        elif kind == "timepicker":
            state["selected_time"] = answer
        elif kind == "conversations_select":
            state["selected_conversation"] = answer
        else:
            state["value"] = answer
        values[block["block_id"]] = {element["action_id"]: state}
    return {"values": values}


def view_submission_payload(view: Mapping[str, Any], answers: Mapping[str, Any], *,
                            user_id: str = "U123") -> dict[str, Any]:
    """A ``view_submission`` payload: the opened modal (as views.open returned it) with its answers."""
    submitted = dict(view)
    submitted["state"] = view_state(view, answers)
    return {
        "type": "view_submission",
        "team": {"id": TEAM_ID, "domain": TEAM_DOMAIN},
        "user": {"id": user_id, "username": "alice", "name": "alice", "team_id": TEAM_ID},
        "api_app_id": APP_ID,
        "token": VERIFICATION_TOKEN,
        "trigger_id": _trigger_id(),
        "view": submitted,
        "response_urls": [],
        "is_enterprise_install": False,
        "enterprise": None,
    }


def block_suggestion_payload(view: Mapping[str, Any], action_id: str, value: str, *, block_id: str,
                             user_id: str = "U123") -> dict[str, Any]:
    """A ``block_suggestion`` payload: a person typed ``value`` into an external select of an open modal."""
    return {
        "type": "block_suggestion",
        "user": {"id": user_id, "username": "alice", "name": "alice", "team_id": TEAM_ID},
        "container": {"type": "view", "view_id": view.get("id")},
        "api_app_id": APP_ID,
        "token": VERIFICATION_TOKEN,
        "action_id": action_id,
        "block_id": block_id,
        "value": value,
        "team": {"id": TEAM_ID, "domain": TEAM_DOMAIN},
        "enterprise": None,
        "is_enterprise_install": False,
        "view": dict(view),
    }


def message_action_payload(callback_id: str, text: str, *, user_id: str = "U123", channel_id: str = "C123",
                           message_ts: str = "1700000000.000300", thread_ts: str | None = None,
                           response_url: str = f"https://hooks.slack.com/app/{TEAM_ID}/1000000003/stubresponseurl"
                           ) -> dict[str, Any]:
    """A ``message_action`` payload (a message shortcut chosen on a message), as Slack sends it."""
    message: dict[str, Any] = {"type": "message", "user": "U0AUTHOR", "text": text, "ts": message_ts,
                               "team": TEAM_ID}
    if thread_ts:
        message["thread_ts"] = thread_ts
    return {
        "type": "message_action",
        "token": VERIFICATION_TOKEN,
        "action_ts": f"{time.time():.6f}",
        "team": {"id": TEAM_ID, "domain": TEAM_DOMAIN},
        "user": {"id": user_id, "username": "alice", "team_id": TEAM_ID, "name": "alice"},
        "channel": {"id": channel_id, "name": "general"},
        "is_enterprise_install": False,
        "enterprise": None,
        "callback_id": callback_id,
        "trigger_id": _trigger_id(),
        "response_url": response_url,
        "message_ts": message_ts,
        "message": message,
    }


# ----------------------------------------------------------------------------------
# the stub


class _Handler(BaseHTTPRequestHandler):
    server_version = "SlackStub/1.0"
    stub: "SlackStub"  # set on the subclass made per stub

    def do_POST(self) -> None:
        self.stub._handle_http(self)

    def do_GET(self) -> None:
        self.stub._handle_http(self)

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        log.debug("%s " + format, self.address_string(), *args)


class SlackStub:
    """Loopback Slack: Web API + file uploads + response_urls + Socket Mode.

    Settable state (read on every request): ``good_token``, ``app_token``, ``scopes``,
    ``user_tz``, ``admins``, ``owners``, ``users`` (per-user field overrides),
    ``channels`` (see ``add_channel``), ``token_revoked``.
    """

    def __init__(
        self,
        *,
        good_token: str = DEFAULT_BOT_TOKEN,
        app_token: str = DEFAULT_APP_TOKEN,
        scopes: list[str] | tuple[str, ...] = DEFAULT_SCOPES,
        user_tz: str = "America/Los_Angeles",
        admins: set[str] | list[str] | tuple[str, ...] = (),
        port: int = 0,
    ):
        self.good_token = good_token
        self._want_port = port  # 0: any free port; a fixed one lets a test start Slack after the app
        self.workflow_tokens: set[str] = set()  # a workflow run's own bot token (xwfp-...): function_executed
        self.app_token = app_token
        self.scopes: list[str] = list(scopes)
        self.user_tz = user_tz
        self.admins: set[str] = set(admins)
        self.owners: set[str] = set()
        self.users: dict[str, dict[str, Any]] = {}
        self.channels: dict[str, dict[str, Any]] = {}
        self.token_revoked = False
        self.team_id = TEAM_ID
        self.bot_user_id = BOT_USER_ID
        self.bot_id = BOT_ID
        self.app_id = APP_ID
        self.add_channel("C123", "general", is_general=True)

        self._cond = threading.Condition()
        self._calls: list[Call] = []
        self._failures: dict[str, list[_Failure]] = {}
        self._stalls: dict[str, list[float]] = {}
        self._holds: dict[str, threading.Event] = {}  # method -> released when set (hold)
        self.held: dict[str, int] = {}  # method -> calls waiting in a hold right now
        self._response_urls: dict[str, _ResponseURL] = {}
        self._files: dict[str, UploadedFile] = {}
        self._upload_keys: dict[str, str] = {}
        self.home_views: dict[str, dict[str, Any]] = {}
        self.opened_views: list[dict[str, Any]] = []  # views.open, in order (modals as Slack stores them)
        self.memberships: dict[str, list[str]] = {}  # user id -> channel ids (users.conversations)
        self.usergroups: dict[str, dict[str, Any]] = {}  # group id -> {"handle", "name", "users"} (add_usergroup)
        self._ids = itertools.count(1)
        self._ts_lock = threading.Lock()
        self._last_ts = (0, 0)

        self._tickets: set[str] = set()
        self._sessions: list[_SocketSession] = []
        self._session_numbers = itertools.count(1)
        self._connects = 0
        self._socket_messages: list[Any] = []
        self._acks: dict[str, dict[str, Any]] = {}
        self._sent_envelopes: dict[str, dict[str, Any]] = {}
        self._handlers: list[Any] = []

        self._closing = threading.Event()
        self._httpd: LoopbackServer | None = None
        self._wsd = None
        self._threads: list[threading.Thread] = []
        self.port: int | None = None
        self.ws_port: int | None = None

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> "SlackStub":
        if self._httpd is not None:
            return self
        from websockets.sync.server import serve

        handler_cls = type("_BoundHandler", (_Handler,), {"stub": self})
        self._httpd = LoopbackServer(("127.0.0.1", self._want_port), handler_cls)
        self.port = self._httpd.server_address[1]
        t = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, name="slackstub-http", daemon=True
        )
        t.start()
        self._threads.append(t)

        self._wsd = serve(
            self._ws_handler,
            "127.0.0.1",
            0,
            process_request=self._ws_process_request,
            compression=None,
            ping_interval=None,  # the Slack SDK clients ping us; we only answer
            close_timeout=0.25,  # websocket-client never answers our close frame
            logger=logging.getLogger("tests.slackstub.ws"),
        )
        self.ws_port = self._wsd.socket.getsockname()[1]
        t = threading.Thread(target=self._wsd.serve_forever, name="slackstub-ws", daemon=True)
        t.start()
        self._threads.append(t)
        return self

    def stop(self) -> None:
        for h in list(self._handlers):
            try:
                self.close_socket_mode(h)
            except Exception:  # pragma: no cover - best effort
                log.exception("closing a socket mode handler failed")
        self._closing.set()
        if self._wsd is not None:
            self._wsd.shutdown()
            self._wsd = None
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        for t in self._threads:
            t.join(timeout=5)
        self._threads.clear()

    def __enter__(self) -> "SlackStub":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # ------------------------------------------------------------------ URLs

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def api_url(self) -> str:
        """Web API base URL, ending with ``/api/`` (SLACK_API_URL / WebClient(base_url=...))."""
        return f"{self.base_url}/api/"

    def response_url(
        self, name: str = "r1", *, max_uses: int = RESPONSE_URL_MAX_USES, ttl: float = RESPONSE_URL_TTL
    ) -> str:
        """Register (or re-fetch) a response_url named ``name`` and return its URL."""
        with self._cond:
            if name not in self._response_urls:
                self._response_urls[name] = _ResponseURL(name, max_uses, ttl)
        return f"{self.base_url}/response/{name}"

    def expire(self, name: str) -> None:
        """Make a response_url answer 404 ``expired_url`` from now on."""
        self.response_url(name)
        with self._cond:
            self._response_urls[name].expired = True

    def responses(self, name: str = "r1") -> list[dict[str, Any]]:
        """JSON bodies accepted by a response_url (``name`` or the full URL)."""
        name = name.rstrip("/").rsplit("/", 1)[-1]
        with self._cond:
            r = self._response_urls.get(name)
            return list(r.bodies) if r else []

    def wait_for_response(self, name: str = "r1", count: int = 1, timeout: float = 5.0) -> list[dict[str, Any]]:
        """Block until ``count`` bodies were accepted by a response_url; return them."""
        name = name.rstrip("/").rsplit("/", 1)[-1]

        def ready():
            r = self._response_urls.get(name)
            return r is not None and len(r.bodies) >= count

        self._wait(ready, timeout, lambda: f"{count} response(s) to response_url {name!r}")
        return self.responses(name)

    def slash_fields(self, text: str = "", *, response_name: str | None = None, **overrides: Any) -> dict[str, str]:
        """``slash_fields`` with a fresh response_url on this stub (name ``cmd-N`` unless given)."""
        name = response_name or f"cmd-{next(self._ids)}"
        overrides.setdefault("response_url", self.response_url(name))
        return slash_fields(text, **overrides)

    def add_channel(
        self,
        channel_id: str,
        name: str | None = None,
        *,
        is_private: bool | None = None,
        is_member: bool = True,
        is_archived: bool = False,
        is_general: bool = False,
        shared_outside: bool = False,
    ) -> dict[str, Any]:
        """Declare a conversation's state (unknown C/G/D ids count as joined and live); `shared_outside`: a Slack
        Connect channel, shared with another organization."""
        info = {
            "id": channel_id,
            "name": name or channel_id.lower(),
            "is_private": channel_id.startswith("G") if is_private is None else is_private,
            "is_member": is_member,
            "is_archived": is_archived,
            "is_general": is_general,
            "shared_outside": shared_outside,
        }
        self.channels[channel_id] = info
        return info

    def add_user(self, user_id: str, *, email: str | None = None, guest: str | None = None,
                 team_id: str | None = None, admin: bool = False, name: str | None = None,
                 channels: list[str] | tuple[str, ...] = ()) -> None:
        """Declare a person as users.info describes them: their profile's e-mail (shown only with
        users:read.email), a guest (`single`: is_ultra_restricted, `multi`: is_restricted), a member of
        another organization (Slack Connect: another `team_id`), an admin; and the channels they are in."""
        fields: dict[str, Any] = {"is_restricted": guest in ("multi", "single"),
                                  "is_ultra_restricted": guest == "single"}
        if team_id is not None:
            fields["team_id"] = team_id
        if name is not None:
            fields["name"] = name
            fields["real_name"] = name.title()
        if email is not None:
            fields["_email"] = email
        self.users[user_id] = {**self.users.get(user_id, {}), **fields}
        if admin:
            self.admins.add(user_id)
        if channels:
            self.memberships[user_id] = list(channels)

    def add_usergroup(self, group_id: str, handle: str, users: list[str] | tuple[str, ...] = ()) -> None:
        """A user group (`@handle`) and its members, as usergroups.list and usergroups.users.list answer."""
        self.usergroups[group_id] = {"handle": handle, "name": handle.title(), "users": list(users)}

    # ------------------------------------------------------------------ recording

    @property
    def calls(self) -> list[Call]:
        """Snapshot of every request received so far, in arrival order."""
        with self._cond:
            return list(self._calls)

    def calls_to(self, method: str) -> list[Call]:
        with self._cond:
            return [c for c in self._calls if c.method == method]

    def clear_calls(self) -> None:
        with self._cond:
            self._calls.clear()

    def wait_for(self, method: str, count: int = 1, timeout: float = 5.0) -> list[Call]:
        """Block until ``count`` calls to ``method`` arrived and were answered; return them."""

        def ready():
            done = [c for c in self._calls if c.method == method and c.status is not None]
            return len(done) >= count

        self._wait(ready, timeout, lambda: f"{count} call(s) to {method}")
        return self.calls_to(method)

    def _wait(self, predicate, timeout: float, what) -> None:
        deadline = time.monotonic() + timeout
        with self._cond:
            while not predicate():
                left = deadline - time.monotonic()
                if left <= 0:
                    seen = [c.method for c in self._calls]
                    raise TimeoutError(f"timed out after {timeout}s waiting for {what()}; calls so far: {seen}")
                self._cond.wait(left)

    @property
    def files(self) -> dict[str, UploadedFile]:
        with self._cond:
            return dict(self._files)

    def uploaded_files(self) -> list[UploadedFile]:
        """Files whose upload finished with files.completeUploadExternal."""
        with self._cond:
            return [f for f in self._files.values() if f.completed]

    # ------------------------------------------------------------------ scripting

    def fail_next(
        self,
        method: str,
        *,
        status: int = 200,
        error: str | None = None,
        retry_after: int | None = None,
        times: int = 1,
        needed: str | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> None:
        """The next ``times`` calls to ``method`` fail.

        status 200 needs ``error`` and answers ``{"ok": false, "error": error}`` (plus
        ``needed``/``provided`` for missing_scope, plus ``extra``); other statuses
        answer that status (429 adds ``Retry-After``: ``retry_after`` or 1).
        """
        if status == 200 and not error:
            raise ValueError("fail_next with status 200 needs an error code")
        if status == 429 and retry_after is None:
            retry_after = 1
        body_extra = dict(extra or {})
        if needed is not None:
            body_extra["needed"] = needed
        with self._cond:
            self._failures.setdefault(method, []).append(_Failure(status, error, retry_after, body_extra, times))

    def stall_next(self, method: str, seconds: float, *, times: int = 1) -> None:
        """The next ``times`` calls to ``method`` wait ``seconds`` before being answered."""
        with self._cond:
            self._stalls.setdefault(method, []).extend([seconds] * times)

    def hold(self, method: str) -> threading.Event:
        """Calls to ``method`` wait until the returned event is set (or the stub stops): Slack slow for as long as a
        test needs, with no timer; ``wait_held`` tells when a number of calls are waiting."""
        with self._cond:
            return self._holds.setdefault(method, threading.Event())

    def wait_held(self, method: str, count: int, timeout: float = 10.0) -> bool:
        with self._cond:
            return self._cond.wait_for(lambda: self.held.get(method, 0) >= count, timeout=timeout)

    def _wait_in_hold(self, method: str) -> None:
        with self._cond:
            hold = self._holds.get(method)
            if hold is None or hold.is_set():
                return
            self.held[method] = self.held.get(method, 0) + 1
            self._cond.notify_all()
        while not hold.wait(0.05) and not self._closing.is_set():
            pass
        with self._cond:
            self.held[method] -= 1

    def _pop_failure(self, method: str) -> _Failure | None:
        with self._cond:
            queue = self._failures.get(method)
            if not queue:
                return None
            f = queue[0]
            f.remaining -= 1
            if f.remaining <= 0:
                queue.pop(0)
            return f

    def _pop_stall(self, method: str) -> float:
        with self._cond:
            queue = self._stalls.get(method)
            return queue.pop(0) if queue else 0.0

    # ------------------------------------------------------------------ HTTP

    def _handle_http(self, h: BaseHTTPRequestHandler) -> None:
        parts = urlsplit(h.path)
        length = int(h.headers.get("Content-Length") or 0)
        raw = h.rfile.read(length) if length else b""
        headers = {k.lower(): v for k, v in h.headers.items()}
        query = _flatten(parse_qs(parts.query, keep_blank_values=True))
        body = _parse_body(raw, headers.get("content-type", ""))
        path = parts.path

        if path.startswith("/api/"):
            method = path[len("/api/") :].strip("/")
        elif path.startswith("/upload/v1/"):
            method = "upload:" + self._upload_keys.get(path.rsplit("/", 1)[-1], "?")
        elif path.startswith("/response/"):
            method = "response:" + path[len("/response/") :].strip("/")
        else:
            method = "http:" + path

        token = None
        auth = headers.get("authorization", "")
        if auth.lower().startswith("bearer "):
            token = auth[7:].strip()
        elif isinstance(body, dict) and isinstance(body.get("token"), str):
            token = body["token"]
        elif "token" in query:
            token = query["token"]

        call = Call(
            method=method,
            path=path,
            http_method=h.command,
            headers=headers,
            query=query,
            body=body,
            raw=raw,
            token=token,
            time=time.time(),
        )
        with self._cond:
            self._calls.append(call)
            self._cond.notify_all()

        try:
            if path.startswith("/api/"):
                status, payload, extra_headers = self._api(method, call)
            elif path.startswith("/upload/v1/"):
                status, payload, extra_headers = self._upload(path.rsplit("/", 1)[-1], call)
            elif path.startswith("/response/"):
                status, payload, extra_headers = self._response_post(method.split(":", 1)[1], call)
            else:
                status, payload, extra_headers = 404, "not found", {}
        except Exception as e:  # a bug in the stub: say so loudly, like a 500
            log.exception("slackstub failed on %s", path)
            status, payload, extra_headers = 500, {"ok": False, "error": f"stub_crashed: {e!r}"}, {}

        if isinstance(payload, (dict, list)):
            data = json.dumps(payload).encode("utf-8")
            ctype = "application/json; charset=utf-8"
        else:
            data = str(payload).encode("utf-8")
            ctype = "text/html; charset=utf-8" if status == 200 else "text/plain; charset=utf-8"

        with self._cond:  # answered: visible to wait_for() before the client can see it
            call.status = status
            call.response = payload
            self._cond.notify_all()
        try:
            h.send_response(status)
            h.send_header("Content-Type", ctype)
            h.send_header("Content-Length", str(len(data)))
            for k, v in extra_headers.items():
                h.send_header(k, v)
            h.end_headers()
            h.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeouts)
            pass

    def _scope_headers(self, method: str) -> dict[str, str]:
        return {
            "x-oauth-scopes": ",".join(self.scopes),
            "x-accepted-oauth-scopes": METHOD_SCOPES.get(method, ""),
        }

    def _api(self, method: str, call: Call) -> tuple[int, Any, dict[str, str]]:
        stall = self._pop_stall(method)
        if stall:
            self._closing.wait(stall)
        self._wait_in_hold(method)

        failure = self._pop_failure(method)
        if failure is not None:
            headers = self._scope_headers(method)
            if failure.retry_after is not None:
                headers["Retry-After"] = str(failure.retry_after)
            if failure.status == 200:
                body = {"ok": False, "error": failure.error}
                if failure.error == "missing_scope":
                    body.setdefault("needed", METHOD_SCOPES.get(method, "chat:write"))
                    body["provided"] = ",".join(self.scopes)
                body.update(failure.extra)
                return 200, body, headers
            default = {429: "ratelimited"}.get(failure.status, "internal_error")
            body = {"ok": False, "error": failure.error or default}
            body.update(failure.extra)
            return failure.status, body, headers

        handler = getattr(self, "_m_" + method.replace(".", "_"), None)
        if handler is None:
            return 200, {"ok": False, "error": "unknown_method", "req_method": method}, {}

        if method in NO_AUTH_METHODS:
            return 200, handler(call.args), {}

        # authentication
        token = call.token
        if not token:
            return 200, {"ok": False, "error": "not_authed"}, {}
        if method == "apps.connections.open":
            if token != self.app_token:
                err = "not_allowed_token_type" if token.startswith("xox") else "invalid_auth"
                return 200, {"ok": False, "error": err}, {}
        else:
            if token == self.app_token or token.startswith("xapp-"):
                return 200, {"ok": False, "error": "not_allowed_token_type"}, {}
            if token != self.good_token and token not in self.workflow_tokens:
                return 200, {"ok": False, "error": "invalid_auth"}, {}
            if self.token_revoked:
                return 200, {"ok": False, "error": "token_revoked"}, {}

        headers = self._scope_headers(method) if method != "apps.connections.open" else {}
        needed = METHOD_SCOPES.get(method)
        if needed and needed not in self.scopes:
            return 200, self._missing_scope(needed), headers
        result = handler(call.args)
        return 200, result, headers

    def _missing_scope(self, needed: str) -> dict[str, Any]:
        return {"ok": False, "error": "missing_scope", "needed": needed, "provided": ",".join(self.scopes)}

    # ---- ids

    def _next_ts(self) -> str:
        with self._ts_lock:
            sec = int(time.time())
            last_sec, last_n = self._last_ts
            n = last_n + 1 if sec <= last_sec else 1
            sec = max(sec, last_sec)
            self._last_ts = (sec, n)
            return f"{sec}.{n:06d}"

    def _new_id(self, prefix: str) -> str:
        return f"{prefix}0{next(self._ids):08X}"

    # ---- conversations

    def _channel(self, channel: Any) -> tuple[dict[str, Any] | None, str | None]:
        """Resolve a channel argument; returns (info, error)."""
        if not channel or not isinstance(channel, str):
            return None, "channel_not_found"
        if channel.startswith("#"):
            for info in self.channels.values():
                if info["name"] == channel[1:]:
                    return info, None
            return None, "channel_not_found"
        if channel[0] in "UW":  # posting to a user id opens the DM
            return {"id": "D" + channel[1:], "name": channel, "is_private": True, "is_member": True,
                    "is_archived": False, "is_general": False, "is_im": True, "user": channel}, None
        if channel in self.channels:
            return self.channels[channel], None
        if channel[0] in "CGD" and channel[1:].isalnum() and channel.upper() == channel:
            return {"id": channel, "name": channel.lower(), "is_private": channel[0] != "C",
                    "is_member": True, "is_archived": False, "is_general": False,
                    "is_im": channel[0] == "D"}, None
        return None, "channel_not_found"

    def _postable(self, channel: Any) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        info, err = self._channel(channel)
        if err:
            return None, {"ok": False, "error": err}
        if info["is_archived"]:
            return None, {"ok": False, "error": "is_archived"}
        if not info["is_member"]:
            if info["is_private"]:
                return None, {"ok": False, "error": "channel_not_found"}
            if "chat:write.public" not in self.scopes:
                return None, {"ok": False, "error": "not_in_channel"}
        return info, None

    # ---- Web API methods (args: decoded parameters)

    def _m_api_test(self, args):
        return {"ok": True, "args": {k: v for k, v in args.items() if k != "token"}}

    def _m_auth_test(self, args):
        return {
            "ok": True,
            "url": f"https://{TEAM_DOMAIN}.slack.com/",
            "team": TEAM_NAME,
            "user": BOT_USER_NAME,
            "team_id": self.team_id,
            "user_id": self.bot_user_id,
            "bot_id": self.bot_id,
            "is_enterprise_install": False,
        }

    def _message(self, args, ts: str) -> dict[str, Any]:
        msg: dict[str, Any] = {
            "user": self.bot_user_id,
            "type": "message",
            "ts": ts,
            "bot_id": self.bot_id,
            "app_id": self.app_id,
            "text": args.get("text") or "",
            "team": self.team_id,
            "bot_profile": {"id": self.bot_id, "app_id": self.app_id, "name": BOT_USER_NAME,
                            "deleted": False, "team_id": self.team_id},
        }
        for k in ("blocks", "attachments", "thread_ts", "metadata"):
            if args.get(k):
                msg[k] = args[k]
        return msg

    def _check_content(self, args, max_blocks: int = MAX_MESSAGE_BLOCKS) -> dict[str, Any] | None:
        if not (args.get("text") or args.get("blocks") or args.get("attachments")):
            return {"ok": False, "error": "no_text"}
        if args.get("blocks"):
            errors = _block_errors(args["blocks"], max_blocks)
            if errors:
                return {"ok": False, "error": "invalid_blocks", "errors": errors,
                        "response_metadata": {"messages": [f"[ERROR] {e}" for e in errors]}}
        return None

    def _m_chat_postMessage(self, args):
        info, err = self._postable(args.get("channel"))
        if err:
            return err
        err = self._check_content(args)
        if err:
            return err
        ts = self._next_ts()
        return {"ok": True, "channel": info["id"], "ts": ts, "message": self._message(args, ts)}

    def _m_chat_postEphemeral(self, args):
        info, err = self._postable(args.get("channel"))
        if err:
            return err
        if not args.get("user"):
            return {"ok": False, "error": "user_not_found"}
        err = self._check_content(args)
        if err:
            return err
        return {"ok": True, "message_ts": self._next_ts()}

    def _m_chat_update(self, args):
        info, err = self._channel(args.get("channel"))
        if err:
            return {"ok": False, "error": err}
        if not args.get("ts"):
            return {"ok": False, "error": "message_not_found"}
        if info["is_archived"]:
            return {"ok": False, "error": "is_archived"}
        err = self._check_content(args)
        if err:
            return err
        ts = str(args["ts"])
        msg = self._message(args, ts)
        msg.pop("ts")
        msg["edited"] = {"user": self.bot_user_id, "ts": self._next_ts()}
        return {"ok": True, "channel": info["id"], "ts": ts, "text": args.get("text") or "", "message": msg}

    def _m_chat_unfurl(self, args):
        """chat.unfurl: by channel + ts, or by unfurl_id + source; unfurls maps each URL to its blocks."""
        by_message = args.get("channel") and args.get("ts")
        by_id = args.get("unfurl_id") and args.get("source")
        if not (by_message or by_id):
            return {"ok": False, "error": "invalid_arguments"}
        unfurls = args.get("unfurls")
        if not isinstance(unfurls, dict) or not unfurls:
            return {"ok": False, "error": "invalid_unfurls"}
        for url, unfurl in unfurls.items():
            if not isinstance(unfurl, dict) or not (unfurl.get("blocks") or unfurl.get("text")):
                return {"ok": False, "error": "invalid_unfurls"}
            errors = _block_errors(unfurl.get("blocks") or [], MAX_MESSAGE_BLOCKS, f"/unfurls/{url}/blocks")
            if errors:
                return {"ok": False, "error": "invalid_blocks", "errors": errors}
        return {"ok": True}

    def _m_functions_completeSuccess(self, args):
        if not args.get("function_execution_id"):
            return {"ok": False, "error": "invalid_arguments"}
        if not isinstance(args.get("outputs"), dict):
            return {"ok": False, "error": "invalid_arguments"}
        return {"ok": True}

    def _m_functions_completeError(self, args):
        if not args.get("function_execution_id") or not args.get("error"):
            return {"ok": False, "error": "invalid_arguments"}
        return {"ok": True}

    def _m_chat_getPermalink(self, args):
        info, err = self._channel(args.get("channel"))
        if err:
            return {"ok": False, "error": err}
        ts = args.get("message_ts")
        if not ts:
            return {"ok": False, "error": "message_not_found"}
        return {
            "ok": True,
            "channel": info["id"],
            "permalink": f"https://{TEAM_DOMAIN}.slack.com/archives/{info['id']}/p{str(ts).replace('.', '')}",
        }

    def _m_views_publish(self, args):
        user_id = args.get("user_id")
        view = args.get("view")
        if not user_id or not isinstance(view, dict):
            return {"ok": False, "error": "invalid_arguments"}
        if view.get("type") != "home":
            return {"ok": False, "error": "invalid_arguments",
                    "response_metadata": {"messages": ["[ERROR] must be 'home' [json-pointer:/view/type]"]}}
        errors = _block_errors(view.get("blocks") or [], MAX_VIEW_BLOCKS, "/view/blocks")
        if errors:
            return {"ok": False, "error": "invalid_arguments",
                    "response_metadata": {"messages": [f"[ERROR] {e}" for e in errors]}}
        view_id = "V" + uuid.uuid4().hex[:10].upper()
        published = {
            "id": view_id,
            "team_id": self.team_id,
            "type": "home",
            "blocks": view.get("blocks") or [],
            "private_metadata": view.get("private_metadata", ""),
            "callback_id": view.get("callback_id", ""),
            "state": {"values": {}},
            "hash": f"{int(time.time())}.{uuid.uuid4().hex[:8]}",
            "title": {"type": "plain_text", "text": "View Title", "emoji": True},
            "clear_on_close": False,
            "notify_on_close": False,
            "close": None,
            "submit": None,
            "previous_view_id": None,
            "root_view_id": view_id,
            "app_id": self.app_id,
            "external_id": view.get("external_id", ""),
            "app_installed_team_id": self.team_id,
            "bot_id": self.bot_id,
        }
        with self._cond:
            self.home_views[user_id] = published
        return {"ok": True, "view": published}

    def _m_views_open(self, args):
        view = args.get("view")
        if not args.get("trigger_id"):
            return {"ok": False, "error": "invalid_arguments"}
        if not isinstance(view, dict) or view.get("type") != "modal":
            return {"ok": False, "error": "invalid_arguments"}
        title = (view.get("title") or {}).get("text", "")
        if not title or len(title) > 24:
            return {"ok": False, "error": "invalid_arguments",
                    "response_metadata": {"messages": ["[ERROR] must be less than 25 characters [json-pointer:/view/title/text]"]}}
        errors = _block_errors(view.get("blocks") or [], MAX_VIEW_BLOCKS, "/view/blocks")
        if errors:
            return {"ok": False, "error": "invalid_arguments",
                    "response_metadata": {"messages": [f"[ERROR] {e}" for e in errors]}}
        view_id = "V" + uuid.uuid4().hex[:10].upper()
        opened = {**view, "id": view_id, "team_id": self.team_id, "state": {"values": {}},
                  "hash": f"{int(time.time())}.{uuid.uuid4().hex[:8]}", "private_metadata": view.get("private_metadata", ""),
                  "root_view_id": view_id, "app_id": self.app_id, "bot_id": self.bot_id}
        with self._cond:
            self.opened_views.append(opened)
        return {"ok": True, "view": opened}

    def _m_users_conversations(self, args):
        user = args.get("user") or ""
        channels = [{"id": c, "name": c.lower(), "is_channel": c.startswith("C"), "is_private": c.startswith("G")}
                    for c in self.memberships.get(user, [])]
        return {"ok": True, "channels": channels, "response_metadata": {"next_cursor": ""}}

    def _m_users_info(self, args):
        uid = args.get("user")
        if not uid or not isinstance(uid, str) or uid[0] not in "UW":
            return {"ok": False, "error": "user_not_found"}
        tz = self.user_tz
        tz_label, tz_offset = _tz_info(tz)
        is_bot = uid == self.bot_user_id
        name = BOT_USER_NAME if is_bot else f"user-{uid.lower()}"
        user = {
            "id": uid,
            "team_id": self.team_id,
            "name": name,
            "deleted": False,
            "color": "9f69e7",
            "real_name": name.title(),
            "tz": tz,
            "tz_label": tz_label,
            "tz_offset": tz_offset,
            "profile": {
                "real_name": name.title(),
                "real_name_normalized": name.title(),
                "display_name": name,
                "display_name_normalized": name,
                "team": self.team_id,
                "image_48": "https://a.slack-edge.com/80588/img/avatars/ava_0001-48.png",
            },
            "is_admin": uid in self.admins or uid in self.owners,
            "is_owner": uid in self.owners,
            "is_primary_owner": False,
            "is_restricted": False,
            "is_ultra_restricted": False,
            "is_bot": is_bot,
            "is_app_user": False,
            "updated": 1700000000,
            "is_email_confirmed": not is_bot,
            "who_can_share_contact_card": "EVERYONE",
        }
        overrides = dict(self.users.get(uid, {}))
        email = overrides.pop("_email", None)
        user.update(overrides)
        if email is not None and "users:read.email" in self.scopes:  # Slack shows it only with that scope
            user["profile"] = {**user["profile"], "email": email}
        return {"ok": True, "user": user}

    def _m_conversations_list(self, args):
        channels = [{"id": c["id"], "name": c["name"], "is_channel": not c["is_private"], "is_private": c["is_private"],
                     "is_archived": c["is_archived"], "is_member": c["is_member"],
                     "is_ext_shared": bool(c.get("shared_outside"))}
                    for c in self.channels.values() if not c.get("is_im") and (not c["is_private"] or c["is_member"])]
        return {"ok": True, "channels": channels, "response_metadata": {"next_cursor": ""}}

    def _m_users_list(self, args):
        known = sorted(set(self.users) | set(self.memberships) | self.admins
                       | {u for g in self.usergroups.values() for u in g["users"]})
        members = [self._m_users_info({"user": uid})["user"] for uid in known if uid[:1] in "UW"]
        return {"ok": True, "members": members, "cache_ts": 1700000000, "response_metadata": {"next_cursor": ""}}

    def _m_usergroups_list(self, args):
        include = args.get("include_users") in (True, "true", "1", 1)
        groups = []
        for gid, group in self.usergroups.items():
            entry = {"id": gid, "team_id": self.team_id, "is_usergroup": True, "name": group["name"],
                     "handle": group["handle"], "description": "", "date_delete": 0, "is_external": False,
                     "user_count": len(group["users"])}
            if include:
                entry["users"] = list(group["users"])
            groups.append(entry)
        return {"ok": True, "usergroups": groups}

    def _m_usergroups_users_list(self, args):
        group = self.usergroups.get(str(args.get("usergroup") or ""))
        if group is None:
            return {"ok": False, "error": "no_such_subteam"}
        return {"ok": True, "users": list(group["users"])}

    def _m_conversations_info(self, args):
        ch = args.get("channel")
        info, err = self._channel(ch)
        if err or ch.startswith("#"):
            return {"ok": False, "error": "channel_not_found"}
        needed = CHANNEL_READ_SCOPES.get(info["id"][0])
        if needed and needed not in self.scopes:
            return self._missing_scope(needed)
        if info["is_private"] and not info["is_member"]:
            return {"ok": False, "error": "channel_not_found"}
        if info.get("is_im"):
            return {"ok": True, "channel": {"id": info["id"], "created": 1700000000, "is_im": True,
                                            "is_org_shared": False, "user": info.get("user", "U123"),
                                            "is_user_deleted": False, "priority": 0}}
        channel = {
            "id": info["id"],
            "name": info["name"],
            "is_channel": not info["is_private"],
            "is_group": info["is_private"],
            "is_im": False,
            "is_mpim": False,
            "is_private": info["is_private"],
            "created": 1700000000,
            "is_archived": info["is_archived"],
            "is_general": info["is_general"],
            "unlinked": 0,
            "name_normalized": info["name"],
            "is_shared": bool(info.get("shared_outside")),
            "is_org_shared": False,
            "is_pending_ext_shared": False,
            "pending_shared": [],
            "context_team_id": self.team_id,
            "updated": 1700000000000,
            "parent_conversation": None,
            "creator": "U123",
            "is_ext_shared": bool(info.get("shared_outside")),
            "shared_team_ids": [self.team_id] + (["T0OTHERORG"] if info.get("shared_outside") else []),
            "pending_connected_team_ids": [],
            "is_member": info["is_member"],
            "topic": {"value": "", "creator": "", "last_set": 0},
            "purpose": {"value": "", "creator": "", "last_set": 0},
            "previous_names": [],
        }
        if args.get("include_num_members") in ("1", 1, True, "true"):
            channel["num_members"] = 3
        return {"ok": True, "channel": channel}

    def _m_files_getUploadURLExternal(self, args):
        filename = args.get("filename")
        try:
            length = int(args.get("length"))
        except (TypeError, ValueError):
            length = -1
        if not filename or length < 0:
            return {"ok": False, "error": "invalid_arguments"}
        file_id = self._new_id("F")
        key = uuid.uuid4().hex
        url = f"{self.base_url}/upload/v1/{key}"
        with self._cond:
            self._upload_keys[key] = file_id
            self._files[file_id] = UploadedFile(
                id=file_id, filename=filename, length=length, upload_url=url,
                alt_txt=args.get("alt_txt"), snippet_type=args.get("snippet_type"),
            )
        return {"ok": True, "upload_url": url, "file_id": file_id}

    def _upload(self, key: str, call: Call) -> tuple[int, Any, dict[str, str]]:
        with self._cond:
            file_id = self._upload_keys.get(key)
            f = self._files.get(file_id) if file_id else None
            if f is None or f.completed:
                return 404, "not_found", {}
            f.data = call.raw
            if isinstance(call.body, dict):  # a multipart form upload: keep the file part
                parts = [v for v in call.body.values() if isinstance(v, bytes)]
                if parts:
                    f.data = parts[0]
        if f.data is not call.raw:
            return 200, f"OK - {len(f.data)}", {}
        return 200, f"OK - {len(call.raw)}", {}

    def _m_files_completeUploadExternal(self, args):
        files = args.get("files")
        if not isinstance(files, list) or not files:
            return {"ok": False, "error": "invalid_arguments"}
        channel_id = args.get("channel_id") or None
        channels = [c for c in (args.get("channels") or "").split(",") if c]
        targets = ([channel_id] if channel_id else []) + channels
        for ch in targets:
            info, err = self._postable(ch)
            if err:
                return err
        out = []
        with self._cond:
            for item in files:
                f = self._files.get(item.get("id")) if isinstance(item, dict) else None
                if f is None or f.data is None:
                    return {"ok": False, "error": "file_not_found"}
            for item in files:
                f = self._files[item["id"]]
                f.title = item.get("title") or f.filename
                f.channel_id = channel_id
                f.initial_comment = args.get("initial_comment")
                f.thread_ts = args.get("thread_ts")
                f.completed = True
                out.append(self._file_object(f, targets))
        return {"ok": True, "files": out}

    def _file_object(self, f: UploadedFile, channels: list[str]) -> dict[str, Any]:
        ext = f.filename.rsplit(".", 1)[-1].lower() if "." in f.filename else "binary"
        mimetype = {"png": "image/png", "csv": "text/csv", "json": "application/json",
                    "txt": "text/plain", "svg": "image/svg+xml", "pdf": "application/pdf"}.get(ext, "application/octet-stream")
        now = int(time.time())
        base = f"https://files.slack.com/files-pri/{self.team_id}-{f.id}"
        return {
            "id": f.id,
            "created": now,
            "timestamp": now,
            "name": f.filename,
            "title": f.title,
            "mimetype": mimetype,
            "filetype": ext,
            "pretty_type": ext.upper(),
            "user": self.bot_user_id,
            "user_team": self.team_id,
            "editable": False,
            "size": len(f.data or b""),
            "mode": "hosted",
            "is_external": False,
            "external_type": "",
            "is_public": bool(channels) and all(c.startswith("C") for c in channels),
            "public_url_shared": False,
            "display_as_bot": False,
            "username": "",
            "url_private": f"{base}/{f.filename}",
            "url_private_download": f"{base}/download/{f.filename}",
            "permalink": f"https://{TEAM_DOMAIN}.slack.com/files/{self.bot_user_id}/{f.id}/{f.filename}",
            "permalink_public": f"https://slack-files.com/{self.team_id}-{f.id}-0000000000",
            "comments_count": 0,
            "is_starred": False,
            "shares": {},
            "channels": [c for c in channels if c.startswith("C")],
            "groups": [c for c in channels if c.startswith("G")],
            "ims": [c for c in channels if c.startswith("D")],
            "has_more_shares": False,
            "has_rich_preview": False,
            "file_access": "visible",
        }

    def _m_apps_connections_open(self, args):
        if self._closing.is_set() or self._wsd is None:
            return {"ok": False, "error": "service_unavailable"}
        ticket = str(uuid.uuid4())
        with self._cond:
            self._tickets.add(ticket)
        return {"ok": True, "url": f"ws://127.0.0.1:{self.ws_port}/link/?ticket={ticket}&app_id={self.app_id}"}

    # ---- response_url

    def _response_post(self, name: str, call: Call) -> tuple[int, Any, dict[str, str]]:
        with self._cond:
            r = self._response_urls.get(name)
            if r is None:  # a URL typed by hand: accept it like a fresh one
                r = self._response_urls[name] = _ResponseURL(name, RESPONSE_URL_MAX_USES, RESPONSE_URL_TTL)
            too_old = time.monotonic() - r.created > r.ttl
            if r.expired or too_old or r.uses >= r.max_uses:
                return 404, "expired_url", {}
            body = call.body
            if not isinstance(body, dict):
                return 400, "invalid_payload", {}
            if not body.get("delete_original"):
                err = self._check_content(body)
                if err:
                    return 400, err["error"], {}
            r.uses += 1
            r.bodies.append(body)
        return 200, "ok", {}

    # ------------------------------------------------------------------ Socket Mode

    def _ws_process_request(self, conn, request):
        parts = urlsplit(request.path)
        if parts.path.rstrip("/") != "/link":
            return conn.respond(404, "not found\n")
        ticket = parse_qs(parts.query).get("ticket", [None])[0]
        with self._cond:
            known = ticket in self._tickets
        if not known:
            return conn.respond(401, "invalid ticket\n")
        return None

    def _ws_handler(self, conn) -> None:
        from websockets.exceptions import ConnectionClosed

        session = _SocketSession(conn, next(self._session_numbers))
        hello = {
            "type": "hello",
            "num_connections": len(self._sessions) + 1,
            "debug_info": {
                "host": "applink-stub-1",
                "build_number": 1,
                "approximate_connection_time": 18060,
            },
            "connection_info": {"app_id": self.app_id},
        }
        try:
            conn.send(json.dumps(hello))
            with self._cond:
                retiring = [s for s in self._sessions if s.disconnect_sent]
                self._sessions.append(session)
                self._connects += 1
                self._cond.notify_all()
            # Like Slack, drop a connection told to reconnect once its successor is up.
            for old in retiring:
                threading.Thread(target=old.conn.close, args=(1000, "reconnected"), daemon=True).start()
            for raw in conn:
                try:
                    msg = json.loads(raw)
                except (TypeError, ValueError):
                    msg = raw
                with self._cond:
                    session.messages.append(msg)
                    self._socket_messages.append(msg)
                    if isinstance(msg, dict) and msg.get("envelope_id"):
                        self._acks.setdefault(msg["envelope_id"], msg)
                    self._cond.notify_all()
        except ConnectionClosed:
            pass
        finally:
            with self._cond:
                if session in self._sessions:
                    self._sessions.remove(session)
                self._cond.notify_all()

    @property
    def socket_connections(self) -> int:
        """Number of open Socket Mode connections (that got their hello)."""
        with self._cond:
            return len(self._sessions)

    @property
    def socket_connects(self) -> int:
        """Number of Socket Mode connections ever opened (reconnects count)."""
        with self._cond:
            return self._connects

    def wait_for_socket_connects(self, count: int, timeout: float = 5.0) -> None:
        """Block until ``count`` connections were ever opened (e.g. after a reconnect)."""
        self._wait(lambda: self._connects >= count, timeout,
                   lambda: f"{count} socket mode connection(s) in total")

    @property
    def socket_messages(self) -> list[Any]:
        """Everything clients sent over Socket Mode (parsed JSON when possible)."""
        with self._cond:
            return list(self._socket_messages)

    @property
    def acks(self) -> dict[str, dict[str, Any]]:
        """envelope_id -> the client's full ack message (``{"envelope_id", "payload"?}``)."""
        with self._cond:
            return dict(self._acks)

    def wait_for_socket(self, count: int = 1, timeout: float = 5.0) -> None:
        """Block until ``count`` clients are connected (and were sent hello)."""
        self._wait(lambda: len(self._sessions) >= count, timeout,
                   lambda: f"{count} socket mode connection(s)")

    def wait_for_no_socket(self, timeout: float = 5.0) -> None:
        """Block until no Socket Mode client is connected any more."""
        self._wait(lambda: not self._sessions, timeout, lambda: "all socket mode connections to close")

    def socket_send(
        self,
        type: str,
        payload: Any,
        *,
        accepts_response_payload: bool | None = None,
        envelope_id: str | None = None,
        retry_attempt: int | None = None,
        retry_reason: str | None = None,
        timeout: float = 5.0,
    ) -> str:
        """Send an envelope to the newest connected client; returns its envelope_id."""
        self.wait_for_socket(1, timeout)
        eid = envelope_id or str(uuid.uuid4())
        if accepts_response_payload is None:
            accepts_response_payload = type == "slash_commands" or (
                type == "interactive" and isinstance(payload, dict)
                and payload.get("type") in ("view_submission", "block_suggestion")
            )
        envelope: dict[str, Any] = {
            "envelope_id": eid,
            "payload": payload,
            "type": type,
            "accepts_response_payload": accepts_response_payload,
        }
        if type == "events_api":
            envelope["retry_attempt"] = 0 if retry_attempt is None else retry_attempt
            envelope["retry_reason"] = retry_reason or ""
        with self._cond:
            session = self._sessions[-1]
            self._sent_envelopes[eid] = envelope
        session.conn.send(json.dumps(envelope))
        return eid

    def socket_send_slash_command(self, fields: Mapping[str, Any], **kw: Any) -> str:
        """Send a ``slash_commands`` envelope (payload = the command's fields)."""
        return self.socket_send("slash_commands", dict(fields), **kw)

    def socket_send_interactive(self, payload: Mapping[str, Any], **kw: Any) -> str:
        """Send an ``interactive`` envelope (e.g. ``block_actions_payload(...)``)."""
        return self.socket_send("interactive", dict(payload), **kw)

    def socket_send_event(self, event: Mapping[str, Any], **kw: Any) -> str:
        """Send an ``events_api`` envelope wrapping ``event`` in an event_callback."""
        return self.socket_send("events_api", event_callback(event), **kw)

    def socket_send_disconnect(self, reason: str = "refresh_requested", timeout: float = 5.0) -> None:
        """Send Slack's ``{"type": "disconnect"}``; SDK clients then reconnect via apps.connections.open."""
        self.wait_for_socket(1, timeout)
        with self._cond:
            session = self._sessions[-1]
            session.disconnect_sent = True
        session.conn.send(json.dumps({"type": "disconnect", "reason": reason,
                                      "debug_info": {"host": "applink-stub-1"}}))

    def socket_close_all(self, code: int = 1000, reason: str = "") -> None:
        """Close every Socket Mode connection from the server side (close frame)."""
        self._close_sessions(None, code, reason)

    def _close_sessions(self, client_port: int | None, code: int = 1000, reason: str = "") -> None:
        with self._cond:
            sessions = [s for s in self._sessions if client_port is None or s.client_port == client_port]
        # conn.close() sends the close frame at once, then waits (close_timeout) for the
        # client's reply, which the SDK clients don't always send: don't wait for that.
        for session in sessions:
            threading.Thread(target=session.conn.close, args=(code, reason), daemon=True).start()

    def wait_for_ack(self, envelope_id: str, timeout: float = 5.0) -> dict[str, Any] | None:
        """Block until the client acked ``envelope_id``; return the ack's payload (None if empty)."""
        self._wait(lambda: envelope_id in self._acks, timeout, lambda: f"the ack of envelope {envelope_id}")
        with self._cond:
            return self._acks[envelope_id].get("payload")

    def connect_socket_mode(self, app: Any, **kwargs: Any):
        """``SocketModeHandler(app, app_token=stub.app_token, **kwargs).connect()``, closed by ``stop()``."""
        from slack_bolt.adapter.socket_mode import SocketModeHandler

        kwargs.setdefault("app_token", self.app_token)
        handler = SocketModeHandler(app, **kwargs)
        self._handlers.append(handler)
        handler.connect()
        self.wait_for_socket(1)
        return handler

    def close_socket_mode(self, handler_or_client: Any) -> None:
        """Shut an SDK socket mode client (or Bolt handler) down quickly, without reconnecting.

        Works for the builtin and the websocket-client based clients. A plain
        ``handler.close()`` works too but is slow against any server (the builtin client
        sits in a 3 s recv(), websocket-client in a 10 s select()), and if the stub stops
        first the client keeps trying to reconnect in the background.
        """
        client = getattr(handler_or_client, "client", handler_or_client)
        if handler_or_client in self._handlers:
            self._handlers.remove(handler_or_client)
        client.auto_reconnect_enabled = False
        if hasattr(client, "default_auto_reconnect_enabled"):
            client.default_auto_reconnect_enabled = False
        client.closed = True
        runner = getattr(client, "current_session_runner", None)
        if runner is not None and getattr(runner, "event", None) is not None:
            runner.event.set()  # don't start another receive loop once ours ends
        queue = getattr(client, "message_queue", None)
        if queue is not None:
            queue.put(None)  # wakes the message processor's blocking get() (None is skipped)
        # A close frame from our side ends the client's blocking read at once; let its
        # reader see it (and drop the socket) before close() races it for the frame.
        port = _client_local_port(client)
        if port is not None:
            self._close_sessions(port)
            deadline = time.monotonic() + 2.0
            while _client_local_port(client) is not None and time.monotonic() < deadline:
                time.sleep(0.005)
        client.close()

# ----------------------------------------------------------------------------------
# small helpers


def _client_local_port(client: Any) -> int | None:
    """The local port of an SDK socket mode client's current connection, if any."""
    session = getattr(client, "current_session", None)
    sock = getattr(session, "sock", None)
    sock = getattr(sock, "sock", sock)  # websocket-client wraps the socket once more
    try:
        return sock.getsockname()[1]
    except Exception:
        return None


def _flatten(qs: dict[str, list[str]]) -> dict[str, Any]:
    return {k: v[0] if len(v) == 1 else v for k, v in qs.items()}


def _parse_body(raw: bytes, content_type: str) -> Any:
    if not raw:
        return None
    ctype = content_type.split(";", 1)[0].strip().lower()
    if ctype.startswith("multipart/form-data"):
        try:
            return _parse_multipart(raw, content_type)
        except Exception:
            return None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if ctype == "application/json" or (not ctype and text.lstrip().startswith("{")):
        try:
            return json.loads(text)
        except ValueError:
            return text
    if ctype == "application/x-www-form-urlencoded" and "=" in text:
        return _flatten(parse_qs(text, keep_blank_values=True))
    return text


def _parse_multipart(raw: bytes, content_type: str) -> dict[str, Any]:
    from email.parser import BytesParser
    from email.policy import HTTP

    msg = BytesParser(policy=HTTP).parsebytes(b"Content-Type: " + content_type.encode() + b"\r\n\r\n" + raw)
    out: dict[str, Any] = {}
    for part in msg.iter_parts():
        name = part.get_param("name", header="content-disposition")
        payload = part.get_payload(decode=True)
        if part.get_filename():
            out[name] = payload
        else:
            out[name] = payload.decode("utf-8", "replace") if payload is not None else ""
    return out


def _tz_info(tz: str) -> tuple[str, int]:
    try:
        from zoneinfo import ZoneInfo

        now = datetime.now(ZoneInfo(tz))
        return now.tzname() or tz, int(now.utcoffset().total_seconds())
    except Exception:
        return tz, 0


def _block_errors(blocks: Any, max_blocks: int, pointer: str = "/blocks") -> list[str]:
    """A few of Slack's Block Kit limits, with Slack's error wording."""
    if not isinstance(blocks, list):
        return [f"must be an array [json-pointer:{pointer}]"]
    errors = []
    if len(blocks) > max_blocks:
        errors.append(f"must be less than {max_blocks + 1} items [json-pointer:{pointer}]")
    for i, b in enumerate(blocks):
        if not isinstance(b, dict) or "type" not in b:
            errors.append(f"missing required field: type [json-pointer:{pointer}/{i}]")
            continue
        text = b.get("text")
        t = text.get("text") if isinstance(text, dict) else None
        if b["type"] == "section":
            if t is not None and len(t) > MAX_SECTION_TEXT:
                errors.append(f"must be less than {MAX_SECTION_TEXT + 1} characters [json-pointer:{pointer}/{i}/text/text]")
            if t is None and not b.get("fields"):
                errors.append(f"must provide either text or fields [json-pointer:{pointer}/{i}]")
            if len(b.get("fields") or []) > 10:
                errors.append(f"must be less than 11 items [json-pointer:{pointer}/{i}/fields]")
        elif b["type"] == "header" and t is not None and len(t) > MAX_HEADER_TEXT:
            errors.append(f"must be less than {MAX_HEADER_TEXT + 1} characters [json-pointer:{pointer}/{i}/text/text]")
        elif b["type"] == "context" and len(b.get("elements") or []) > 10:
            errors.append(f"must be less than 11 items [json-pointer:{pointer}/{i}/elements]")
    return errors


# ----------------------------------------------------------------------------------
# pytest fixture


@pytest.fixture
def slack_stub() -> Iterator[SlackStub]:
    """A running SlackStub, stopped (and its connect_socket_mode handlers closed) afterwards."""
    with SlackStub() as stub:
        yield stub


def text_objects(node) -> list[dict]:
    """Every Block Kit text object ({'type': 'plain_text'|'mrkdwn', 'text': ...}) under node."""
    found = []
    if isinstance(node, dict):
        if node.get("type") in ("plain_text", "mrkdwn") and isinstance(node.get("text"), str):
            found.append(node)
        for value in node.values():
            found += text_objects(value)
    elif isinstance(node, list):
        for item in node:
            found += text_objects(item)
    return found
