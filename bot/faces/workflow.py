"""The Workflow Builder step "Effort of a repository" (a custom step: Bolt's `app.function`).

Inputs: `repository` (a tracked repository or project name, or a link to a tracked repository)
and `period` (since:/until: tokens of the one grammar, e.g. `since:2026-07 until:2026-09`;
empty: all history). Outputs: 2GAD person-days, person-months, developers, commits and a
one-line summary, so a team can build "every first Monday, post the quarter's effort to
#leads" without code. The inputs become one command text for bot/engine/query.py; wrong inputs
fail the step with one sentence (`fail(error)`), which Workflow Builder shows to its owner.

Under `serve` (with report workers) the report is computed in bot/service/workers.py, in turn with
people's questions and under the same time limit; every run of the step is one party there
(WORKFLOW_PARTY), so workflows together never take more than one person's share of the workers.
The step completes from the worker's answer; without workers it is computed here.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from datetime import date

from ..engine.audiences import Viewer
from ..engine import query as q
from ..engine.links import tracked_link
from ..errors import GadError, QueryError, UnknownRepoError, for_member
from ..metric import DAYS_PER_PERSON_MONTH
from ..render.card import effort_summary
from .slacktext import decode
from ..service.workers import ReportAnswer, ReportJob, ReportPool

log = logging.getLogger(__name__)

STEP_CALLBACK_ID = "effort_of_a_repository"
PERIOD_TOKENS = ("since:", "until:")
MAX_INPUT_CHARS = 500
WORKFLOW_PARTY = "workflow-steps"  # whose turn a step's report takes in the workers (no Slack id looks like it)
# A step's outputs go wherever its workflow sends them, which gad-bot cannot know: only what everyone may see.
WORKFLOW_VIEWER = Viewer(user=WORKFLOW_PARTY, member=True)


def internal_error_sentence(reference: str) -> str:
    return (f"Something went wrong on gad-bot's side (reference {reference}); the operator can find the "
            "details in the logs.")


def operator_detail_sentence(reference: str) -> str:
    """What a step fails with when its error names the server's insides (bot.errors.for_member): the workflow's
    owner is whoever built the workflow, so they read what a member reads, the detail logged under `reference`."""
    return ("Something on the gad-bot server needs the operator's attention before this step can run; tell an "
            f"admin the reference {reference}.")


def _failure_sentence(error: GadError) -> str:
    sentence, reference = for_member(error)
    return operator_detail_sentence(reference) if reference else sentence


class WorkflowStep:
    def __init__(self, engine, today: Callable[[], date], reports: ReportPool | None = None):
        self.engine, self.today = engine, today
        self.reports = reports  # serve's report workers; None: the step's report is computed here

    def register(self, app) -> None:
        app.function(STEP_CALLBACK_ID)(self.run)

    def command_text(self, inputs: dict) -> str:
        """The step's inputs as one `/gad` text, or QueryError with the sentence the step fails with."""
        raw_repo = inputs.get("repository")
        raw_period = inputs.get("period") or ""
        if not isinstance(raw_repo, str) or not raw_repo.strip():
            raise QueryError("The step needs a repository or project: the name of one gad-bot tracks "
                             "(`/gad repos` lists them), e.g. `web`.")
        if not isinstance(raw_period, str) or len(raw_repo) > MAX_INPUT_CHARS or len(raw_period) > MAX_INPUT_CHARS:
            raise QueryError(f"The step's inputs are too long (at most {MAX_INPUT_CHARS} characters each).")
        repository = decode(raw_repo).strip()
        target = tracked_link(self.engine, repository, WORKFLOW_VIEWER) if "://" in repository else None
        name = target.name if target else repository
        if len(name.split()) != 1:
            raise QueryError(f"`{name[:100]}` is not one repository or project; put one name in Repository "
                             "(e.g. `web`) and the dates in Period.")
        tokens = decode(raw_period).split()
        wrong = [t for t in tokens if not t.startswith(PERIOD_TOKENS)]
        if wrong:
            raise QueryError(f"`{wrong[0][:100]}` is not a period; Period takes since: and until:, e.g. "
                             "`since:2026-07 until:2026-09` or `since:12w` (empty: all history).")
        return " ".join([name, *tokens])

    def parsed(self, inputs: dict) -> tuple[str, q.ShowReport]:
        """The step's inputs as a command text and its report, or QueryError with the step's sentence."""
        text = self.command_text(inputs)
        parsed = q.parse_command(text, self.today())
        if not isinstance(parsed, q.ShowReport):  # e.g. a repository called `help`: not a report
            raise QueryError(f"`{text.split()[0][:100]}` is not a repository or project gad-bot tracks.")
        return text, parsed

    @staticmethod
    def outputs_of(parsed: q.ShowReport, report) -> dict:
        totals = report.totals
        return {"two_gad_person_days": totals.two_gad,
                "person_months": round(totals.two_gad / DAYS_PER_PERSON_MONTH, 2),
                "developers": totals.developers, "commits": totals.commits,
                "summary": effort_summary(parsed.query.repos[0], report)}

    def outputs(self, inputs: dict) -> dict:
        text, parsed = self.parsed(inputs)
        try:
            report = self.engine.report(parsed.query, self.today(), WORKFLOW_VIEWER)
        except UnknownRepoError as error:
            raise q.explain_unknown(error, text) from None
        return self.outputs_of(parsed, report)

    def run(self, inputs: dict, complete, fail) -> None:
        try:
            if self.reports is None:
                complete(outputs=self.outputs(inputs or {}))
                return
            text, parsed = self.parsed(inputs or {})
            job = ReportJob(parsed.query, text, WORKFLOW_PARTY, self.today(), keep_report=True,
                            asker="gad-bot's workflow steps", viewer=WORKFLOW_VIEWER)
            self.reports.submit(job, lambda answer: self.finish(answer, parsed, complete, fail))
        except GadError as error:  # BusyError included: the sentence says why and when to run it again
            log.info("workflow step failed on its inputs (%s)", type(error).__name__)
            fail(error=_failure_sentence(error))
        except Exception:
            reference = uuid.uuid4().hex[:8]
            log.exception("internal error in the workflow step (reference %s)", reference)
            fail(error=internal_error_sentence(reference))

    def finish(self, answer: ReportAnswer, parsed: q.ShowReport, complete, fail) -> None:
        """Complete the step from a worker's answer, with the sentences it would have failed with here."""
        if not answer.failed and answer.report is not None:
            complete(outputs=self.outputs_of(parsed, answer.report))
            return
        log.info("workflow step failed in its report worker")
        if answer.detail is not None:  # a GadError naming the server's insides, logged in the worker under the reference
            fail(error=operator_detail_sentence(answer.reference or "?"))
        elif answer.reference is not None:  # an internal error, logged in the worker under this reference
            fail(error=internal_error_sentence(answer.reference))
        else:
            fail(error=answer.sentence or answer.text)
