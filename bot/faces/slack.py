"""The Bolt app: ack fast, hand the work off, respond. Nothing else.

Every `/gad` text goes through bot.engine.query.parse_command (the same parser as the CLI).
Bad input is rejected in the ack itself (an ephemeral sentence, within milliseconds);
everything that touches the index runs in Bolt's lazy-listener pool and answers with
respond(). Unexpected errors are logged with a reference id; the user sees only the id.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import re
import threading
import time
import urllib.parse
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone

from concurrent.futures import ThreadPoolExecutor

from slack_bolt import App
from slack_bolt.lazy_listener import ThreadLazyListenerRunner
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from ..engine import query as q
from ..config import Settings
from ..slackapi import web_client  # noqa: F401 (faces and tests make their clients here)
from ..engine.engine import Engine
from ..engine.audiences import Audience, Viewer
from ..errors import GadError, PermissionDeniedError, QueryError, UnknownRepoError, for_member
from ..metric import CompareReport
from ..engine import examples, periods
from ..render import blocks as kit
from ..render import words
from ..engine.rows import HomeRow, RepoSummary, TeamWeek
from ..store.index import Index
from ..store.sources import SourcePolicy, check_remote_source, redact
from . import posting
from . import share as sharing
from ..service.commands import Command, CommandFailed, IndexPaths, SyncRepos, TrackOrg, TrackRepo, run_command
from ..faults import DiskFullError, disk_full, is_disk_full
from .failures import answered_failures, fault_sentence
from ..service.members import Members
from ..service.homeweeks import HomeWeeks, last_full_week
from .links import LinksFace
from .modals import ModalsFace
from .workflow import WorkflowStep
from .slacktext import decode
from ..service.workers import BusyError, ReportAnswer, ReportJob, ReportPool, queued_words

log = logging.getLogger(__name__)

RESPONSE_URL_LIFETIME = timedelta(minutes=29)  # Slack keeps a response_url for 30 minutes ...
RESPONSE_URL_USES = 5  # ... and 5 uses
# Bolt runs acks, plain listeners and lazy work in one pool of 5 threads by default: with 100 slash commands at once
# each ack queued behind earlier commands' lazy work (users.info, the report queue), 366 ms p50 and 562 ms p95 in
# benchmarks/bench_load.py --heavy, and five long lazy jobs (a track) would hold every ack. Acks get a pool of their
# own; lazy work another (build_app). The lazy pool is small on purpose: its threads share serve's interpreter lock
# with the acks, and with 32 of them busy (users.info for 100 new people at once) the acks' p95 ranged 228-490 ms
# over three runs on an idle machine; with 8, 223-381 ms; with 4, 144-310 ms. 8, not 4, because a track or a sync
# (admins only) holds a lazy thread until it is done, and a few at once must not hold up everyone's answers.
ACK_THREADS = 16
LAZY_THREADS = 8
ACK_WORD_SECONDS = 3.0  # Slack's own bound on an ack: the lazy work waits that long for the ack's word
PROGRESS_EVERY_SECONDS = 10.0
ADMIN_COMMANDS = (q.Track, q.Untrack, q.Sync, q.ProjectAdd, q.ProjectRemove, q.SetAccess)
# What changes the index: refused with one sentence while the data disk is full (reports still answer)
WRITING_COMMANDS = (*ADMIN_COMMANDS, q.Subscribe, q.Unsubscribe)
NO_SHARE_WHILE_FULL = "The Share button is off while gad-bot's data disk is full."
CSV_INLINE_LIMIT = 2500  # characters of CSV shown in the answer when no file could be delivered
CSV_IN_CHANNEL = "The CSV is attached in this channel."
# A resolver that vouches for every host: the ack checks a /gad track source for everything but DNS
# (which may take longer than Slack's 3 seconds); the lazy work checks it again, with DNS.
_NO_DNS = ("1.1.1.1",)


def _today() -> date:
    return datetime.now(timezone.utc).date()


def typed(command: dict) -> str:
    """What the person typed after `/gad`, with Slack's escaping and link forms undone."""
    return decode(command.get("text") or "")


def _clicked_in(body: dict) -> str:
    """The channel of the message whose button was clicked."""
    return (body.get("channel") or {}).get("id") or (body.get("container") or {}).get("channel_id", "")


def _upload_csv(client: WebClient, channel: str, content: str, filename: str, query_text: str) -> str | None:
    """Upload a CSV file into a channel (files.getUploadURLExternal + files.completeUploadExternal);
    None once it is there, else the error Slack gave."""
    try:
        client.files_upload_v2(channel=channel, content=content, filename=filename, title=f"2GAD: {query_text}"[:200])
        return None
    except SlackApiError as error:
        why = error.response.get("error") or "error"
        log.info("CSV upload to %s failed: %s", channel, why)
        return why


def request_id(payload: dict) -> str:
    """A short id shared by a request's ack and its lazy work (both see the same trigger_id, or else the same
    fields), for the logs and for the lazy work to find the ack's word."""
    seed = payload.get("trigger_id") or payload.get("envelope_id") or json.dumps(payload, sort_keys=True, default=str)
    return hashlib.sha1(str(seed).encode()).hexdigest()[:10]


PHASES = {"fetch": "fetching objects", "index": "indexing commits", "paths": "indexing changed paths (for path:)"}


class PhaseClock:
    """Estimates the time left in each phase of a long job from its rate so far."""

    def __init__(self, clock: Callable[[], float] = time.monotonic):
        self._clock = clock
        self._started: dict[str, float] = {}

    def seconds_left(self, phase: str, done: int, total: int) -> float | None:
        now = self._clock()
        started = self._started.setdefault(phase, now)
        if not total or done <= 0 or now <= started or done >= total:
            return None
        return (now - started) * (total - done) / done


class Responder:
    """respond() within Slack's budget for a response_url, then the app's DM with the user."""

    def __init__(self, respond: Callable, client: WebClient, user_id: str, started: float | None = None):
        self._respond, self._client, self._user = respond, client, user_id
        self._started = started if started is not None else time.monotonic()
        self._uses = 0
        self._last_progress = 0.0

    def _url_alive(self, reserve: int = 0) -> bool:
        return (self._uses < RESPONSE_URL_USES - reserve
                and time.monotonic() - self._started < RESPONSE_URL_LIFETIME.total_seconds())

    def progress(self, text: str, blocks: list[dict]) -> None:
        """An in-place update; skipped when too soon, or when the last use must be kept for the answer."""
        now = time.monotonic()
        if now - self._last_progress < PROGRESS_EVERY_SECONDS or not self._url_alive(reserve=1):
            return
        self._last_progress = now
        self._send(text=text, blocks=blocks, replace_original=True)

    def notice(self, text: str) -> None:
        """A short ephemeral note that replaces nothing (e.g. where a queued report stands)."""
        if self._url_alive(reserve=1):
            self._send(text=text, response_type="ephemeral", replace_original=False)

    def final(self, text: str, blocks: list[dict], *, public: bool = False, replace: bool = False) -> None:
        if self._url_alive():
            self._send(text=text, blocks=blocks, response_type="in_channel" if public else "ephemeral",
                       replace_original=replace)
            return
        # The response_url has expired: the answer goes to the user's DM with the app.
        self._client.chat_postMessage(channel=self._user, text=text, blocks=blocks)

    def _send(self, **kwargs) -> None:
        self._uses += 1
        try:
            self._respond(**kwargs)
        except ValueError:  # no response_url in the payload: answer in the user's DM instead
            self._uses = RESPONSE_URL_USES
            if kwargs.get("replace_original") and kwargs.get("response_type") is None:
                return  # a progress update has nowhere to go
            self._client.chat_postMessage(channel=self._user, text=kwargs.get("text", ""),
                                          blocks=kwargs.get("blocks"))



def uses_teams(asked) -> bool:
    """Whether a question (a Query, or a parsed report, `me` or compare) needs Slack's user groups (`team:`, `by:team`,
    a compare item's `@team:GROUP`)."""
    if isinstance(asked, q.Compare):
        return any(item.team for item in asked.items) or uses_teams(asked.query)
    query = getattr(asked, "query", asked)
    return bool(query.teams) or query.by == "team"


def _csv_name(report) -> str:
    """The file name a report's (or a compare's) CSV is uploaded and kept under."""
    return "gad-compare.csv" if isinstance(report, CompareReport) else "gad-report.csv"

class SlackFace:
    """The /gad command, the Share button and the Home tab."""

    def __init__(self, settings: Settings, engine: Engine, digests=None, today: Callable[[], date] = _today,
                 reports: ReportPool | None = None, syncs=None, client: WebClient | None = None):
        self.settings = settings
        self.engine = engine
        # What Slack says of people and channels, cached a few minutes: every answer passes their audience
        # (bot/engine/audiences.py); an ack only ever uses what is cached already.
        self.members = Members(settings, engine.index, client if client is not None else web_client(settings))
        # Bolt runs a command's ack and its lazy work side by side: the lazy work waits for the ack's word on whether
        # it answered (or queued) the command itself, by request id, before it does anything.
        self._answered_in_ack: dict[str, tuple[float, bool]] = {}
        self._decided = threading.Condition()
        # Slash commands acked whose lazy work has not finished: a shutdown lets them queue (or answer) first, so
        # that the report drain tells each person, instead of a question acked and then lost in the exit.
        self._unsettled = 0
        self._settled = threading.Condition()
        self.reports = reports  # worker processes for reports (serve); None: reports run in Bolt's threads
        self.syncs = syncs  # bot.service.syncs.SyncQueue (serve): /gad track and sync run in its workers; None: here
        self.digests = digests  # bot.digests.subscriptions face, when digests are enabled
        self.today = today
        self.policy = SourcePolicy(allowed_hosts=settings.allowed_hosts, denied_hosts=settings.denied_hosts,
                                   allow_ssh=settings.ssh_key is not None)
        self._ack_policy = dataclasses.replace(self.policy, resolver=lambda host: list(_NO_DNS))
        # The Home tab's weekly figures, kept per (repository id, generation, Monday); serve also computes them in
        # a thread of its own (home_weeks.start()), so the first open after its start does not compute them all.
        self.home_weeks = HomeWeeks(engine, today)
        self._lock = threading.Lock()

    # -- listeners -------------------------------------------------------------
    def register(self, app: App) -> None:
        app.command("/gad")(ack=self.ack_command, lazy=[self.run_command])
        app.action("gad_share")(ack=self.ack_share, lazy=[self.run_share])
        app.event("app_home_opened")(self.home_opened)
        app.action(kit.UNTRACK_ACTION_ID)(ack=self.ack_button, lazy=[self.run_untrack])
        app.action(kit.UNTRACK_CANCEL_ACTION_ID)(self.cancel_untrack)
        LinksFace(self.settings, self.engine, self.today, self.ask_privately, self.members).register(app)
        WorkflowStep(self.engine, self.today, reports=self.reports).register(app)
        ModalsFace(self.settings, self.engine, self.digests, self.today, require_admin=self._require_admin,
                   user_tz=self._user_tz, reports=self.reports, members=self.members).register(app)
        app.error(self.on_error)

    def ack_command(self, ack, command, respond, client) -> None:
        """Parse and reject in the ack; help and reports are answered or queued right here when what Slack says
        of the person is cached (an ack never waits on Slack), else by the lazy work that asks it."""
        with self._settled:
            self._unsettled += 1  # its lazy work (run_command) settles it, whatever it does
        answered = False
        try:
            answered = self._ack_command(ack, command, respond, client)
        finally:
            with self._decided:  # the lazy work waits for this word (run_command)
                self._answered_in_ack[request_id(command)] = (time.monotonic(), answered)
                self._decided.notify_all()

    def _ack_command(self, ack, command, respond, client) -> bool:
        """The ack's work; True when it answered (or queued) the command itself, so the lazy work must not."""
        user = command.get("user_id", "")
        viewer = self.members.cached_viewer(user)
        try:
            parsed = q.parse_command(typed(command), self.today())
            log.info("/gad %s from %s in %s", type(parsed).__name__, user, command.get("channel_id"),
                     extra={"request_id": request_id(command)})
        except QueryError as error:  # the sentence quotes what the user typed: it goes to them, not to the log
            log.info("/gad rejected in the ack (%s)", type(error).__name__, extra={"request_id": request_id(command)})
            # as help names them: only what this person may see, and the generic examples until that is known
            found = examples.tracked_or_generic(self.engine.index, viewer) if viewer is not None else None
            error = examples.name_tracked(error, found)
            text, blocks = kit.error_blocks(str(error))
            ack(text=text, blocks=blocks, response_type="ephemeral")
            return True
        if isinstance(parsed, q.Help) and viewer is not None:
            # examples name what this person may see: a few rows of the index (WAL: a reader never waits for a sync)
            text, blocks = kit.help_blocks(examples.tracked_or_generic(self.engine.index, viewer))
            ack(text=text, blocks=blocks, response_type="ephemeral")
            return True
        if isinstance(parsed, WRITING_COMMANDS) and disk_full(self.settings.data_dir):
            # refused in one sentence before anything starts, rather than failing half-way through a write
            log.info("/gad %s refused in the ack: the data disk is full", type(parsed).__name__,
                     extra={"request_id": request_id(command)})
            ack(*kit.error_blocks(str(DiskFullError.at())), response_type="ephemeral")
            return True
        if isinstance(parsed, ADMIN_COMMANDS):
            try:  # a refusal after "Tracking ..." or "Untrack?" would read as a change of mind
                self._require_admin(client, user)
            except PermissionDeniedError as error:
                log.info("/gad %s refused in the ack (not an admin)", type(parsed).__name__,
                         extra={"request_id": request_id(command)})
                text, blocks = kit.error_blocks(str(error), mentions=self.settings.admins)
                ack(text=text, blocks=blocks, response_type="ephemeral")
                return True
        if isinstance(parsed, q.Track):
            try:  # refuse in the ack itself: a refusal after "Tracking ..." reads as a change of mind
                check_remote_source(parsed.source, self._ack_policy)
                if parsed.name:  # a look-alike of a tracked name (the name the URL gives is checked when tracking)
                    self.engine.tracking.check_new_name(parsed.name)
            except GadError as error:
                log.info("/gad track refused in the ack (%s)", type(error).__name__,
                         extra={"request_id": request_id(command)})
                text, blocks = kit.error_blocks(str(error))
                ack(text=text, blocks=blocks, response_type="ephemeral")
                return True
            ack(text=f"Tracking {kit.code(redact(parsed.source))} — I will update this message as it goes.",
                response_type="ephemeral")
            return False
        if isinstance(parsed, (q.ShowReport, q.Compare, q.Me)) and self.reports is not None and viewer is not None \
                and not parsed.query.public and not (uses_teams(parsed) and self.members.cached_teams() is None):
            # (a public answer asks Slack about the channel, and teams about the user groups: the lazy work does)
            self._queue_report(parsed, command, respond, client, viewer, ack=ack)
            return True
        ack()
        return False

    def _queue_report(self, parsed, command: dict, respond, client: WebClient, viewer: Viewer, ack=None) -> None:
        """Queue a report, compare or `me` for a worker process; say where it stands (in the ack, when given)."""
        user, channel, text = command.get("user_id", ""), command.get("channel_id", ""), typed(command)
        query = parsed.query
        compare = parsed if isinstance(parsed, q.Compare) else None
        responder = Responder(respond, client, user)
        share_id = None if query.public or isinstance(parsed, q.Me) else sharing.new_share_id()
        job = ReportJob(query, text, user, self.today(), csv=query.format == "csv", compare=compare,
                        share_id=share_id, viewer=self.answering(viewer, query, channel), me=isinstance(parsed, q.Me),
                        teams=self.members.teams() if uses_teams(parsed) else None)
        try:
            ahead = self.reports.submit(job, lambda answer: self._deliver(answer, responder, client, channel, user,
                                                                         text, share_id))
        except BusyError as error:
            log.info("/gad report refused: the queue is full for this user or for everyone",
                     extra={"request_id": request_id(command)})
            if ack is not None:
                ack(*kit.error_blocks(str(error)), response_type="ephemeral")
            else:
                responder.final(*kit.error_blocks(str(error)))
            return
        waiting = queued_words(ahead, self.reports.workers)
        if waiting is None:
            if ack is not None:
                ack()
            return
        said = f"Queued: {waiting}. I will answer here."
        if ack is not None:
            ack(text=said, response_type="ephemeral", blocks=[kit.context([f":hourglass_flowing_sand: {said}"])])
        else:
            responder.notice(said)

    def _deliver(self, answer: ReportAnswer, responder: Responder, client: WebClient, channel: str, user: str,
                 query_text: str, share_id: str | None = None) -> None:
        """Post a worker's answer (and its CSV) the way `_report` would have."""
        text, blocks = answer.text, answer.blocks
        if answer.detail is not None and self._may_administer(client, user):
            text, blocks = kit.error_blocks(answer.detail)  # members were given a sentence and a reference
        kept = True
        if share_id is not None and answer.report is not None and not answer.failed:
            # Share posts it without the CSV's place, and attaches the CSV again where it is shared
            kept = self._keep(share_id, user, query_text, text, blocks, answer.report, csv=answer.csv)
        if answer.csv is not None and isinstance(answer.report, CompareReport) and not answer.failed:
            notice = self._attach_csv(client, channel, user, answer.report, query_text, public=answer.public,
                                      content=answer.csv)
            blocks = [*blocks, kit.section(notice)]
        elif answer.csv is not None and answer.report is not None and not answer.failed:
            # where the file went (or the CSV itself) is part of the answer: rendered once it is known
            notice = self._attach_csv(client, channel, user, answer.report, query_text, public=answer.public,
                                      content=answer.csv)
            text, blocks = kit.report_blocks(answer.report, query_text, public=answer.public, notice=notice,
                                             share_id=share_id)
        if not kept:
            blocks = kit.shared_copy(blocks, [NO_SHARE_WHILE_FULL])
        responder.final(text, blocks, public=answer.public)

    def run_command(self, command, respond, client) -> None:
        user = command.get("user_id", "")
        responder = Responder(respond, client, user)
        started = time.perf_counter()
        parsed = None
        try:
            if self._ack_answered(request_id(command)):
                return  # answered in the ack (a refusal, a typo included), or queued there for a worker
            parsed = q.parse_command(typed(command), self.today())
            viewer = self.members.viewer(user)  # what Slack says of them; it cannot say: one sentence, nothing shown
            if isinstance(parsed, q.Help):
                responder.final(*kit.help_blocks(examples.tracked_or_generic(self.engine.index, viewer)))
            elif isinstance(parsed, (q.ShowReport, q.Compare, q.Me)) and self.reports is not None:
                self._queue_report(parsed, command, respond, client, viewer)
            else:
                self._dispatch(parsed, command, responder, client, viewer)
            log.info("/gad %s answered in %.0f ms", type(parsed).__name__, 1000 * (time.perf_counter() - started),
                     extra={"request_id": request_id(command)})
        except GadError as error:
            log.info("/gad refused (%s)", type(error).__name__, extra={"request_id": request_id(command)})
            mentions = self.settings.admins if isinstance(error, PermissionDeniedError) else ()
            text, blocks = self._error_blocks(error, client, user, mentions=mentions)
            # a failed track replaces its "Tracking ..." message and progress: one message tells the story
            responder.final(text, blocks, replace=isinstance(parsed, q.Track))
        except Exception as error:
            reference = uuid.uuid4().hex[:8]
            sentence = fault_sentence(error)
            if sentence is not None:  # a full disk or a damaged index: said as what it is, not as a bug
                log.error("/gad %s failed (reference %s): %s", type(parsed).__name__, reference, error,
                          extra={"request_id": request_id(command), "reference": reference})
            else:
                log.exception("internal error handling /gad (reference %s)", reference,
                              extra={"request_id": request_id(command), "reference": reference})
            text, blocks = kit.error_blocks(sentence or "Something went wrong on gad-bot's side; the operator can "
                                            "find the details in the logs.", reference)
            responder.final(text, blocks, replace=isinstance(parsed, q.Track))
        finally:
            self._forget_old_acks()
            with self._settled:
                self._unsettled = max(0, self._unsettled - 1)
                self._settled.notify_all()

    def settle(self, timeout: float) -> bool:
        """Wait (at most `timeout` s) until every slash command acked has been queued or answered; True if so."""
        with self._settled:
            return self._settled.wait_for(lambda: self._unsettled == 0, timeout=timeout)

    def _ack_answered(self, rid: str) -> bool:
        """The ack's word on a command (waiting for it: Bolt starts the ack and this side by side); an ack that never
        spoke within ACK_WORD_SECONDS answered nothing."""
        with self._decided:
            self._decided.wait_for(lambda: rid in self._answered_in_ack, timeout=ACK_WORD_SECONDS)
            return self._answered_in_ack.pop(rid, (0.0, False))[1]

    def _forget_old_acks(self) -> None:
        """Request ids of acks whose lazy work never came (a lost retry) go after 15 minutes: the dict stays small."""
        cutoff = time.monotonic() - 900
        with self._decided:
            for key, (at, _) in list(self._answered_in_ack.items()):
                if at < cutoff:
                    self._answered_in_ack.pop(key, None)

    def _dispatch(self, parsed, command: dict, responder: Responder, client: WebClient, viewer: Viewer) -> None:
        channel, user = command.get("channel_id", ""), command.get("user_id", "")
        if isinstance(parsed, (q.ShowReport, q.Me)):
            self._report(parsed, typed(command), responder, client, channel, user, viewer)
        elif isinstance(parsed, q.Compare):
            self._compare(parsed, typed(command), responder, client, channel, user, viewer)
        elif isinstance(parsed, q.ListRepos):
            paths = viewer.admin  # where repositories live on the server is the admins' business
            rows = [RepoSummary.of_failed(f, paths=paths) for f in self.engine.failed_repos(viewer)]
            rows += [RepoSummary.of(r, paths=paths, missing_objects=self.engine.damage(r))
                     for r in self.engine.repos(viewer)]
            responder.final(*kit.repos_blocks(rows))
        elif isinstance(parsed, q.SetAccess):
            # the words as Slack sent them: `<#C…|eng>` keeps the id that decoding the text for the grammar drops
            raw = (command.get("text") or "").split()[2:]
            self._access(dataclasses.replace(parsed, words=tuple(raw)), responder, client, user)
        elif isinstance(parsed, q.Track):
            self._track(parsed, responder)
        elif isinstance(parsed, q.Untrack):  # asked first: the buttons land in run_untrack
            name = self.engine.repo(parsed.name).name
            responder.final(*kit.untrack_question_blocks(name, self._digest_channels(name)))
        elif isinstance(parsed, q.Sync):
            names = parsed.names or tuple(r.name for r in self.engine.repos())
            results = self._run(SyncRepos(tuple(names)))
            failures = [r for r in results if r.error]
            shown = results if len(results) <= 50 else failures[:20]  # thousands: the counts and what failed first
            lines = [f"{kit.code(r.name)}: " + (f"failed — {kit.escape_mrkdwn(r.error)}" if r.error else
                                                 f"{r.commits:,} commits (+{r.new_commits:,})") for r in shown]
            text = "Synced: " + "; ".join(f"{r.name}" for r in results)
            if len(results) > 50:
                text = (f"Synced {len(results):,} repositories: {len(failures):,} failed, "
                        f"+{sum(r.new_commits for r in results):,} new commits.")
                lines.insert(0, text + (" The failures, first first:" if failures else ""))
            responder.final(text, [kit.section("\n".join(lines) or "Nothing is tracked yet.")])
        elif isinstance(parsed, q.ProjectAdd):
            members = self.engine.project_add(parsed.name, parsed.repos)
            responder.final(f"Project {parsed.name}: {', '.join(members)}",
                            [kit.section(f"Project {kit.code(parsed.name)} now counts "
                                         + ", ".join(kit.code(m) for m in members) + " as one.")])
        elif isinstance(parsed, q.ProjectRemove):
            self.engine.project_remove(parsed.name)
            responder.final(f"Removed project {parsed.name}.", [kit.section(f"Removed project {kit.code(parsed.name)}.")])
        elif isinstance(parsed, q.ListProjects):
            projects = self.engine.projects(viewer)
            not_cloned: dict[str, int] = {}
            for failed in self.engine.failed_repos(viewer):
                not_cloned[failed.org] = not_cloned.get(failed.org, 0) + 1
            lines = [f"{kit.code(n)}: " + ", ".join(kit.code(r) for r in repos[:10])
                     + (f" and {len(repos) - 10:,} more" if len(repos) > 10 else "")
                     + (f"; {not_cloned[n]:,} more it lists could not be cloned (`/gad repos` says why)"
                        if not_cloned.get(n) else "") for n, repos in projects.items()]
            responder.final(words.projects_words(projects, not_cloned), [kit.section("\n".join(lines) or "No projects yet; create one with "
                                                     "`/gad project add NAME REPO...`.")])
        elif isinstance(parsed, (q.Subscribe, q.Unsubscribe, q.ListSubscriptions, q.PreviewDigest)):
            if self.digests is None:
                raise GadError("Digests are not enabled on this gad-bot.")
            if isinstance(parsed, (q.Subscribe, q.Unsubscribe)) and self.settings.subscribers == "admins":
                self._require_admin(client, user, "change this channel's digest")
            reply = self.digests.handle(parsed, channel_id=channel, team_id=command.get("team_id"),
                                        user_id=user, user_tz=self._user_tz(client, user), viewer=viewer,
                                        channel_viewer=lambda: self.members.channel_viewer(channel),
                                        teams=self.members.teams)
            responder.final(reply.text, reply.blocks, public=reply.public)

    # -- reports ---------------------------------------------------------------
    def answering(self, viewer: Viewer, query: q.Query, channel: str) -> Viewer:
        """Who an answer is for: the person, and the channel too when it is posted there (`public`): a public
        answer shows only what both may see (bot/engine/audiences.py), and names nothing the channel may not see
        (bot/faces/posting.py: one sentence instead)."""
        if not query.public:
            return viewer
        try:
            self.engine.resolve(query.repos, viewer)  # what the person may not see is, to them, not tracked
        except UnknownRepoError as error:
            raise q.explain_unknown(error, " ".join(query.repos)) from None
        why = posting.refusal(self.engine, self.members, channel, query.repos,
                              about_people=query.by == "person" or bool(query.authors))
        if why is not None:
            raise PermissionDeniedError(why + " Ask without `public` for your own answer.")
        return viewer.posting_in(self.members.channel_viewer(channel))

    def _report(self, parsed, query_text: str, responder: Responder, client: WebClient,
                channel: str, user: str, viewer: Viewer) -> None:
        query = parsed.query
        reader = self.answering(viewer, query, channel)
        try:
            report = (self.engine.me(query, self.today(), reader) if isinstance(parsed, q.Me)
                      else self.engine.report(query, self.today(), reader,
                                              self.members.teams() if uses_teams(query) else None))
        except UnknownRepoError as error:
            raise q.explain_unknown(error, query_text) from None
        from ..render.csvout import report_to_csv

        share_id = None if query.public or isinstance(parsed, q.Me) else sharing.new_share_id()
        text, blocks = kit.report_blocks(report, query_text, public=query.public, share_id=share_id)
        csv = report_to_csv(report) if query.format == "csv" else None
        kept = True
        if share_id is not None:  # Share posts it without the CSV's place, and attaches the CSV where it is shared
            kept = self._keep(share_id, user, query_text, text, blocks, report, csv=csv)
        if csv is not None:
            notice = self._attach_csv(client, channel, user, report, query_text, public=query.public, content=csv)
            text, blocks = kit.report_blocks(report, query_text, public=query.public, notice=notice, share_id=share_id)
        responder.final(text, blocks if kept else kit.shared_copy(blocks, [NO_SHARE_WHILE_FULL]), public=query.public)

    def _keep(self, share_id: str, user: str, query_text: str, text: str, blocks: list[dict], report,
              csv: str | None = None) -> bool:
        """Keep a private answer for its Share button (a Report or a CompareReport), with its CSV when it
        came with one. False when the data disk is full: the answer is still given, without its button."""
        repos = [n for row in report.rows for n in row.repos] if isinstance(report, CompareReport) else report.repos
        try:
            sharing.keep_answer(self.engine.index, share_id, user=user, query_text=query_text, text=text,
                                blocks=blocks, data_as_of=report.data_as_of, repos=repos,
                                csv=(_csv_name(report), csv) if csv is not None else None)
        except Exception as error:
            if not is_disk_full(error):
                raise
            log.warning("an answer was given without its Share button: the data disk is full")
            return False
        return True

    def _compare(self, parsed: q.Compare, query_text: str, responder: Responder, client: WebClient,
                 channel: str, user: str, viewer: Viewer) -> None:
        from ..render.compare import compare_blocks, compare_to_csv

        report = self.engine.compare(parsed, self.today(), self.answering(viewer, parsed.query, channel),
                                     self.members.teams() if uses_teams(parsed) else None)
        share_id = None if parsed.query.public else sharing.new_share_id()
        text, blocks = compare_blocks(report, query_text, public=parsed.query.public, share_id=share_id)
        csv = compare_to_csv(report) if parsed.query.format == "csv" else None
        kept = True
        if share_id is not None:
            kept = self._keep(share_id, user, query_text, text, blocks, report, csv=csv)
        if csv is not None:
            notice = self._attach_csv(client, channel, user, report, query_text, public=parsed.query.public,
                                      content=csv)
            blocks = [*blocks, kit.section(notice)]
        responder.final(text, blocks if kept else kit.shared_copy(blocks, [NO_SHARE_WHILE_FULL]),
                        public=parsed.query.public)

    def _attach_csv(self, client: WebClient, channel: str, user: str, report, query_text: str,
                    *, public: bool, content: str) -> str:
        """Deliver the CSV of `report` where the answer goes (the channel for `public`, else the user's DM with the app).

        Returns the sentence the answer carries about it; when no file could be delivered, that is
        the CSV itself, so the figures always reach the person who asked.
        """
        filename = _csv_name(report)
        why = ""
        if public:
            why = _upload_csv(client, channel, content, filename, query_text)
            if why is None:
                return CSV_IN_CHANNEL
        opened = None
        try:
            # An ephemeral question gets its file privately: the app's DM with the user. Posting to a
            # user id opens that DM and answers with its D... id, which files.upload needs (no im:write).
            opened = client.chat_postMessage(channel=user, text=f"The CSV for {kit.code('/gad ' + query_text, 200)}.",
                                             unfurl_links=False, unfurl_media=False)
        except SlackApiError as error:
            why = error.response.get("error") or "error"
            log.info("opening the DM of %s for a CSV failed: %s", user, why)
        if opened is not None:
            refused = _upload_csv(client, opened["channel"], content, filename, query_text)
            if refused is None:
                if why:
                    return (f"I could not attach the CSV in this channel (Slack said `{kit.escape_mrkdwn(why)}`; "
                            "invite me with `/invite`), so I sent it to you in a direct message.")
                return "The CSV is in your direct messages with gad-bot (only you can see it)."
            why = refused
            try:  # the DM announced a file that did not follow: it says so instead
                client.chat_update(channel=opened["channel"], ts=opened["ts"],
                                   text=f"I could not attach the CSV for {kit.code('/gad ' + query_text, 200)} here "
                                        f"(Slack said `{kit.escape_mrkdwn(why)}`); my answer to you shows it instead.")
            except SlackApiError as error:
                log.info("correcting the CSV message in the DM of %s failed: %s", user,
                         error.response.get("error") or "error")
        shown = content if len(content) <= CSV_INLINE_LIMIT else (
            content[:content.rfind("\n", 0, CSV_INLINE_LIMIT) + 1] + "…\n")
        more = "" if shown == content else " (cut short: `gad-bot report ... --csv` on the server gives it all)"
        return (f"I could not attach the CSV (Slack said `{kit.escape_mrkdwn(why)}`; the operator may need to grant "
                f"`files:write`), so here it is{more}:\n```{kit.escape_mrkdwn(shown)}```")

    def ack_share(self, ack) -> None:
        ack()

    def ack_button(self, ack) -> None:
        ack()

    def run_share(self, body, respond, client) -> None:
        """The Share button: the answer the person saw, posted for everyone once (bot/faces/share.py)."""
        user = body.get("user", {}).get("id", "")
        responder = Responder(respond, client, user)
        channel = _clicked_in(body)

        def attach(filename: str, content: str, query_text: str) -> str:
            why = _upload_csv(client, channel, content, filename, query_text)
            if why is None:
                return CSV_IN_CHANNEL
            return (f"I could not attach the CSV in this channel (Slack said `{kit.escape_mrkdwn(why)}`); invite me "
                    f"with `/invite`, then ask {kit.code('/gad ' + query_text + ' public', 200)} to have it here.")

        def refusal(kept) -> str | None:  # only where the channel may see all it counts (bot/faces/posting.py)
            names = [*posting.names_asked(kept.query, self.today()), *kept.generations]
            return posting.refusal(self.engine, self.members, channel, names, person=self.members.viewer(user),
                                   about_people=posting.person_level(kept.query, self.today()))

        with answered_failures(responder.final, "sharing a report",
                               is_admin=lambda: self._may_administer(client, user)):
            sharing.share(self.engine.index, str(body["actions"][0].get("value", "")), user, responder, attach,
                          refusal=refusal)

    def ask_privately(self, text: str, body: dict, respond, client: WebClient) -> None:
        """A report asked by a button (a link card's): answered as `/gad text` would be, to that person only."""
        user = body.get("user", {}).get("id", "")
        channel = _clicked_in(body)
        responder = Responder(respond, client, user)
        with answered_failures(responder.final, "answering a button",
                               is_admin=lambda: self._may_administer(client, user)):
            parsed = q.parse_command(text, self.today())
            if not isinstance(parsed, q.ShowReport):
                raise QueryError("That button asks for a report only; type `/gad help` for the rest.")
            self._report(dataclasses.replace(parsed, query=dataclasses.replace(parsed.query, public=False)), text,
                         responder, client, channel, user, self.members.viewer(user))

    # -- untracking --------------------------------------------------------------
    def _digest_channels(self, name: str) -> list[str]:
        """The channels whose digest counts `name` (none when digests are off)."""
        if self.digests is None:
            return []
        from ..digests import subscriptions as subs

        return [s.channel_id for s in subs.all_subscriptions(self.engine.index) if name in s.repos]

    def cancel_untrack(self, ack, body, respond) -> None:
        ack()
        name = str(body["actions"][0].get("value", ""))
        respond(text=kit.fallback(f"Nothing was untracked: {name} is still tracked."), replace_original=True,
                blocks=[kit.section(f"Nothing was untracked: {kit.code(name)} is still tracked.")])

    def run_untrack(self, body, respond, client) -> None:
        """The confirmation's Untrack button: untrack, then tell each channel whose digest counted it."""
        from ..digests import subscriptions as subs

        user = body.get("user", {}).get("id", "")
        responder = Responder(respond, client, user)
        with answered_failures(lambda text, blocks: responder.final(text, blocks, replace=True), "untracking",
                               is_admin=lambda: self._may_administer(client, user)):
            self._require_admin(client, user, "untrack a repository")
            name = self.engine.repo(str(body["actions"][0].get("value", ""))).name
            self.engine.untrack(name)
            channels = self.digests.forget_repo(name) if self.digests is not None else []
            told = []
            for channel in channels:
                left = subs.get(self.engine.index, channel)
                text, blocks = kit.untrack_announcement(name, user, left.repos if left else ())
                try:
                    client.chat_postMessage(channel=channel, text=text, blocks=blocks, unfurl_links=False,
                                            unfurl_media=False)
                    told.append(f"<#{channel}>")
                except SlackApiError as error:  # untracked all the same; the listing there says so
                    log.info("could not announce the untrack of %s in %s: %s", name, channel,
                             error.response.get("error"))
            said = f" Told {', '.join(told)}." if told else ""
            responder.final(f"Untracked {name}.", [kit.section(f"Untracked {kit.code(name)}.{said}")], replace=True)

    # -- tracking ----------------------------------------------------------------
    def _track(self, parsed: q.Track, responder: Responder) -> None:
        url = check_remote_source(parsed.source, self.policy)
        shown = redact(url)
        owner = self.engine.org_owner(url, guarded=True)
        if owner is not None:
            self._track_org(owner, parsed, shown, responder)
            return
        clock = PhaseClock()

        def progress(phase: str, done: int, total: int) -> None:
            responder.progress(*kit.progress_blocks(f"Tracking {shown}", done, total or None, PHASES.get(phase, phase),
                                                    clock.seconds_left(phase, done, total)))

        result = self._run(TrackRepo(url, parsed.name), lambda event: progress(*event))
        name = kit.code(result.name)
        text = kit.fallback(f"Tracked {result.name}: {result.commits:,} commits indexed.")
        responder.final(text, [kit.section(f"Tracked {name}: {result.commits:,} commits indexed. "
                                           f"Try `/gad {kit.escape_mrkdwn(result.name)} since:12w by:week`; "
                                           "`path:` works once its changed paths are indexed: I will say so here."),
                               kit.context([kit.audience_words(self.engine.access(result.name))])],
                        replace=True)
        # After answering: reports already work without the changed paths.
        count, seconds = self._run(IndexPaths(result.name), lambda event: progress(*event))
        responder.final(kit.fallback(f"{result.name} is fully indexed: path: works now."),
                        [kit.section(f"{name} is fully indexed: `path:` works now (the changed paths of {count:,} "
                                     f"commits, indexed in {seconds:.0f} s).")])

    def _track_org(self, owner, parsed: q.Track, shown: str, responder: Responder) -> None:
        """A forge organization: one progress message for all its repositories, updated; then what was found."""
        if parsed.name:
            raise QueryError("An organization is tracked under its own name (its project's); leave out `as:`.")

        def progress(state) -> None:
            if state.phase == "repositories":
                phase = f"repositories tracked ({state.commits:,} commits indexed)"
                responder.progress(*kit.progress_blocks(f"Tracking {shown}", state.done, state.total, phase,
                                                        state.seconds_left))
            elif state.phase == "rate limit":
                responder.progress(*kit.progress_blocks(f"Tracking {shown}", 0, None, "waiting "
                                                        f"{state.waiting:.0f} s for the forge's API rate limit"))
            else:
                responder.progress(*kit.progress_blocks(f"Tracking {shown}", state.done, None, "listing repositories"))

        result = self._run(TrackOrg(owner, parsed.forks), progress)
        sentence = result.sentence()
        responder.final(kit.fallback(sentence), [kit.section(kit.escape_mrkdwn(sentence)),
                                   kit.context([f"Reports, compare and subscriptions can name {kit.code(result.org)}, "
                                                f"e.g. `/gad {kit.escape_mrkdwn(result.org)} since:12w by:repo`; "
                                                "each sync lists the organization again. "
                                                + kit.audience_words(self.engine.access(result.org))])],
                        replace=True)

    def _run(self, command: Command, progress: Callable[[object], None] | None = None) -> object:
        """Run a track or sync command in the sync workers (serve: the fetch and the first index never run in
        this process), or here without them; its result, or its error raised here as one GadError."""
        try:
            if self.syncs is None:
                return run_command(self.engine, command, progress or (lambda event: None))
            # The queue drops a progress update that would arrive after the answer, and lets one under way finish
            # first.
            done = self.syncs.run_command(command, progress).result()
        finally:  # a track or a sync may have made a new generation: serve's thread computes its Home tab figure now
            self.home_weeks.wake()
        if done is None:
            raise GadError("gad-bot stopped before this was done (a restart); type the command again in a minute.")
        if isinstance(done.result, CommandFailed):
            raise GadError(done.result.message, operator_detail=done.result.operator_detail)
        if done.error:  # a worker that died, or a bug there: the details are the operator's
            reference = uuid.uuid4().hex[:8]
            log.error("a sync worker failed on %s (reference %s): %s", type(command).__name__, reference, done.error,
                      extra={"reference": reference})
            raise GadError(f"The {'sync' if isinstance(command, SyncRepos) else 'tracking'} stopped on gad-bot's "
                           f"side (reference {reference}); try again, or ask the operator to look it up in the logs.")
        return done.result

    # -- people ------------------------------------------------------------------
    def _error_blocks(self, error: GadError, client: WebClient, user: str,
                      mentions: tuple[str, ...] | list[str] = ()) -> tuple[str, list[dict]]:
        """`error` as a message for `user`: its words, unless they name the server's insides and
        `user` is not an admin (then a sentence and a reference id: bot.errors.for_member)."""
        if error.operator_detail and not self._may_administer(client, user):
            return kit.error_blocks(*for_member(error))
        return kit.error_blocks(str(error), mentions=mentions)

    def _may_administer(self, client: WebClient, user: str) -> bool:
        """GAD_ADMINS when the operator set it, workspace admins otherwise (bot/service/members.py)."""
        return self.members.is_admin(user)

    def _require_admin(self, client: WebClient, user: str, what: str = "do that") -> None:
        if self._may_administer(client, user):
            return
        if self.settings.admins:
            who = ", ".join(f"<@{a}>" for a in self.settings.admins[:5])
            raise PermissionDeniedError(f"Only the people gad-bot's operator listed can {what} ({who}); "
                                        "ask one of them.")
        raise PermissionDeniedError(f"Only workspace admins can {what} here; ask an admin, or ask the operator to "
                                    "add you to GAD_ADMINS.")

    def _user_tz(self, client: WebClient, user: str) -> str | None:
        try:
            return self.members.person(user).tz
        except GadError:
            return None

    # -- who may see what -----------------------------------------------------------
    def _access(self, parsed: q.SetAccess, responder: Responder, client: WebClient, user: str) -> None:
        """`/gad access NAME [everyone|admins|ID...]` (admins only: refused in the ack for others)."""
        if parsed.words:
            try:
                words = self.members.ids_of(list(parsed.words))
            except Exception as error:  # Slack could not list channels or groups: ids still work
                log.info("names in /gad access were not looked up: %s", type(error).__name__)
                words = list(parsed.words)
            access = self.engine.set_access(parsed.name, Audience.from_words(words))
            log.info("access of %s set to %s by %s", access.name, access.audience.text(), user)
        else:
            access = self.engine.access(parsed.name)
        responder.final(*kit.access_blocks(access, changed=bool(parsed.words)))

    # -- App Home ----------------------------------------------------------------
    def home_opened(self, event, client) -> None:
        if event.get("tab", "home") != "home":
            return
        user = event.get("user", "")
        today = self.today()
        monday = last_full_week(today)
        week = periods.bucket_label(monday, "week")
        try:
            viewer = self.members.viewer(user)
        except GadError as error:  # Slack cannot say who this is: the tab shows nothing tracked, and why
            client.views_publish(user_id=user, view=kit.home_view([], is_admin=False, unknown=str(error)))
            return
        tracked = self.engine.repos(viewer)  # read once: the rows and the examples both name them
        figures, computed = self.home_weeks.for_open(tracked, monday, today)
        rows = [HomeRow(name=repo.name, weekly_two_gad=figures[repo.id], week=week, last_error=repo.last_error)
                for repo in tracked]
        log.info("Home tab for %s: %s, %s computed (the others were kept)", user,
                 words.plural(len(tracked), "repository", "repositories"), words.plural(computed, "weekly figure"))
        found = examples.tracked_or_generic(self.engine.index, viewer, tracked)
        client.views_publish(user_id=user, view=kit.home_view(rows, is_admin=viewer.admin, found=found,
                                                              teams=self._team_weeks(user, viewer, tracked, monday)))

    def _team_weeks(self, user: str, viewer: Viewer, tracked: list, monday: date) -> list[TeamWeek]:
        """The last full week of each user group the person is in, over the repositories they may see; none when Slack
        cannot list the groups (the tab shows the rest) or nothing is tracked for them."""
        if not tracked:
            return []
        try:
            teams = self.members.teams()
        except GadError:
            return []
        mine = teams.of_user(user)[:10]
        out = []
        week = periods.bucket_label(monday, "week")
        for team in mine:
            query = q.Query(repos=tuple(r.name for r in tracked), since=monday, until=monday + timedelta(days=6),
                            teams=(team.id,))
            try:
                totals = self.engine.report(query, self.today(), viewer, teams).totals
            except GadError:  # no member of it committed here: not one of the tab's figures
                continue
            out.append(TeamWeek(team.label, totals.two_gad, totals.developers, week))
        return out

    def on_error(self, error, body) -> None:
        reference = uuid.uuid4().hex[:8]
        log.error("unhandled Bolt error (reference %s): %s", reference, error)


# -- the door in front of Bolt (HTTP mode) -------------------------------------------------------

# Slack's largest requests echo a message or view back (a Share click carries the report's
# blocks, at most 50): tens of kB. One MiB leaves room for that many times over and bounds what a
# stranger can make gad-bot read: 16 waitress threads x 1 MiB.
MAX_BODY_BYTES = 1 << 20
SIGNATURE_WINDOW_SECONDS = 300  # Slack's own rule: refuse timestamps further than five minutes away
_TIMESTAMP = re.compile(r"[0-9]{1,12}")
_SIGNATURE = re.compile(r"v0=[0-9a-f]{64}")


@dataclass(frozen=True)
class Verdict:
    """What the gate decided about one request: status 200 passes it on to Bolt."""

    status: int
    reason: str  # for the one log line; never contains anything taken from the request


PASS = Verdict(200, "ok")


class RequestGate:
    """Checks an HTTP request before Bolt reads it: size, signature and freshness, replay, shape.

    Bolt would decode and log the whole body of a request with a bad signature, and answer a
    malformed signed one with a 500 and a traceback; here each is one status and one reason.
    A replay of bytes already accepted (same timestamp, same signature) within the window is
    refused: the signature covers the timestamp and the body, so it names the request. The
    signatures are kept in the index (`Index.record_slack_request`), so a restart forgets none;
    while a full disk refuses that write, in a bounded memory (bot/faces/replay.py).
    """

    def __init__(self, signing_secret: str, index: Index, clock: Callable[[], float] = time.time):
        from slack_sdk.signature import SignatureVerifier

        from .replay import ReplayGuard

        self._verifier = SignatureVerifier(signing_secret, clock=_Clock(clock))
        self._clock = clock
        self._index = index
        self._replays = ReplayGuard(index)

    def check_length(self, content_length: str | None) -> Verdict:
        """Before anything is read: Slack always sends Content-Length, and never more than MAX_BODY_BYTES."""
        if content_length is None or not content_length.isdigit():
            return Verdict(411, "no Content-Length")
        if int(content_length) > MAX_BODY_BYTES:
            return Verdict(413, f"body larger than {MAX_BODY_BYTES} bytes")
        return PASS

    def check(self, headers: dict[str, str], body: bytes) -> Verdict:
        """The verdict on a request whose body has been read (`headers` keys lower-case)."""
        timestamp = headers.get("x-slack-request-timestamp", "")
        signature = headers.get("x-slack-signature", "")
        if not _TIMESTAMP.fullmatch(timestamp) or not _SIGNATURE.fullmatch(signature):
            return Verdict(401, "missing or malformed signature headers")
        now = self._clock()
        if abs(now - int(timestamp)) > SIGNATURE_WINDOW_SECONDS:
            return Verdict(401, "timestamp outside the five-minute window")
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError:
            return Verdict(400, "body is not UTF-8")
        if not self._verifier.is_valid(text, timestamp, signature):
            return Verdict(401, "signature does not match")
        shape = _shape(headers.get("content-type", ""), text)
        if shape is not PASS:
            return shape
        # kept while a copy could still pass the window check, clock skew included
        first = self._replays.first_time(signature, int(timestamp) + SIGNATURE_WINDOW_SECONDS + 1, now)
        if first is None:
            return Verdict(503, "the data disk is full and the replay guard's memory too")
        if not first:
            return Verdict(401, "replay of a request already accepted")
        return PASS


class _Clock:
    """slack_sdk's clock protocol over a function (its default Clock instance is shared by every verifier)."""

    def __init__(self, now: Callable[[], float]):
        self._now = now

    def now(self) -> float:
        return self._now()


def _shape(content_type: str, text: str) -> Verdict:
    """Whether a signed body has the shape Bolt assumes (it answers 500 to anything else)."""
    kind = content_type.split(";", 1)[0].strip().lower()
    if kind == "application/json":
        envelope = _parse_json(text)
        if isinstance(envelope, Verdict):
            return Verdict(400, "JSON body " + envelope.reason)
        return _fields(envelope, "JSON body")
    if kind != "application/x-www-form-urlencoded":
        return Verdict(415, "neither form-encoded nor JSON")
    fields = urllib.parse.parse_qs(text, keep_blank_values=True)
    if "payload" not in fields:
        return PASS  # a slash command or ssl_check: flat fields, each a string
    payload = _parse_json(fields["payload"][0])
    if isinstance(payload, Verdict):
        return Verdict(400, "payload " + payload.reason)
    shape = _fields(payload, "payload")
    if shape is PASS and payload.get("type") == "block_actions" and not payload.get("actions"):
        return Verdict(400, "block_actions without actions")
    return shape


# Real Slack bodies nest a dozen levels at most (Block Kit inside a view inside a payload).
MAX_JSON_DEPTH = 64
# The fields Bolt reads, and what it takes for granted about them (it indexes or .get()s into them
# without a check): an object, a string (or null), an object or a string, a list of objects.
_OBJECTS = frozenset({"event", "view", "container", "message", "previous_message", "item", "assistant_thread",
                      "function_data", "workflow_step", "state"})
_STRINGS = frozenset({"type", "command", "text", "callback_id", "action_id", "block_id", "trigger_id",
                      "response_url", "team_id", "user_id", "channel_id", "enterprise_id", "api_app_id", "token",
                      "challenge", "subtype", "tab", "bot_id", "thread_ts", "channel_type", "value"})
_OBJECTS_OR_STRINGS = frozenset({"team", "enterprise", "user", "channel"})
_LISTS_OF_OBJECTS = frozenset({"authorizations", "actions", "response_urls"})
# Inside the items of those lists Bolt reads only these, each a string (a button's `text` is an object).
_ITEM_STRINGS = frozenset({"action_id", "block_id", "type", "team_id", "user_id", "enterprise_id", "channel_id",
                           "response_url"})
# Objects whose own fields Bolt reads in turn (the rules apply inside them too).
_READ_INSIDE = frozenset({"event", "view", "message", "previous_message", "item", "assistant_thread"})


def _parse_json(text: str) -> dict | Verdict:
    """The JSON object in `text`, or a Verdict saying (after "JSON body"/"payload") what is wrong with it."""
    try:
        value = json.loads(text)
    except RecursionError:
        return Verdict(400, f"is nested more than {MAX_JSON_DEPTH} levels deep")
    except ValueError:
        return Verdict(400, "does not parse")
    if not isinstance(value, dict):
        return Verdict(400, "is not an object")
    if _depth(value) > MAX_JSON_DEPTH:
        return Verdict(400, f"is nested more than {MAX_JSON_DEPTH} levels deep")
    return value


def _depth(value: object) -> int:
    """How deep lists and objects nest in a parsed JSON value (without recursion: the value is a stranger's)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            item = item.values()
        elif not isinstance(item, list):
            continue
        deepest = max(deepest, level)
        if deepest > MAX_JSON_DEPTH:
            return deepest
        stack.extend((child, level + 1) for child in item)
    return deepest


def _fields(body: dict, what: str) -> Verdict:
    """The rules above over `body` and the objects Bolt reads inside it: PASS, or a 400 naming the field."""
    stack: list[tuple[dict, str]] = [(body, what)]
    while stack:
        obj, where = stack.pop()
        for key, value in obj.items():
            if key in _OBJECTS:
                ok = isinstance(value, dict)
            elif key in _STRINGS:
                ok = value is None or isinstance(value, str)
            elif key in _OBJECTS_OR_STRINGS:
                ok = value is None or isinstance(value, (str, dict))
            elif key in _LISTS_OF_OBJECTS:
                ok = isinstance(value, list) and all(isinstance(v, dict) for v in value)
            else:
                continue
            if not ok:  # the field's name is Slack's (one of the sets above), not the request's
                return Verdict(400, f"{where}: `{key}` has the wrong type")
            if key in _READ_INSIDE:
                stack.append((value, f"{where}.{key}"))
            elif key in _LISTS_OF_OBJECTS:
                for item in value:
                    wrong = next((k for k in _ITEM_STRINGS if k in item and not isinstance(item[k], (str, type(None)))),
                                 None)
                    if wrong:
                        return Verdict(400, f"{where}.{key}[]: `{wrong}` has the wrong type")
    if what == "JSON body" and body.get("type") == "event_callback" and not isinstance(
            body.get("event", {}).get("type"), str):
        return Verdict(400, f"{what}: an event without a type")
    return PASS


class _DropTokenNotice(logging.Filter):
    """Bolt reads SLACK_BOT_TOKEN from the environment itself and then warns that the client we pass wins."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "As you gave `client` as well" not in record.getMessage()


def build_app(settings: Settings, engine: Engine, *, digests=None, client: WebClient | None = None,
              reports: ReportPool | None = None, syncs=None,
              socket_mode: bool | None = None, today: Callable[[], date] = _today) -> tuple[App, SlackFace]:
    """The Bolt app with gad-bot's listeners registered; request verification stays on in HTTP mode."""
    socket_mode = bool(settings.slack_app_token) if socket_mode is None else socket_mode
    bolt_log = logging.getLogger("gad-bot.bolt")
    if not any(isinstance(f, _DropTokenNotice) for f in bolt_log.filters):
        bolt_log.addFilter(_DropTokenNotice())
    app = App(client=client or web_client(settings), signing_secret=settings.slack_signing_secret or "unused",
              request_verification_enabled=not socket_mode, token_verification_enabled=True,
              process_before_response=False, logger=bolt_log,
              listener_executor=ThreadPoolExecutor(ACK_THREADS, thread_name_prefix="gad-ack"))
    # lazy work apart from the acks (ACK_THREADS): an ack never waits for a thread that a lazy function holds
    app.listener_runner.lazy_listener_runner = ThreadLazyListenerRunner(
        bolt_log, ThreadPoolExecutor(LAZY_THREADS, thread_name_prefix="gad-lazy"))
    face = SlackFace(settings, engine, digests=digests, today=today, reports=reports, syncs=syncs, client=app.client)
    face.register(app)
    return app, face
