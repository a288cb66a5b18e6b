"""Private Slack answers kept as the person saw them, for their Share button.

Share must post exactly what the person read, not a second run of the query (a later day moves
`since:30d`, a sync adds commits, and a button's value holds only 2,000 characters). The face keeps
each private answer's Block Kit here under a random id, the button carries only that id, and a
click claims the row once: the claim is one UPDATE, so a second click from any process finds it
taken. Rows are forgotten after KEEP_DAYS (a Share button is no use after its ephemeral message
is gone).
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from .index import Index, _iso, parse_time, utcnow

KEEP_DAYS = 7


@dataclass(frozen=True)
class KeptAnswer:
    """One private answer: who asked, what they typed, the blocks they saw (and the CSV file that came
    with them), how fresh the data was."""

    id: str
    user_id: str
    query: str
    text: str
    blocks: list[dict] = field(hash=False)
    data_as_of: datetime | None
    generations: dict[str, int] = field(hash=False)  # repository name -> generation it was answered from
    created_at: datetime | None = None
    csv_name: str | None = None  # the file name of the CSV that came with the answer (`format:csv`)
    csv: str | None = field(default=None, hash=False, repr=False)  # its text

    def newer_data(self, index: Index) -> bool:
        """Whether any repository this answer counted was indexed again (or removed) since."""
        return generations(index, self.generations) != self.generations


def new_id() -> str:
    """A fresh answer id: unguessable, so a crafted button value cannot claim someone else's answer."""
    return secrets.token_urlsafe(16)


def generations(index: Index, names: Iterable[str]) -> dict[str, int]:
    """The current generation of each tracked repository among `names` (untracked ones are left out)."""
    wanted = sorted(set(names))
    if not wanted:
        return {}
    marks = ",".join("?" * len(wanted))
    return dict(index.execute(f"SELECT name, generation FROM repos WHERE name IN ({marks})", wanted).fetchall())


def keep(index: Index, answer: KeptAnswer, now: datetime | None = None) -> None:
    """Store the answer (and forget those older than KEEP_DAYS) in one transaction."""
    now = now or utcnow()
    with index.transaction() as db:
        db.execute("DELETE FROM kept_answers WHERE created_at < ?", (_iso(now - timedelta(days=KEEP_DAYS)),))
        db.execute("INSERT INTO kept_answers (id, user_id, query, text, blocks, data_as_of, generations, created_at, "
                   "csv_name, csv) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                   (answer.id, answer.user_id, answer.query, answer.text, json.dumps(answer.blocks),
                    _iso(answer.data_as_of), json.dumps(answer.generations), _iso(now), answer.csv_name, answer.csv))


def peek(index: Index, answer_id: str, user_id: str) -> KeptAnswer | None:
    """The answer a Share click would claim (asked by `user_id`, not shared yet), without claiming it."""
    row = index.execute("SELECT id, user_id, query, text, blocks, data_as_of, generations, created_at, csv_name, csv "
                        "FROM kept_answers WHERE id = ? AND user_id = ? AND shared_at IS NULL",
                        (answer_id, user_id)).fetchone()
    return _answer(row) if row else None


def _answer(row) -> KeptAnswer:
    return KeptAnswer(id=row[0], user_id=row[1], query=row[2], text=row[3], blocks=json.loads(row[4]),
                      data_as_of=parse_time(row[5]), generations=json.loads(row[6]), created_at=parse_time(row[7]),
                      csv_name=row[8], csv=row[9])


def claim(index: Index, answer_id: str, user_id: str, now: datetime | None = None) -> KeptAnswer | None:
    """The answer, if this is the first Share click on it by the person who asked; None otherwise."""
    with index.transaction() as db:
        taken = db.execute("UPDATE kept_answers SET shared_at = ?, shared_by = ? "
                           "WHERE id = ? AND user_id = ? AND shared_at IS NULL",
                           (_iso(now or utcnow()), user_id, answer_id, user_id)).rowcount
        if taken != 1:
            return None
        row = db.execute("SELECT id, user_id, query, text, blocks, data_as_of, generations, created_at, csv_name, csv "
                         "FROM kept_answers WHERE id = ?", (answer_id,)).fetchone()
    return _answer(row)


def known(index: Index, answer_id: str) -> bool:
    """Whether an answer is kept under this id (shared or not)."""
    return index.execute("SELECT 1 FROM kept_answers WHERE id = ?", (answer_id,)).fetchone() is not None
