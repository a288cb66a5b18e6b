"""The Share button: post for everyone exactly the private answer the person saw, once.

Each private answer is kept in the index (bot/store/answers.py) under an id its button carries.
A click claims the kept answer in one UPDATE, so a second click, from this process or another,
finds it taken and posts nothing. The private message is replaced first by a copy without the
button, then the same blocks go to the channel, naming who shared them, and saying so when the
repositories they counted have been indexed again since (the figures may have moved). A `format:csv`
answer is kept with its CSV, and sharing it attaches that file in the channel first: the shared answer
then says the file is there, or, when Slack refused it, says so once instead.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from datetime import datetime

from ..errors import PermissionDeniedError, QueryError
from ..render import blocks as kit
from ..render.words import as_of_words
from ..store import answers
from ..store.index import Index

log = logging.getLogger(__name__)


def new_share_id() -> str:
    return answers.new_id()


def keep_answer(index: Index, share_id: str, *, user: str, query_text: str, text: str, blocks: list[dict],
                data_as_of: datetime | None, repos: Iterable[str], csv: tuple[str, str] | None = None) -> None:
    """Keep a private answer (before it is sent, so no click can come before its row); `csv` is the
    (file name, text) of the CSV that came with it."""
    csv_name, csv_text = csv if csv is not None else (None, None)
    answers.keep(index, answers.KeptAnswer(id=share_id, user_id=user, query=query_text, text=text, blocks=blocks,
                                           data_as_of=data_as_of, generations=answers.generations(index, repos),
                                           csv_name=csv_name, csv=csv_text))


# Attaches a CSV (file name, text, the query it answers) where the Share button was clicked and returns
# the sentence the shared answer carries about it: that it is attached, or why it is not.
AttachFn = Callable[[str, str, str], str]


def share(index: Index, value: str, user: str, responder, attach: AttachFn | None = None,
          refusal: Callable[[answers.KeptAnswer], str | None] | None = None) -> None:
    """Handle a click on a Share button whose value is `value`; `responder` answers on its response_url,
    `attach` posts a kept answer's CSV in the channel (without it, the file is not shared); `refusal` says why
    the answer may not be posted there (bot/faces/posting.py): then nothing is claimed, nothing posted."""
    waiting = answers.peek(index, value, user)
    if waiting is not None and refusal is not None:
        why = refusal(waiting)
        if why is not None:
            raise PermissionDeniedError(why)
    kept = answers.claim(index, value, user)
    if kept is None:
        if answers.known(index, value):
            log.info("ignored a second click on a Share button already used")
            return
        raise QueryError(f"That Share button has expired (answers are kept {answers.KEEP_DAYS} days); "
                         "ask again with `/gad`, then share the new answer.")
    responder.final(kept.text, kit.shared_copy(kept.blocks, ["You shared this in the channel."]), replace=True)
    notes = [f"Shared by {kit.mention(user)}"]
    if kept.newer_data(index):
        when = as_of_words(kept.data_as_of)
        notes.append(f"Newer data has been indexed since this answer{f' ({when})' if when else ''}; "
                     f"{kit.code('/gad ' + kept.query, 200)} gives today's figures.")
    if kept.csv is not None and attach is not None:  # the file first, so the answer can say where it is
        notes.append(attach(kept.csv_name or "gad-report.csv", kept.csv, kept.query))
    responder.final(kept.text, kit.shared_copy(kept.blocks, notes), public=True)
