"""The Workflow Builder step "Effort of a repository" (a custom step: Bolt's `app.function`).

Inputs: `repository` (a tracked repository or project name, or a link to a tracked repository)
and `period` (since:/until: tokens of the one grammar, e.g. `since:2026-07 until:2026-09`;
empty: all history). Outputs: 2GAD person-days, person-months, developers, commits and a
one-line summary, so a team can build "every first Monday, post the quarter's effort to
#leads" without code. The inputs become one command text for bot/engine/query.py; wrong inputs
fail the step with one sentence (`fail(error)`), which Workflow Builder shows to its owner.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from datetime import date

from ..engine import query as q
from ..engine.links import tracked_link
from ..errors import GadError, QueryError, UnknownRepoError
from ..metric import DAYS_PER_PERSON_MONTH
from ..render.card import effort_summary
from .slacktext import decode

log = logging.getLogger(__name__)

STEP_CALLBACK_ID = "effort_of_a_repository"
PERIOD_TOKENS = ("since:", "until:")
MAX_INPUT_CHARS = 500


class WorkflowStep:
    def __init__(self, engine, today: Callable[[], date]):
        self.engine, self.today = engine, today

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
        target = tracked_link(self.engine, repository) if "://" in repository else None
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

    def outputs(self, inputs: dict) -> dict:
        text = self.command_text(inputs)
        parsed = q.parse_command(text, self.today())
        if not isinstance(parsed, q.ShowReport):  # e.g. a repository called `help`: not a report
            raise QueryError(f"`{text.split()[0][:100]}` is not a repository or project gad-bot tracks.")
        try:
            report = self.engine.report(parsed.query, self.today())
        except UnknownRepoError as error:
            raise q.explain_unknown(error, text) from None
        totals = report.totals
        return {"two_gad_person_days": totals.two_gad,
                "person_months": round(totals.two_gad / DAYS_PER_PERSON_MONTH, 2),
                "developers": totals.developers, "commits": totals.commits,
                "summary": effort_summary(parsed.query.repos[0], report)}

    def run(self, inputs: dict, complete, fail) -> None:
        try:
            complete(outputs=self.outputs(inputs or {}))
        except GadError as error:
            log.info("workflow step failed on its inputs (%s)", type(error).__name__)
            fail(error=str(error))
        except Exception:
            reference = uuid.uuid4().hex[:8]
            log.exception("internal error in the workflow step (reference %s)", reference)
            fail(error=f"Something went wrong on gad-bot's side (reference {reference}); the operator can find the "
                       "details in the logs.")
