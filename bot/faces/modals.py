"""The Home tab's buttons and their modals: ask a report, compare, subscribe a channel, see digests.

A button opens its modal (views.open, with the click's trigger_id); the repository fields search the
tracked names (block_suggestion). On submit the form's values are joined into ONE command text for
the grammar (bot/engine/query.py), field by field: the first field whose addition the grammar
refuses gets the grammar's sentence next to it (`response_action: errors`) and the modal stays
open. A valid form closes, and the answer, rendered as for `/gad`, goes to the chosen channel or to
the person's DM with gad-bot.

Under `serve` (with report workers) a report or compare form is queued in the submission's ack,
like `/gad`: it takes its turn in bot/service/workers.py with everyone's slash commands, under the
same time limit and per-person limit (refused: the sentence next to the repository field, the
modal open). A form that must wait shows where it stands; its failures go to the person's DM.
Without workers it is computed in Bolt's lazy listener.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from datetime import date

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from ..config import Settings
from ..engine import query as q
from ..errors import GadError, PermissionDeniedError, QueryError, UnknownRepoError
from ..render import blocks as kit
from ..render import modals as ui
from . import posting
from .failures import answered_failures
from ..service.members import Members
from ..service.workers import BusyError, ReportAnswer, ReportJob, ReportPool, queued_words

log = logging.getLogger(__name__)

# The name search (block_suggestion) is answered in its ack, within Slack's 3 s: a person whose Slack facts are not
# cached is asked of Slack for this long at most (its retries on a 5xx or a rate limit take longer), then nothing is
# offered; the look-up goes on and its answer is cached for the next keystroke.
SUGGEST_WAIT_SECONDS = 1.5
_LOOKUPS = ThreadPoolExecutor(4, thread_name_prefix="gad-suggest")


class FormError(Exception):
    """A field the grammar (or a rule) refused: which block, and the sentence to show next to it."""

    def __init__(self, block: str, sentence: str):
        super().__init__(sentence)
        self.block, self.sentence = block, sentence


def _values(view: dict) -> dict[str, str | list[str] | None]:
    """The submitted fields, by block id: a string, a list of names, or None when left empty."""
    out: dict[str, str | list[str] | None] = {}
    for block_id, actions in ((view.get("state") or {}).get("values") or {}).items():
        for action in actions.values():
            kind = action.get("type")
            if kind == "multi_external_select":
                out[block_id] = [o.get("value", "") for o in action.get("selected_options") or []]
            elif kind in ("static_select", "external_select"):
                out[block_id] = (action.get("selected_option") or {}).get("value")
            elif kind == "datepicker":
                out[block_id] = action.get("selected_date")
            elif kind == "timepicker":
                out[block_id] = action.get("selected_time")
            elif kind == "conversations_select":
                out[block_id] = action.get("selected_conversation")
            else:
                out[block_id] = action.get("value")
    return out


def command_text(head: str, fields: list[tuple[str, str | None]], today: date):
    """Join `head` and each (block, token) in order, parsing after each: (text, parsed) or FormError."""
    text = head
    parsed = None
    for block, token in fields:
        if not token:
            continue
        text = f"{text} {token}".strip()
        try:
            parsed = q.parse_command(text, today)
        except QueryError as error:
            raise FormError(block, str(error)) from None
    return text, parsed


def _ref_token(value: str | None) -> str | None:
    if not value or not value.strip():
        return None
    value = value.strip()
    if len(value.split()) != 1:
        raise FormError(ui.REF, "One branch (e.g. `main`) or one range (e.g. `v1.0..v2.0`), without spaces.")
    return f"range:{value}" if ".." in value else f"branch:{value}"


class ModalsFace:
    def __init__(self, settings: Settings, engine, digests, today: Callable[[], date], *,
                 require_admin: Callable[[WebClient, str, str], None], user_tz: Callable[[WebClient, str], str | None],
                 members: Members, reports: ReportPool | None = None):
        self.settings, self.engine, self.digests, self.today = settings, engine, digests, today
        self.require_admin, self.user_tz = require_admin, user_tz
        self.members = members  # who may see what: every name offered and every answer posted passes it
        self.reports = reports  # serve's report workers; None: answers are computed here, in Bolt's threads

    def register(self, app) -> None:
        for action_id, view in ((kit.HOME_REPORT, ui.report_modal), (kit.HOME_COMPARE, ui.compare_modal),
                                (kit.HOME_SUBSCRIBE, ui.subscribe_modal)):
            app.action(action_id)(self._opener(view))
        app.action(kit.HOME_DIGESTS)(self.open_digests)
        app.options(ui.NAMES_ACTION)(self.name_options)
        app.view(ui.MODAL_REPORT)(ack=self.check_report, lazy=[self.answer_report])
        app.view(ui.MODAL_COMPARE)(ack=self.check_compare, lazy=[self.answer_compare])
        app.view(ui.MODAL_SUBSCRIBE)(ack=self.check_subscribe, lazy=[self.answer_subscribe])

    # -- opening ---------------------------------------------------------------------------------
    def _opener(self, build: Callable[[], dict]):
        def open_modal(ack, body, client: WebClient) -> None:
            ack()
            client.views_open(trigger_id=body["trigger_id"], view=build())
            try:  # what Slack says of the person, asked now: the name search, answered in acks, reads it cached
                self.members.viewer(body.get("user", {}).get("id", ""))
            except GadError:
                pass  # the search offers nothing until Slack can say; the answer says why
        return open_modal

    def open_digests(self, ack, body, client: WebClient) -> None:
        ack()
        user = body.get("user", {}).get("id", "")
        trigger = body["trigger_id"]  # used first: a trigger_id lasts 3 seconds
        lines: list[str]
        if self.digests is None:
            lines = ["Digests are not enabled on this gad-bot."]
        else:
            try:
                mine = self.members.channels_of(user, strict=True)
                from ..digests import subscriptions as subs

                lines = [ui.digest_line(s.channel_id, s.repos, s.schedule_words(), s.paused)
                         for s in subs.all_subscriptions(self.engine.index) if s.channel_id in mine]
            except GadError as error:
                lines = [f"{kit.escape_mrkdwn(str(error))} `/gad subscriptions` in a channel shows its digest."]
        client.views_open(trigger_id=trigger, view=ui.digests_modal(lines))

    def name_options(self, ack, payload) -> None:
        """The name search: only names the person may see (what Slack says of them is usually cached: the modal's
        opener asked it); none when Slack cannot say."""
        user = (payload.get("user") or {}).get("id", "")
        try:
            viewer = self.members.cached_viewer(user)
            if viewer is None:  # asked of Slack for at most SUGGEST_WAIT_SECONDS; kept for the next keystroke
                viewer = _LOOKUPS.submit(self.members.viewer, user).result(timeout=SUGGEST_WAIT_SECONDS)
            names = self.engine.known_names(viewer)
        except (GadError, FutureTimeout):  # Slack cannot say who asks, or not in time: nothing is offered
            names = []
        ack(**ui.name_options(names, str(payload.get("value") or "")))

    # -- checking (in the ack: errors next to their field) ------------------------------------------
    def _form(self, view: dict, kind: str):
        values = _values(view)
        names = values.get(ui.NAMES) or []
        if not names:
            raise FormError(ui.NAMES, "Choose at least one repository or project.")
        head = ("compare " if kind == "compare" else "") + " ".join(names)
        if kind == "compare" and len(names) < 2:
            raise FormError(ui.NAMES, "Choose at least two repositories or projects to compare.")
        fields: list[tuple[str, str | None]] = []
        since, until = values.get(ui.SINCE), values.get(ui.UNTIL)
        fields += [(ui.SINCE, f"since:{since}" if since else None), (ui.UNTIL, f"until:{until}" if until else None)]
        if kind == "report":
            by = values.get(ui.BY)
            fields += [(ui.BY, f"by:{by}" if by and by != "none" else None), (ui.REF, _ref_token(values.get(ui.REF)))]
        text, parsed = command_text("", [(ui.NAMES, head), *fields], self.today())
        return text, parsed, values.get(ui.WHERE)

    def _seen_by(self, viewer, names) -> None:
        """Every name must be one the person may see, checked before any channel: a name they may not see gets the
        words of a name never tracked, next to the names (the channel's rule would say "no longer open to you",
        which tells a hidden repository from an untracked one)."""
        try:
            self.engine.resolve(names, viewer)
        except GadError as error:
            raise FormError(ui.NAMES, str(error)) from None

    def _may_post_here(self, user: str, where: str | None, names) -> None:
        """A form's answer goes to a channel only when the person is in it and the channel may see all it names
        (bot/faces/posting.py); else one sentence next to the channel field."""
        if not where:
            return
        if where not in self.members.channels_of(user):
            raise FormError(ui.WHERE, "You are not in that channel (or gad-bot cannot see it): choose a channel you "
                                      "are in, or leave it empty to get the answer in your direct messages.")
        why = posting.refusal(self.engine, self.members, where, names, person=self.members.viewer(user))
        if why is not None:
            raise FormError(ui.WHERE, why)

    @staticmethod
    def _ack(ack, check: Callable[[], object]) -> None:
        """Close the modal, or keep it open with the sentence next to the field it is about."""
        try:
            check()
        except FormError as error:
            ack(response_action="errors", errors={error.block: error.sentence[:500]})
            return
        ack()

    def check_report(self, ack, body, client: WebClient) -> None:
        self._check_answer(ack, body, client, "report")

    def check_compare(self, ack, body, client: WebClient) -> None:
        self._check_answer(ack, body, client, "compare")

    def _checked(self, body: dict, kind: str):
        """The form, the channel rule and the person's viewer (for a channel: the channel's too)."""
        user = body.get("user", {}).get("id", "")
        text, parsed, where = self._form(body["view"], kind)
        try:
            viewer = self.members.viewer(user)
        except GadError as error:
            raise FormError(ui.NAMES, str(error)) from None
        names = [i.name for i in parsed.items] if kind == "compare" else list(parsed.query.repos)
        self._seen_by(viewer, names)
        self._may_post_here(user, where, names)
        if where:
            viewer = viewer.posting_in(self.members.channel_viewer(where))
        return text, parsed, where, viewer

    def _check_answer(self, ack, body: dict, client: WebClient, kind: str) -> None:
        """Check the form; with workers also queue it here, as `/gad` does, and say where it stands."""
        if self.reports is None:
            self._ack(ack, lambda: self._checked(body, kind))
            return
        try:
            text, parsed, where, viewer = self._checked(body, kind)
        except FormError as error:
            ack(response_action="errors", errors={error.block: error.sentence[:500]})
            return
        user = body.get("user", {}).get("id", "")
        compare = parsed if kind == "compare" else None
        job = ReportJob(parsed.query, text, user, self.today(), compare=compare, public=True, channel=where,
                        shared_by=user if where else None, viewer=viewer)
        try:
            ahead = self.reports.submit(job, lambda answer: self._deliver(answer, client, user, where))
        except BusyError as error:  # the modal stays open with the sentence: nothing was queued
            log.info("a modal's %s refused: the queue is full for this user or for everyone", kind)
            ack(response_action="errors", errors={ui.NAMES: str(error)[:500]})
            return
        waiting = queued_words(ahead, self.reports.workers)
        if waiting is None:
            ack()
            return
        ack(response_action="update", view=ui.queued_modal(waiting, where))

    def _deliver(self, answer: ReportAnswer, client: WebClient, user: str, where: str | None) -> None:
        """A worker's answer where the form said; a failure (its sentence names the channel) to the DM."""
        self._post(client, user, None if answer.failed else where, answer.text, answer.blocks)

    def _subscribe_form(self, view: dict):
        values = _values(view)
        names = values.get(ui.NAMES) or []
        if not names:
            raise FormError(ui.NAMES, "Choose at least one repository or project.")
        fields = [(ui.DAY, f"day:{values[ui.DAY]}" if values.get(ui.DAY) else None),
                  (ui.TIME, f"time:{values[ui.TIME]}" if values.get(ui.TIME) else None),
                  (ui.TZ, f"tz:{values[ui.TZ].strip()}" if (values.get(ui.TZ) or "").strip() else None)]
        text, parsed = command_text("", [(ui.NAMES, "subscribe " + " ".join(names)), *fields], self.today())
        if not values.get(ui.CHANNEL):
            raise FormError(ui.CHANNEL, "Choose the channel that gets the digest.")
        return text, parsed, values[ui.CHANNEL]

    def _subscription(self, body: dict, client: WebClient):
        """The checked form (FormError otherwise), the admin rule (GAD_SUBSCRIBERS) included."""
        form = self._subscribe_form(body["view"])
        if self.digests is None:
            raise FormError(ui.CHANNEL, "Digests are not enabled on this gad-bot.")
        if self.settings.subscribers == "admins":
            try:
                self.require_admin(client, body.get("user", {}).get("id", ""), "change a channel's digest")
            except PermissionDeniedError as error:
                raise FormError(ui.CHANNEL, str(error)) from None
        channel, user = form[2], body.get("user", {}).get("id", "")
        try:
            person = self.members.viewer(user)
        except GadError as error:
            raise FormError(ui.NAMES, str(error)) from None
        self._seen_by(person, form[1].repos)
        if channel not in self.members.channels_of(user):
            raise FormError(ui.CHANNEL, "You are not in that channel (or gad-bot cannot see it): choose a channel "
                                        "you are in.")
        if not self.members.bot_can_post(channel):
            raise FormError(ui.CHANNEL, "gad-bot cannot post in that channel (a private channel it is not in); "
                                        "`/invite @gad-bot` there first.")
        why = posting.refusal(self.engine, self.members, channel, form[1].repos, person=person)
        if why is not None:
            raise FormError(ui.CHANNEL, why)
        return form

    def check_subscribe(self, ack, body, client: WebClient) -> None:
        self._ack(ack, lambda: self._subscription(body, client))

    # -- answering (after the modal closed) ----------------------------------------------------------
    def _post(self, client: WebClient, user: str, where: str | None, text: str, blocks: list[dict]) -> None:
        """To the chosen channel, else to the person's DM; a channel that refuses: the DM, saying why."""
        if where:
            try:
                client.chat_postMessage(channel=where, text=text, blocks=blocks, unfurl_links=False,
                                        unfurl_media=False)
                return
            except SlackApiError as error:
                why = str(error.response.get("error"))
                log.info("a modal's answer to %s was refused: %s", where, why)
                blocks = [*blocks, kit.context([f"I could not post this in <#{where}> (Slack said "
                                                f"`{kit.escape_mrkdwn(why)}`; `/invite @gad-bot` there first)."])]
        client.chat_postMessage(channel=user, text=text, blocks=blocks, unfurl_links=False, unfurl_media=False)

    def _answer(self, body: dict, client: WebClient, kind: str) -> None:
        if self.reports is not None:
            return  # queued for a worker in the ack
        user = body.get("user", {}).get("id", "")
        with answered_failures(lambda text, blocks: self._post(client, user, None, text, blocks), "answering a modal"):
            try:
                text, parsed, where, viewer = self._checked(body, kind)
            except FormError:
                return  # shown next to its field by the ack; the modal is still open
            asker = user if where else None  # a channel reads who asked, as a shared answer says
            if kind == "compare":
                from ..render.compare import compare_blocks

                answer = compare_blocks(self.engine.compare(parsed, self.today(), viewer), text, public=True,
                                        shared_by=asker)
            else:
                try:
                    report = self.engine.report(parsed.query, self.today(), viewer)
                except UnknownRepoError as error:
                    raise q.explain_unknown(error, text) from None
                answer = kit.report_blocks(report, text, public=True, shared_by=asker)
            self._post(client, user, where, *answer)

    def answer_report(self, body, client) -> None:
        self._answer(body, client, "report")

    def answer_compare(self, body, client) -> None:
        self._answer(body, client, "compare")

    def answer_subscribe(self, body, client) -> None:
        user = body.get("user", {}).get("id", "")
        with answered_failures(lambda text, blocks: self._post(client, user, None, text, blocks),
                               "subscribing from a modal"):
            try:
                _, parsed, channel = self._subscription(body, client)
            except FormError:
                return  # shown next to its field by the ack; the modal is still open
            reply = self.digests.handle(parsed, channel_id=channel, team_id=(body.get("team") or {}).get("id"),
                                        user_id=user, user_tz=self.user_tz(client, user),
                                        viewer=self.members.viewer(user),
                                        channel_viewer=lambda: self.members.channel_viewer(channel),
                                        teams=self.members.teams)
            self._post(client, user, channel if reply.public else None, reply.text, reply.blocks)
