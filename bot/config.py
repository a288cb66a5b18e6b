"""Settings: the environment read once, in one place, into a frozen object passed around.

`Settings.from_env(os.environ)` is called by the CLI only; tests build `Settings.from_env({...})`
from a plain dict. Every setting is listed in SETTINGS with its default and meaning, and
deploy/gad-bot.env.example is checked against that list by a test.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from zoneinfo import ZoneInfo

from .errors import ConfigError

DEFAULT_SLACK_API_URL = "https://slack.com/api/"


def _user_data_dir() -> str:
    """The platform's data directory for gad-bot; platformdirs is loaded only when GAD_DATA_DIR is not set."""
    import platformdirs

    return platformdirs.user_data_dir("gad-bot", appauthor=False)

# name -> (default, meaning). Order is the order of the docs.
SETTINGS: dict[str, tuple[str, str]] = {
    "GAD_DATA_DIR": ("", "Directory for the mirror store and the SQLite index (default: the user's data dir, e.g. ~/.local/share/gad-bot)."),
    "SLACK_BOT_TOKEN": ("", "Bot token (xoxb-...) from the app's OAuth & Permissions page. Needed by `serve` and `doctor`."),
    "SLACK_SIGNING_SECRET": ("", "Signing secret from Basic Information; verifies HTTP requests. Needed in HTTP mode."),
    "SLACK_APP_TOKEN": ("", "App-level token (xapp-..., scope connections:write). When set, `serve` uses Socket Mode."),
    "SLACK_API_URL": (DEFAULT_SLACK_API_URL, "Slack Web API base URL (GovSlack, proxies, tests)."),
    "GAD_ADMINS": ("", "Comma-separated Slack user ids allowed to track/untrack/sync (default: workspace admins)."),
    "GAD_SUBSCRIBERS": ("anyone", "Who may change a channel's digest subscription: `anyone` in the channel, or `admins` (as GAD_ADMINS). Every change is announced in the channel."),
    "GAD_PERSON_DETAIL": ("everyone", "Who gets person-level answers (`by:person`, `author:`, e-mail addresses in any answer or CSV): `everyone` who may see the repository, or `admins` (as GAD_ADMINS), who also get them about anyone; everyone else gets totals and a sentence, and their own figures with `/gad me`."),
    "GAD_MEMBERSHIP_CACHE_SECONDS": ("300", "How long `serve` trusts what Slack said of a person (admin, guest, e-mail) and of the channels and user groups they are in, before asking again; audiences are checked against it."),
    "GAD_UNFURLS": ("on", "`on`: a pasted link of a tracked repository or organization unfolds into a 2GAD card (links of anything untracked never do); `off`: no cards."),
    "GAD_TZ": ("UTC", "Time zone for digests when the subscriber's own zone is unknown (IANA name)."),
    "GAD_ALLOWED_HOSTS": ("", "Comma-separated hosts `/gad track` may mirror from (default: any public host)."),
    "GAD_DENIED_HOSTS": ("", "Comma-separated hosts `/gad track` must never mirror from."),
    "GAD_BOT_PATTERNS": ("", "Extra comma-separated substrings marking bot authors (besides `[bot]`)."),
    "GAD_AUTOMATED_COAUTHORS": ("", "Extra comma-separated substrings marking automated co-authors that `coauthors:on` leaves out (besides the built-in list in docs/metric.md)."),
    "GAD_ORG_FILE": ("", "Organization rules for `by:org` and `org:` (domain, e-mail, e-mail until a date; see deploy/orgs.example); read again whenever it changes."),
    "GAD_SSH_KEY": ("", "Private key file for ssh:// sources (with KEY.pub beside it); enables ssh:// in `/gad track` for the hosts named exactly in GAD_ALLOWED_HOSTS."),
    "GAD_HTTPS_TOKENS": ("", "Comma-separated HOST=TOKEN pairs used as HTTPS credentials for private repositories."),
    "GAD_FORGES": ("", "Self-hosted forges, comma-separated HOST=KIND or HOST=KIND:API_BASE_URL (KIND github, gitlab or gitea; HOST with :PORT when not 443), so `track https://HOST/ORG` tracks a whole organization. github.com, gitlab.com, codeberg.org and gitea.com are known."),
    "GAD_FORGE_MAX_REPOS": ("5000", "Most repositories one organization may list; a larger one is refused (nothing tracked)."),
    "GAD_FORGE_FETCHES": ("8", "Clones of an organization's repositories that run at once per forge host (indexing runs one per CPU)."),
    "GAD_SYNC_INTERVAL_MINUTES": ("60", "How often `serve` syncs every tracked repository."),
    "GAD_WEBHOOK_SECRETS": ("", "Comma-separated HOST=SECRET pairs: the secret of each forge host's webhooks (POST /hooks/github, /hooks/gitlab, /hooks/gitea). Setting it turns webhooks on."),
    "GAD_WEBHOOK_PORT": ("0", "In Socket Mode, the port `serve` takes forge webhooks on (0: none); in HTTP mode they arrive on the port Slack's requests do."),
    "GAD_WEBHOOK_SYNC_INTERVAL_MINUTES": ("720", "With GAD_WEBHOOK_SECRETS set, how often `serve` still syncs every tracked repository (the safety net for a lost delivery), instead of GAD_SYNC_INTERVAL_MINUTES."),
    "GAD_DIGEST_GRACE_HOURS": ("24", "How late a missed digest may still be posted after downtime."),
    "GAD_FETCH_TIMEOUT_SECONDS": ("1800", "Longest a clone or fetch may take before it is abandoned."),
    "GAD_SYNC_TIMEOUT_SECONDS": ("10800", "Longest one job of `serve`'s sync workers may run (a repository's sync, an organization's listing with its clones, a track typed in Slack); past it its worker is stopped and started again, and the next sync goes on from what was finished."),
    "GAD_MAX_MIRROR_MB": ("4096", "Largest repository `/gad track` will clone, in MiB of transferred data."),
    "GAD_REPORT_WORKERS": ("0", "Worker processes `serve` computes reports in (0: one per CPU)."),
    "GAD_REPORTS_PER_USER": ("20", "Reports one person may have queued or running at once in `serve` (a flood past it is refused with a sentence); each waits behind other people's in turn."),
    "GAD_REPORT_TIMEOUT_SECONDS": ("120", "Longest one report or compare may compute in `serve`; past it the worker is stopped and the person told how to narrow the question."),
    "GAD_QUERY_CACHE_MB": ("64", "Memory each report process may keep for what questions ask (the commits of each `range:`, `branch:` and `path:`, people's e-mails), in MiB; the least recently used go first."),
    "GAD_SHUTDOWN_GRACE_SECONDS": ("20", "On SIGTERM, how long `serve` lets queued and running reports finish; each person whose report is cut off is told to ask again. Keep it below the supervisor's stop timeout (compose stop_grace_period, systemd TimeoutStopSec: 30 s)."),
    "GAD_TOKEN_CHECK_SECONDS": ("300", "How often `serve` asks Slack whether it still accepts SLACK_BOT_TOKEN (auth.test); a refusal (revoked, invalid) shows in /readyz, /metrics, `gad-bot status` and one log line."),
    "GAD_LOG_FORMAT": ("text", "`text` or `json` (one object per line)."),
    "GAD_LOG_LEVEL": ("INFO", "DEBUG, INFO, WARNING or ERROR."),
}


def _csv(value: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in value.split(",") if part.strip())


def _positive_int(env: Mapping[str, str], name: str, zero: bool = False) -> int:
    raw = env.get(name) or SETTINGS[name][0]
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(f"{name}={raw!r} is not a whole number; set it to e.g. {SETTINGS[name][0]}.") from None
    if value < 0 or (value == 0 and not zero):
        raise ConfigError(f"{name}={raw!r} must be {'zero or more' if zero else 'positive'}; "
                          f"set it to e.g. {SETTINGS[name][0]}.")
    return value


_FORGE_KINDS = ("github", "gitlab", "gitea")
_FORGE_HOST = re.compile(r"[a-z0-9](?:[a-z0-9.\-]*[a-z0-9])?(?::[0-9]{1,5})?")


def _port_ok(netloc_port: str) -> bool:
    return not netloc_port or 0 < int(netloc_port) <= 65535


def _forge_entry(entry: str) -> tuple[str, str, str | None]:
    """One GAD_FORGES entry, `HOST=KIND` or `HOST=KIND:API_BASE_URL`, as (host, kind, API base or None).

    A refusal names the entry by its host only: an API URL pasted with a token in it stays out of the log."""
    example = "e.g. git.corp.example=gitlab or ghe.corp.example=github:https://ghe.corp.example/api/v3"
    host, sep, rest = entry.partition("=")
    host = host.strip().lower()
    kind, _, api = rest.strip().partition(":")
    kind = kind.strip().lower()
    if not sep or not _FORGE_HOST.fullmatch(host) or not _port_ok(host.partition(":")[2]):
        raise ConfigError(f"A GAD_FORGES entry does not start with a host name (HOST=KIND, with :PORT from 1 to "
                          f"65535 when not 443); {example}.")
    if kind not in _FORGE_KINDS:
        raise ConfigError(f"The GAD_FORGES entry of {host} names no forge kind; use github, gitlab or gitea, {example}.")
    api = api.strip()
    api_url = re.fullmatch(r"https?://(?:\[[0-9a-fA-F:.]+\]|[^\s/?#@:\[\]]+)(?::([0-9]{1,5}))?(?:/[^\s?#]*)?", api)
    if api and (api_url is None or not _port_ok(api_url.group(1) or "")):
        raise ConfigError(f"The GAD_FORGES entry of {host} has an API base that is not an http(s) URL of a host "
                          f"(and port from 1 to 65535), without user, password, query or fragment; {example}.")
    if host.endswith(":443") and not api.startswith("http://"):
        host = host[:-4]
    return host, kind, api.rstrip("/") or None


def _hook_secret(pair: str) -> tuple[str, str]:
    """One GAD_WEBHOOK_SECRETS pair as (host without port, secret): a delivery names its repository's host, not
    the forge's port, so `git.corp.example:8443=...` is the secret of git.corp.example."""
    host, sep, secret = pair.partition("=")
    host = host.strip().lower()
    if not sep or not secret.strip() or not _FORGE_HOST.fullmatch(host):
        raise ConfigError("GAD_WEBHOOK_SECRETS must be HOST=SECRET pairs separated by commas, HOST a host name "
                          "(not a URL), e.g. github.com=a-long-random-string")
    return host.partition(":")[0], secret.strip()


@dataclass(frozen=True)
class Settings:
    data_dir: Path
    slack_bot_token: str = field(default="", repr=False)
    slack_signing_secret: str = field(default="", repr=False)
    slack_app_token: str = field(default="", repr=False)
    slack_api_url: str = DEFAULT_SLACK_API_URL
    admins: tuple[str, ...] = ()
    subscribers: str = "anyone"  # or "admins"
    person_detail: str = "everyone"  # or "admins": person-level answers only to admins and to a person about themselves
    membership_cache_seconds: int = 300
    unfurls: bool = True  # link cards of tracked repositories and organizations
    tz: str = "UTC"
    allowed_hosts: tuple[str, ...] = ()
    denied_hosts: tuple[str, ...] = ()
    bot_patterns: tuple[str, ...] = ()
    automated_coauthors: tuple[str, ...] = ()
    org_file: Path | None = None
    ssh_key: Path | None = None
    https_tokens: Mapping[str, str] = field(default_factory=dict, repr=False)
    forges: tuple[tuple[str, str, str | None], ...] = ()  # (host[:port], kind, API base URL or None)
    forge_max_repos: int = 5000
    forge_fetches: int = 8
    sync_interval_minutes: int = 60
    webhook_secrets: Mapping[str, str] = field(default_factory=dict, repr=False)  # forge host -> secret
    webhook_port: int = 0
    webhook_sync_interval_minutes: int = 720
    digest_grace_hours: int = 24
    fetch_timeout_seconds: int = 1800
    sync_timeout_seconds: int = 10800
    max_mirror_mb: int = 4096
    report_workers: int = 0  # 0: one per CPU
    reports_per_user: int = 20
    report_timeout_seconds: int = 120
    query_cache_mb: int = 64
    shutdown_grace_seconds: int = 20
    token_check_seconds: int = 300
    log_format: str = "text"
    log_level: str = "INFO"

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> "Settings":
        """Build settings from an environment mapping; raise ConfigError naming the bad variable."""
        data_dir = Path(env.get("GAD_DATA_DIR") or _user_data_dir()).expanduser()
        tz = env.get("GAD_TZ") or "UTC"
        try:
            ZoneInfo(tz)
        except Exception:
            raise ConfigError(f"GAD_TZ={tz!r} is not a time zone; use an IANA name such as Europe/London or UTC.") from None
        tokens: dict[str, str] = {}
        for pair in _csv(env.get("GAD_HTTPS_TOKENS", "")):
            host, sep, token = pair.partition("=")
            if not sep or not host or not token:
                raise ConfigError("GAD_HTTPS_TOKENS must be HOST=TOKEN pairs separated by commas, e.g. github.com=ghp_...")
            tokens[host.strip().lower()] = token.strip()
        hook_secrets: dict[str, str] = {}
        for pair in _csv(env.get("GAD_WEBHOOK_SECRETS", "")):
            host, secret = _hook_secret(pair)
            hook_secrets[host] = secret
        forges = tuple(_forge_entry(entry) for entry in _csv(env.get("GAD_FORGES", "")))
        ssh_key = env.get("GAD_SSH_KEY") or None
        log_format = (env.get("GAD_LOG_FORMAT") or "text").lower()
        if log_format not in ("text", "json"):
            raise ConfigError(f"GAD_LOG_FORMAT={log_format!r} is not a log format; use text or json.")
        log_level = (env.get("GAD_LOG_LEVEL") or "INFO").upper()
        if log_level not in ("DEBUG", "INFO", "WARNING", "ERROR"):
            raise ConfigError(f"GAD_LOG_LEVEL={log_level!r} is not a level; use DEBUG, INFO, WARNING or ERROR.")
        subscribers = (env.get("GAD_SUBSCRIBERS") or "anyone").strip().lower()
        if subscribers not in ("anyone", "admins"):
            raise ConfigError(f"GAD_SUBSCRIBERS={subscribers!r} is not a choice; use anyone or admins.")
        person_detail = (env.get("GAD_PERSON_DETAIL") or "everyone").strip().lower()
        if person_detail not in ("everyone", "admins"):
            raise ConfigError(f"GAD_PERSON_DETAIL={person_detail!r} is not a choice; use everyone or admins.")
        unfurls = (env.get("GAD_UNFURLS") or "on").strip().lower()
        if unfurls not in ("on", "off"):
            raise ConfigError(f"GAD_UNFURLS={unfurls!r} is not a choice; use on or off.")
        api_url = env.get("SLACK_API_URL") or DEFAULT_SLACK_API_URL
        if not api_url.startswith(("https://", "http://")):
            raise ConfigError(f"SLACK_API_URL={api_url!r} is not an http(s) URL; leave it unset to use {DEFAULT_SLACK_API_URL}.")
        return cls(
            data_dir=data_dir,
            slack_bot_token=env.get("SLACK_BOT_TOKEN", ""),
            slack_signing_secret=env.get("SLACK_SIGNING_SECRET", ""),
            slack_app_token=env.get("SLACK_APP_TOKEN", ""),
            slack_api_url=api_url if api_url.endswith("/") else api_url + "/",
            admins=_csv(env.get("GAD_ADMINS", "")),
            subscribers=subscribers,
            person_detail=person_detail,
            membership_cache_seconds=_positive_int(env, "GAD_MEMBERSHIP_CACHE_SECONDS"),
            unfurls=unfurls == "on",
            tz=tz,
            allowed_hosts=tuple(h.lower() for h in _csv(env.get("GAD_ALLOWED_HOSTS", ""))),
            denied_hosts=tuple(h.lower() for h in _csv(env.get("GAD_DENIED_HOSTS", ""))),
            bot_patterns=_csv(env.get("GAD_BOT_PATTERNS", "")),
            automated_coauthors=_csv(env.get("GAD_AUTOMATED_COAUTHORS", "")),
            org_file=Path(env["GAD_ORG_FILE"]).expanduser() if env.get("GAD_ORG_FILE") else None,
            ssh_key=Path(ssh_key).expanduser() if ssh_key else None,
            https_tokens=tokens,
            forges=forges,
            forge_max_repos=_positive_int(env, "GAD_FORGE_MAX_REPOS"),
            forge_fetches=_positive_int(env, "GAD_FORGE_FETCHES"),
            sync_interval_minutes=_positive_int(env, "GAD_SYNC_INTERVAL_MINUTES"),
            webhook_secrets=hook_secrets,
            webhook_port=_positive_int(env, "GAD_WEBHOOK_PORT", zero=True),
            webhook_sync_interval_minutes=_positive_int(env, "GAD_WEBHOOK_SYNC_INTERVAL_MINUTES"),
            digest_grace_hours=_positive_int(env, "GAD_DIGEST_GRACE_HOURS"),
            fetch_timeout_seconds=_positive_int(env, "GAD_FETCH_TIMEOUT_SECONDS"),
            sync_timeout_seconds=_positive_int(env, "GAD_SYNC_TIMEOUT_SECONDS"),
            max_mirror_mb=_positive_int(env, "GAD_MAX_MIRROR_MB"),
            report_workers=_positive_int(env, "GAD_REPORT_WORKERS", zero=True),
            reports_per_user=_positive_int(env, "GAD_REPORTS_PER_USER"),
            report_timeout_seconds=_positive_int(env, "GAD_REPORT_TIMEOUT_SECONDS"),
            query_cache_mb=_positive_int(env, "GAD_QUERY_CACHE_MB"),
            shutdown_grace_seconds=_positive_int(env, "GAD_SHUTDOWN_GRACE_SECONDS", zero=True),
            token_check_seconds=_positive_int(env, "GAD_TOKEN_CHECK_SECONDS"),
            log_format=log_format,
            log_level=log_level,
        )

    @property
    def mirrors_dir(self) -> Path:
        return self.data_dir / "mirrors"

    @property
    def index_path(self) -> Path:
        return self.data_dir / "index.sqlite"

    def secrets(self) -> tuple[str, ...]:
        """Every secret value, so log and message filters can redact them."""
        return tuple(s for s in (self.slack_bot_token, self.slack_signing_secret, self.slack_app_token,
                                 *self.https_tokens.values(), *self.webhook_secrets.values()) if s)

    @property
    def polling_minutes(self) -> int:
        """How often `serve` syncs everything: slower when webhooks say when a repository changed."""
        return self.webhook_sync_interval_minutes if self.webhook_secrets else self.sync_interval_minutes
