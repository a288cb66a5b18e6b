"""Identities: raw (name, e-mail) `authors`, `people` (lower-cased, maybe mailmapped e-mails) and, per repository,
`repo_authors` (author -> person with and without the mailmap, bot and automated flags)."""

from __future__ import annotations

from collections.abc import Iterable

from .base import IndexFile, _iso, utcnow


class People(IndexFile):
    def note_authors(self, repo_id: int, author_ids: Iterable[int]) -> None:
        """Placeholder identity rows for authors new to the repository; the identity refresh fills them in."""
        self.conn.executemany("INSERT OR IGNORE INTO repo_authors VALUES (?, ?, 0, 0, 0, 0, 0, 0)",
                                 ((repo_id, int(a)) for a in author_ids))

    def has_placeholder_authors(self, repo_id: int) -> bool:
        """Whether some identity of the repository still waits for the identity refresh (person 0: none yet)."""
        return self.conn.execute("SELECT 1 FROM repo_authors WHERE repo_id = ? AND person_mm = 0 LIMIT 1",
                                 (repo_id,)).fetchone() is not None

    def author_ids_for(self, identities: list[tuple[str, str]], cache: dict[tuple[str, str], int]) -> list[int]:
        """Ids of raw (name, e-mail) identities, adding the new ones (caller holds the transaction)."""
        missing = [i for i in dict.fromkeys(identities) if i not in cache]
        if missing:
            self.conn.executemany("INSERT OR IGNORE INTO authors (name, email) VALUES (?, ?)", missing)
            for start in range(0, len(missing), 400):
                part = missing[start:start + 400]
                clause = " OR ".join(["(name = ? AND email = ?)"] * len(part))
                for author_id, name, email in self.conn.execute(
                        f"SELECT id, name, email FROM authors WHERE {clause}", [v for pair in part for v in pair]):
                    cache[(name, email)] = author_id
        return [cache[i] for i in identities]

    def author_ids(self) -> dict[tuple[str, str], int]:
        return {(n, e): i for i, n, e in self.conn.execute("SELECT id, name, email FROM authors")}

    # -- identities ----------------------------------------------------------
    def repo_author_identities(self, repo_id: int) -> list[tuple[int, str, str]]:
        return [tuple(r) for r in self.conn.execute(
            "SELECT a.id, a.name, a.email FROM repo_authors ra JOIN authors a ON a.id = ra.author_id WHERE ra.repo_id = ?",
            (repo_id,))]

    def person_ids(self, emails: Iterable[str]) -> dict[str, int]:
        emails = set(emails)
        self.conn.executemany("INSERT OR IGNORE INTO people (email) VALUES (?)", ((e,) for e in emails))
        found: dict[str, int] = {}
        ordered = sorted(emails)
        for start in range(0, len(ordered), 500):
            part = ordered[start:start + 500]
            marks = ",".join("?" * len(part))
            found.update({e: i for i, e in self.conn.execute(f"SELECT id, email FROM people WHERE email IN ({marks})", part)})
        return found

    def set_repo_authors(self, repo_id: int, rows: Iterable[tuple[int, int, int, bool, bool, bool, bool]]) -> None:
        """Replace (author, person_mm, person_raw, bot_mm, bot_raw, automated_mm, automated_raw) for a repository."""
        self.conn.executemany(
            "INSERT INTO repo_authors VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(repo_id, author_id) DO UPDATE SET "
            "person_mm = excluded.person_mm, person_raw = excluded.person_raw, bot_mm = excluded.bot_mm, "
            "bot_raw = excluded.bot_raw, automated_mm = excluded.automated_mm, automated_raw = excluded.automated_raw",
            ((repo_id, a, pm, pr, int(bm), int(br), int(am), int(ar)) for a, pm, pr, bm, br, am, ar in rows))

    def repo_author_map(self, repo_id: int) -> list[tuple[int, int, int, int, int, int, int]]:
        """(author, person_mm, person_raw, bot_mm, bot_raw, automated_mm, automated_raw) of a repository."""
        return [tuple(r) for r in self.conn.execute(
            "SELECT author_id, person_mm, person_raw, bot_mm, bot_raw, automated_mm, automated_raw FROM repo_authors "
            "WHERE repo_id = ?", (repo_id,))]

    def people_with_emails(self, emails: Iterable[str]) -> dict[str, int]:
        """The ids of the people with these e-mails (person keys), of those the index knows; writes nothing."""
        ordered = sorted(set(emails))
        found: dict[str, int] = {}
        for start in range(0, len(ordered), 500):
            part = ordered[start:start + 500]
            marks = ",".join("?" * len(part))
            found.update({e: i for i, e in self.conn.execute(f"SELECT id, email FROM people WHERE email IN ({marks})",
                                                               part)})
        return found

    def people_matching(self, person_ids: Iterable[int]) -> dict[int, str]:
        ids = list(set(int(i) for i in person_ids))
        found: dict[int, str] = {}
        for start in range(0, len(ids), 500):
            chunk = ids[start:start + 500]
            marks = ",".join("?" * len(chunk))
            found.update(self.conn.execute(f"SELECT id, email FROM people WHERE id IN ({marks})", chunk).fetchall())
        return found

    def people_between(self, first: int, last: int) -> list[tuple[int, str]]:
        """(id, e-mail) of the people whose id is in first..last (both included)."""
        return self.conn.execute("SELECT id, email FROM people WHERE id BETWEEN ? AND ?", (first, last)).fetchall()

    # -- addresses an admin added for a Slack member (migration 17) --------------------------------------
    def slack_aliases(self, user_id: str) -> list[str]:
        return [r[0] for r in self.conn.execute("SELECT email FROM slack_aliases WHERE user_id = ? ORDER BY email",
                                                (user_id,))]

    def set_slack_aliases(self, user_id: str, emails: Iterable[str], *, remove: bool = False) -> None:
        with self.transaction() as db:
            for email in emails:
                if remove:
                    db.execute("DELETE FROM slack_aliases WHERE user_id = ? AND email = ?", (user_id, email))
                else:
                    db.execute("INSERT OR IGNORE INTO slack_aliases VALUES (?, ?, ?)", (user_id, email, _iso(utcnow())))
