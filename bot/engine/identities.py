"""People's own addresses as each repository counts them: through its mailmap, lower-cased (METRIC.md rules 2, 8).

`/gad me` and teams start from what Slack knows of a person, their profile's e-mail (and any address an
admin added), and need the `person` keys the index counts: the same address after the repository's
`.mailmap`. Two ways lead there, and both are taken: the identities the repository's commits already use
(`repo_authors`: a mailmap line keyed by name and e-mail maps those), and the mailmap itself, for an
address that never committed as written but that the mailmap maps (e.g. `Ana <ana@corp> <ana@home>`).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

from ..errors import MirrorError
from ..metric import person_key
from ..store.index import Index, RepoRow


class Identities:
    """Addresses -> the people (mailmapped, lower-cased e-mails) they are in each repository; mailmaps kept per blob."""

    def __init__(self, index: Index):
        self.index = index
        self._mailmaps: dict[tuple[int, str | None], object] = {}  # (repository id, mailmap blob) -> Mailmap
        self._lock = threading.Lock()

    def people(self, repos: Iterable[RepoRow], emails: Iterable[str]) -> dict[str, set[str]]:
        """Each address (lower-cased) -> the person keys it is counted under in any of `repos`."""
        wanted = sorted({e.strip().lower() for e in emails if e and e.strip()})
        found: dict[str, set[str]] = {e: set() for e in wanted}
        if not wanted:
            return found
        repos = list(repos)
        for repo in repos:
            mailmap = self._mailmap(repo)
            for email in wanted:
                found[email].add(person_key(mailmap.resolve("", email)[1]) if mailmap else person_key(email))
        for start in range(0, len(wanted), 400):  # the identities already used, mapped as the index maps them
            part = wanted[start:start + 400]
            marks, ids = ",".join("?" * len(part)), ",".join("?" * len(repos))
            for raw, person in self.index.execute(
                    f"SELECT lower(a.email), p.email FROM repo_authors ra JOIN authors a ON a.id = ra.author_id "
                    f"JOIN people p ON p.id = ra.person_mm WHERE ra.repo_id IN ({ids}) AND lower(a.email) IN ({marks})",
                    [r.id for r in repos] + part):
                found.setdefault(raw, set()).add(person)
        return found

    def _mailmap(self, repo: RepoRow):
        """The repository's mailmap as its last index read it (None: no .mailmap, or the mirror cannot be read)."""
        if not repo.mailmap_oid:
            return None
        key = (repo.id, repo.mailmap_oid)
        with self._lock:
            if key in self._mailmaps:
                return self._mailmaps[key]
        from ..store.mirrors.mailmap import Mailmap  # pygit2, only when someone asks about themselves or a team
        from ..store.mirrors.mirror import Mirror

        try:
            mailmap = Mailmap(Mirror(repo.mirror_path).mailmap_blob()[1])
        except (MirrorError, OSError):
            mailmap = None
        with self._lock:
            self._mailmaps[key] = mailmap
        return mailmap
