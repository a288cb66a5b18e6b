"""`gad-bot doctor`: one checklist of everything an operator can get wrong, each line saying how to fix it."""

from __future__ import annotations

import errno
import os
import tempfile
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from ..config import Settings
from ..errors import GadError
from ..store.index import integrity_pragma, integrity_problems
from ..store.sources import redact

# What the features use; manifest.yml asks for exactly these (tests/test_manifest.py checks both).
# users:read.email and usergroups:read came with audiences (who may see what) and `/gad me`: an app installed
# before needs them added and a reinstall (docs/operations.md).
NEEDED_SCOPES = ("commands", "chat:write", "chat:write.public", "files:write", "users:read", "users:read.email",
                 "usergroups:read", "channels:read", "groups:read", "links:read", "links:write")
UNFURL_SCOPES = ("links:read", "links:write")  # needed only while GAD_UNFURLS is on


@dataclass(frozen=True)
class Check:
    ok: bool
    what: str
    fix: str = ""  # how to fix it, when not ok
    warning: bool = False  # worth knowing, not worth failing for

    def line(self) -> str:
        mark = "ok  " if self.ok else ("warn" if self.warning else "FAIL")
        return f"[{mark}] {self.what}" + (f" -- {self.fix}" if self.fix and not self.ok else "")


def check_data_dir(settings: Settings) -> Check:
    try:
        settings.data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        with tempfile.NamedTemporaryFile(dir=settings.data_dir):
            pass
    except OSError as error:
        from ..faults import is_disk_full

        if is_disk_full(error):
            return Check(False, f"data directory {settings.data_dir}: no space left to write in it",
                         f"free space under {settings.data_dir}")
        if error.errno in (errno.EACCES, errno.EPERM):  # most often gad-bot run as another user than the service's
            return Check(False, f"data directory {settings.data_dir} cannot be read or written by this user "
                                f"({error.strerror})",
                         "run gad-bot as the service user that owns it (`sudo -u gad-bot gad-bot doctor`, "
                         "`docker compose exec gad-bot gad-bot doctor`), or give that user access")
        try:
            what = "is not writable" if settings.data_dir.is_dir() else "cannot be created"
        except OSError:
            what = "cannot be reached"
        return Check(False, f"data directory {settings.data_dir} {what} ({error.strerror})",
                     "give the service user write access, or point GAD_DATA_DIR elsewhere")
    mode = os.stat(settings.data_dir).st_mode & 0o777
    if mode & 0o077:
        return Check(False, f"data directory {settings.data_dir} is readable by others (mode {mode:o})",
                     f"chmod 700 {settings.data_dir}", warning=True)
    return Check(True, f"data directory {settings.data_dir} is writable and private")


def check_git() -> Check:
    from ..store.history import MIN_GIT, git_version

    version = git_version()
    needed = ".".join(map(str, MIN_GIT))
    if version is None:
        return Check(False, "the `git` command is not installed (gad-bot reads histories with it)",
                     "install git (e.g. `apt-get install git`) on this host")
    shown = ".".join(map(str, version))
    if version < MIN_GIT:
        return Check(False, f"git {shown} is older than {needed}", f"install git {needed} or newer")
    return Check(True, f"git {shown} reads histories")


def check_index(engine) -> list[Check]:
    index = engine.index
    checks = [Check(True, f"index schema version {index.schema_version()} (migrations applied)")]
    pragma = integrity_pragma()
    problems = integrity_problems(index, pragma)
    if problems and pragma == "quick_check":
        pragma = "integrity_check"  # one signal is not enough to call an index damaged: ask the thorough check
        problems = integrity_problems(index, pragma)
    if not problems:
        checks.append(Check(True, f"index passes SQLite's {pragma}"))
        return checks
    # It holds the subscriptions, projects and delivery ledger too: keep a copy before anything else.
    path = engine.settings.index_path
    checks.append(Check(False, f"the index failed SQLite's {pragma} ({len(problems)} problem(s), first: "
                               f"{problems[0][:200]})", RESTORE_FIX.format(path=path)))
    return checks


def check_slack(settings: Settings, client_factory) -> list[Check]:
    from slack_sdk.errors import SlackApiError

    checks: list[Check] = []
    if not settings.slack_bot_token:
        return [Check(False, "SLACK_BOT_TOKEN is not set", "copy the Bot User OAuth Token (xoxb-...) from "
                      "OAuth & Permissions", warning=True)]
    client = client_factory()
    try:
        response = client.auth_test()
    except SlackApiError as error:
        reason = error.response.get("error", "error")
        return [Check(False, f"Slack refused SLACK_BOT_TOKEN ({reason})",
                      "reinstall the app and copy the new Bot User OAuth Token into SLACK_BOT_TOKEN")]
    except Exception as error:  # network: the API URL is wrong or unreachable
        return [Check(False, f"cannot reach the Slack API at {settings.slack_api_url} ({type(error).__name__})",
                      "check SLACK_API_URL and the network/proxy")]
    checks.append(Check(True, f"bot token valid for team {response.get('team', '?')} as @{response.get('user', '?')}"))
    granted = {s.strip() for s in (response.headers.get("x-oauth-scopes") or response.headers.get("X-OAuth-Scopes") or "").split(",") if s.strip()}
    needed = [s for s in NEEDED_SCOPES if settings.unfurls or s not in UNFURL_SCOPES]
    missing = [s for s in needed if s not in granted]
    if missing:
        hint = " (links:* are for link cards; or set GAD_UNFURLS=off)" if set(missing) & set(UNFURL_SCOPES) else ""
        checks.append(Check(False, "missing bot scopes: " + ", ".join(missing),
                            "add them under OAuth & Permissions (or re-create the app from manifest.yml) and reinstall"
                            + hint))
    else:
        checks.append(Check(True, "granted scopes cover " + ", ".join(needed)))
    if settings.slack_app_token:
        if not settings.slack_app_token.startswith("xapp-"):
            checks.append(Check(False, "SLACK_APP_TOKEN is not an app-level token (xapp-...)",
                                "create one under Basic Information > App-Level Tokens with connections:write"))
        else:
            try:
                client.apps_connections_open(app_token=settings.slack_app_token)
                checks.append(Check(True, "Socket Mode: the app-level token opens a connection"))
            except SlackApiError as error:
                checks.append(Check(False, f"Socket Mode: Slack refused SLACK_APP_TOKEN ({error.response.get('error')})",
                                    "enable Socket Mode and create an app-level token with connections:write"))
    elif settings.slack_signing_secret:
        checks.append(Check(True, "HTTP mode: signing secret set (Slack must reach https://YOUR-HOST/slack/events)"))
    else:
        checks.append(Check(False, "neither SLACK_APP_TOKEN (Socket Mode) nor SLACK_SIGNING_SECRET (HTTP mode) is set",
                            "set SLACK_APP_TOKEN for Socket Mode (no public URL needed) or SLACK_SIGNING_SECRET"))
    return checks


FAILURES_TO_ACT_ON = 3  # consecutive failed syncs: past a passing fault, an operator must look
MIN_FREE_BYTES = 1 << 30  # below this, a sync may fill the disk mid-fetch
MIN_FREE_SHARE = 0.05


def check_disk(settings: Settings) -> Check:
    import shutil

    try:
        usage = shutil.disk_usage(settings.data_dir)
    except OSError as error:
        return Check(False, f"cannot read the free space under {settings.data_dir} ({error.strerror})")
    free = f"{usage.free / 2**30:,.1f} GiB free of {usage.total / 2**30:,.1f} GiB under {settings.data_dir}"
    from ..faults import disk_full

    if disk_full(settings.data_dir):
        return Check(False, f"the data disk is full ({usage.free / 2**20:,.1f} MiB free of {usage.total / 2**30:,.1f} GiB "
                            f"under {settings.data_dir}): changes and syncs are refused, reports still answer",
                     "free space there (old backups, `*.before-restore` files, mirrors nobody asks about: "
                     "`gad-bot untrack NAME`), or grow the volume; gad-bot carries on by itself once there is room")
    if usage.free < MIN_FREE_BYTES or usage.free < MIN_FREE_SHARE * usage.total:
        return Check(False, free, "free space there (old backups, `*.before-restore` files), or grow the volume; "
                                  "a sync that runs out of space fails and is retried later")
    return Check(True, free)


def check_counter() -> Check:
    from ..engine.cocomo import detect_counter

    try:
        counter = detect_counter()
    except GadError:
        return Check(False, "no line counter installed: `vs:cocomo` answers without COCOMO",
                     "apt-get install sloccount (or cloc)", warning=True)
    return Check(True, f"{counter.name} counts lines for `vs:cocomo`")


def check_serve(settings: Settings) -> Check:
    from ..service.liveness import HEARTBEAT_SECONDS, heartbeat_age, serve_pid

    pid = serve_pid(settings)
    if pid is None:
        return Check(False, "`gad-bot serve` is not running on this data directory",
                     "start it (systemctl start gad-bot, docker compose up -d)", warning=True)
    age = heartbeat_age(settings)
    if age is None or age > 4 * HEARTBEAT_SECONDS:
        return Check(False, f"`gad-bot serve` (process {pid}) holds the data directory but its heartbeat is "
                            f"{'missing' if age is None else f'{int(age)} s old'}: it is hung",
                     "restart it (systemctl restart gad-bot, docker compose restart gad-bot)")
    return Check(True, f"`gad-bot serve` runs (process {pid}), heartbeat {int(age)} s ago")


def _gone(source: str) -> bool:
    """A local source that no longer exists: no sync will ever succeed again."""
    from pathlib import Path

    from ..store.sources import is_local_path

    return is_local_path(source) and not Path(source).expanduser().exists()


def check_mirrors(engine, now: datetime) -> list[Check]:
    from ..store.mirrors.failures import is_gone_upstream
    from ..store.mirrors.mirror import Mirror

    repos = engine.repos()
    if not repos:
        return [Check(True, "no repositories tracked yet (`gad-bot track URL`)", warning=True)]
    stale_after = timedelta(minutes=3 * engine.settings.polling_minutes)
    checks = []
    for repo in repos:
        try:
            mirror = Mirror(repo.mirror_path)
            mirror.check_loose_objects()
            mirror.ref_tips()
        except GadError as error:
            checks.append(Check(False, f"{repo.name}: mirror unreadable ({error})",
                                f"gad-bot sync --reclone {repo.name}"))
            continue
        missing = engine.check_connectivity(repo)  # refs can be fine while an object they reach is gone
        if missing:
            checks.append(Check(False, f"{repo.name}: mirror is missing objects ({'; '.join(missing)})",
                                f"gad-bot sync --reclone {repo.name}" if not repo.in_place else
                                f"repair it with git (git fsck; clone it again), then gad-bot sync {repo.name}"))
            continue
        if missing is None:
            checks.append(Check(False, f"{repo.name}: connectivity not checked (git fsck took over 10 minutes)",
                                f"run `git --git-dir {repo.mirror_path} fsck --connectivity-only` by hand",
                                warning=True))
        if not repo.in_place and _gone(repo.source):
            checks.append(Check(False, f"{repo.name}: its source {redact(repo.source)} no longer exists (gone upstream)",
                                f"`gad-bot untrack {repo.name}`, or track its new location"))
        elif not repo.in_place and is_gone_upstream(repo.last_error):  # no retry will help: act now, not after 3
            checks.append(Check(False, f"{repo.name}: its source {redact(repo.source)} answered its last sync that there "
                                       "is no such repository (gone upstream)",
                                f"`gad-bot untrack {repo.name}`, or track its new location (or give gad-bot "
                                "credentials that read it)"))
        elif repo.last_error:
            acting = repo.failures >= FAILURES_TO_ACT_ON
            checks.append(Check(False, f"{repo.name}: the last {max(1, repo.failures)} sync(s) failed: "
                                       f"{redact(repo.last_error)}",
                                f"check the source {redact(repo.source)}; gad-bot retries with backoff",
                                warning=not acting))
        elif repo.last_success_at is None or now - repo.last_success_at > stale_after:
            when = repo.last_success_at.strftime("%Y-%m-%d %H:%M UTC") if repo.last_success_at else "never"
            checks.append(Check(False, f"{repo.name}: last synced {when}",
                                "is `gad-bot serve` running? or run `gad-bot sync`", warning=True))
        else:
            checks.append(Check(True, f"{repo.name}: {repo.commits:,} commits, synced "
                                      f"{repo.last_success_at.strftime('%Y-%m-%d %H:%M UTC')}"))
    return checks


def check_leftovers(engine) -> Check:
    """Orphan mirrors and what killed clones and fetches left: disk taken for nothing, not yet a fault
    (serve's sync workers sweep them once serve has started, and before each periodic sync)."""
    found = engine.mirror_leftovers()
    if not found:
        return Check(True, "no orphan mirror or leftover temporary file under the mirrors")
    root = engine.settings.mirrors_dir
    named = ", ".join(str(path.relative_to(root)) for path in found[:5]) + (", ..." if len(found) > 5 else "")
    return Check(False, f"{len(found)} leftover(s) under {root} that nothing uses ({named})",
                 "`gad-bot doctor --fix` removes them (serve also does before its next periodic sync)", warning=True)


def check_schedule(engine, now: datetime) -> list[Check]:
    try:
        from ..digests.schedule import next_digest_times
    except ImportError:
        return []
    times = next_digest_times(engine, now)
    if not times:
        return [Check(True, "no digest subscriptions", warning=True)]
    return [Check(True, f"digest for {channel}: next at {when.isoformat(timespec='minutes')}") if when else
            Check(False, f"digest for {channel} is paused", "see `/gad subscriptions` in that channel; "
                  "subscribe again once fixed", warning=True)
            for channel, when in times]


def ago(seconds: float) -> str:
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= size:
            count = int(seconds // size)
            return f"{count} {unit}{'s' if count != 1 else ''} ago"
    return "just now"


def check_webhooks(engine, now: datetime) -> list[Check]:
    """When the last webhook of each host in GAD_WEBHOOK_SECRETS arrived (none configured: no line)."""
    hosts = list(engine.settings.webhook_secrets)
    if not hosts:
        return []
    from .webhooks import last_heard

    last = last_heard(engine.index, hosts)
    checks = []
    for host in hosts:
        if host in last:
            checks.append(Check(True, f"webhooks from {host}: the last arrived {ago((now - last[host]).total_seconds())}"))
        else:
            checks.append(Check(False, f"webhooks from {host}: none has arrived yet",
                                "add the webhook on the forge (docs/operations.md, 5.3), or remove the host "
                                "from GAD_WEBHOOK_SECRETS", warning=True))
    return checks


def check_audiences(engine) -> list[Check]:
    """Who may see what: repositories tracked before audiences existed stay open to everyone, as they were, until an
    admin says otherwise (said once in the log at the upgrade; here until then)."""
    from ..store.tables.schema import OPEN_BEFORE_AUDIENCES

    count = engine.index.get_meta(OPEN_BEFORE_AUDIENCES)
    if not count:
        return []
    return [Check(False, f"{count} repositories tracked before audiences existed are open to everyone in the "
                         "workspace, as they were",
                  "review who may see each with `gad-bot access NAME` (`gad-bot access NAME admins` or a channel's id "
                  "closes one); the first change an admin makes ends this warning (docs/operations.md, Audiences)",
                  warning=True)]


RESTORE_FIX = ("stop gad-bot and copy {path} (with any -wal file beside it) somewhere safe before changing anything; "
               "then `gad-bot restore BACKUP` from the latest `gad-bot backup` (docs/operations.md section 7), and keep "
               "the copy until the restored bot has answered for a while")


def check_opening(settings: Settings, error: BaseException) -> Check:
    """The one line for an index that cannot even be opened: damaged, on a full disk, not ours, or newer."""
    from ..faults import is_damaged_index, is_disk_full

    path = settings.index_path
    if is_damaged_index(error):
        return Check(False, f"the index {path} is damaged: SQLite cannot open it ({error})",
                     RESTORE_FIX.format(path=path))
    if is_disk_full(error):
        return Check(False, f"the index {path} cannot be opened: the data disk is full",
                     f"free space under {settings.data_dir}")
    if isinstance(error, GadError):  # written by a newer gad-bot, a mirror outside its directory: its own sentence
        return Check(False, str(error))
    reason = getattr(error, "strerror", None) or str(error)
    return Check(False, f"cannot open the index {path} ({type(error).__name__}: {reason})",
                 f"run gad-bot as the user that owns {settings.data_dir} (the service user), or give that user "
                 "read and write access to it and to the files in it")


def _guarded(what: str, settings: Settings, run) -> list[Check]:
    """`run()`'s checks; an error on the way (a damaged page met while reading, a full disk) is one FAIL line."""
    from ..faults import is_damaged_index

    try:
        found = run()
    except Exception as error:
        if is_damaged_index(error):
            return [Check(False, f"{what}: the index is damaged ({error})", RESTORE_FIX.format(path=settings.index_path))]
        return [Check(False, f"{what}: could not be checked ({type(error).__name__}: {error})",
                      "run `GAD_LOG_LEVEL=DEBUG gad-bot doctor` and read the log")]
    return found if isinstance(found, list) else [found]


def run_checks(settings: Settings, engine, client_factory, now: datetime | None = None,
               opening_error: BaseException | None = None) -> list[Check]:
    """Every check, each a line; none raises. `engine` None: the index could not be opened (`opening_error`),
    and what needs it is left out after the one line that says why."""
    now = now or datetime.now(timezone.utc)
    checks = [*_guarded("data directory", settings, lambda: check_data_dir(settings)),
              *_guarded("disk", settings, lambda: check_disk(settings)), *_guarded("git", settings, check_git),
              *_guarded("line counter", settings, check_counter),
              *_guarded("serve", settings, lambda: check_serve(settings))]
    if engine is None:
        checks.append(check_opening(settings, opening_error))
    else:
        checks += _guarded("index", settings, lambda: check_index(engine))
    checks += _guarded("Slack", settings, lambda: check_slack(settings, client_factory))
    if engine is not None:
        for what, run in (("mirrors", lambda: check_mirrors(engine, now)), ("leftovers", lambda: check_leftovers(engine)),
                          ("digests", lambda: check_schedule(engine, now)),
                          ("webhooks", lambda: check_webhooks(engine, now)), ("audiences", lambda: check_audiences(engine))):
            checks += _guarded(what, settings, run)
    # a damaged index is one fault: its first FAIL line says it and the way back, the checks it broke add nothing
    fix = RESTORE_FIX.format(path=settings.index_path)
    damaged = [c for c in checks if not c.ok and c.fix == fix]
    return [c for c in checks if c.ok or c.fix != fix or c is damaged[0]]
