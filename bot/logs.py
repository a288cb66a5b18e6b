"""Logging: one line per event, optionally JSON, with every known secret redacted."""

from __future__ import annotations

import json
import logging
import re
import sys
from collections.abc import Iterable
from datetime import datetime, timezone

_CREDENTIAL_URL = re.compile(r"(?<=://)[^/@\s:]+(:[^/@\s]*)?@")
_SLACK_TOKEN = re.compile(r"\bxox[abposr]-[A-Za-z0-9-]+|\bxapp-[A-Za-z0-9-]+")
REDACTED = "***"


def redact_text(text: str, secrets: Iterable[str] = ()) -> str:
    """Remove known secrets, Slack tokens and URL credentials from text."""
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, REDACTED)
    text = _SLACK_TOKEN.sub(REDACTED, text)
    return _CREDENTIAL_URL.sub(REDACTED + "@", text)


class RedactingFilter(logging.Filter):
    def __init__(self, secrets: Iterable[str]):
        super().__init__()
        self.secrets = tuple(s for s in secrets if s)

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg = redact_text(record.getMessage(), self.secrets)
        record.args = ()
        if record.exc_info and record.exc_info[1] is not None:
            record.exc_text = redact_text(logging.Formatter().formatException(record.exc_info), self.secrets)
            record.exc_info = None
        return True


class WithholdRequestContent(logging.Filter):
    """The Slack libraries log what they receive and send in some lines (Bolt: a bad signature's
    body, an unhandled request, DEBUG responses; slack_sdk: DEBUG request URLs, bodies, headers).
    gad-bot's logs carry no request content and no response_url, so those lines keep only their kind."""

    LIBRARIES = ("slack_sdk", "slack_bolt", "gad-bot.bolt")
    MARKERS = ("body", "headers", "signature:", "url:", "query_params", "Unhandled request", "for the request (")

    def filter(self, record: logging.LogRecord) -> bool:
        if not record.name.startswith(self.LIBRARIES):
            return True
        message = record.getMessage()
        cuts = [message.find(m) + (len(m) if m == "Unhandled request" else 0) for m in self.MARKERS if m in message]
        if cuts:
            if "(" in message:
                cuts.append(message.index("("))
            record.msg = (message[:min(cuts)].rstrip(" (:-,") or "Slack library") + " (request content withheld)"
            record.args = ()
        return True


# Libraries whose INFO lines are routine chatter for an operator (APScheduler logs "Running job" and
# "executed successfully" for every job run: every minute). Their warnings and errors still show;
# GAD_LOG_LEVEL=DEBUG shows everything.
QUIET_LIBRARIES = ("apscheduler",)

# Fields a log call may pass with `extra=` and the JSON line carries as its own keys: what the
# line is about (a repository, a channel), and a completion line's outcome and duration.
FIELDS = ("request_id", "reference", "repo", "channel", "outcome", "seconds")


def _utc_ms(record: logging.LogRecord) -> str:
    """ISO 8601 in UTC with milliseconds: 2026-12-04T16:21:29.708Z."""
    return datetime.fromtimestamp(record.created, timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry = {"time": _utc_ms(record), "level": record.levelname,
                 "logger": record.name, "message": record.getMessage()}
        for key in FIELDS:
            if hasattr(record, key):
                entry[key] = getattr(record, key)
        if record.exc_text:
            entry["traceback"] = record.exc_text
        return json.dumps(entry)


class TextFormatter(logging.Formatter):
    """`time LEVEL logger: message [request=...]`: one line per event, the time in UTC with milliseconds."""

    def __init__(self):
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s")

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        return _utc_ms(record)

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        if getattr(record, "request_id", None):
            line += f" [request={record.request_id}]"
        return line.replace("\n", "\\n") if not record.exc_text else line


def setup_logging(level: str = "INFO", json_lines: bool = False, secrets: Iterable[str] = (), stream=None) -> None:
    """Configure the root logger once: stderr (or `stream`), one line per event, secrets redacted."""
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.addFilter(WithholdRequestContent())
    handler.addFilter(RedactingFilter(secrets))
    handler.setFormatter(JsonFormatter() if json_lines else TextFormatter())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
    for name in QUIET_LIBRARIES:
        logging.getLogger(name).setLevel(logging.DEBUG if level == "DEBUG" else logging.WARNING)
