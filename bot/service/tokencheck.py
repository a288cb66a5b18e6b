"""Does Slack still accept the bot token? Asked every GAD_TOKEN_CHECK_SECONDS (auth.test) in a thread of serve.

A token revoked (the app uninstalled, an admin's rotation) is otherwise seen only when something
posts: the weekly digest, up to seven days later. Here it is seen within one interval, and said
where an operator looks: `/readyz` (`FAIL slack: ...`), `gad_slack_token_valid` in `/metrics`,
`gad-bot status` (through the heartbeat), and one log line when the answer changes (not one per check).

    check = TokenCheck(settings, client_factory); check.start() ... check.state() ... check.stop()
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass

from ..config import Settings

log = logging.getLogger(__name__)

# Answers that say Slack is unwell, not that the token is: they leave the last verdict standing.
TRANSIENT = frozenset({"ratelimited", "internal_error", "fatal_error", "service_unavailable", "request_timeout"})


@dataclass(frozen=True)
class TokenState:
    ok: bool | None  # None: not known (not checked yet, or Slack did not answer)
    detail: str


class TokenCheck:
    def __init__(self, settings: Settings, client_factory: Callable[[], object], interval: float | None = None):
        self.settings = settings
        self.client_factory = client_factory
        self.interval = interval if interval is not None else settings.token_check_seconds
        self._state = TokenState(None, "the bot token is not checked yet")
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="token-check", daemon=True)
        self.on_change: Callable[[], None] | None = None  # told when Slack's verdict changes (serve: the heartbeat)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def state(self) -> TokenState:
        with self._lock:
            return self._state

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.check()
            except Exception:  # a bug here must not end the checks
                log.exception("checking the bot token failed")
            self._stop.wait(self.interval)

    def check(self) -> TokenState:
        """Ask Slack now (auth.test); log one line when its answer differs from the last one."""
        from slack_sdk.errors import SlackApiError

        try:
            response = self.client_factory().auth_test()
            new = TokenState(True, f"Slack accepts the bot token (team {response.get('team', '?')}, "
                                   f"@{response.get('user', '?')})")
        except SlackApiError as error:
            code = str(error.response.get("error") or "error")
            new = TokenState(None, f"Slack's API answered {code}; the token is checked again") if code in TRANSIENT \
                else TokenState(False, f"Slack refused SLACK_BOT_TOKEN ({code}): reinstall the app and set the new "
                                       "Bot User OAuth Token")
        except Exception as error:  # no answer: the network, a proxy, Slack down
            new = TokenState(None, f"cannot reach Slack's API at {self.settings.slack_api_url} "
                                   f"({type(error).__name__}); the token is checked again")
        with self._lock:
            old, self._state = self._state, new if new.ok is not None or self._state.ok is not True else \
                TokenState(True, self._state.detail)  # a blip of the network does not unsay a good token
            changed = (old.ok, old.detail) != (self._state.ok, self._state.detail)
        if changed and self.on_change is not None:
            self.on_change()
        if changed:
            if new.ok is False:
                log.error("%s; digests, the Home tab and link cards fail until then (`gad-bot doctor` checks it)",
                          new.detail)
            elif new.ok is True and old.ok is False:
                log.info("Slack accepts the bot token again")
            elif new.ok is None:
                log.warning("%s", new.detail)
        return self.state()
