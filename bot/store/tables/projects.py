"""`projects` and `project_repos`: several repositories counted as one."""

from __future__ import annotations

from .base import IndexFile, _iso, utcnow


class Projects(IndexFile):
    # -- projects ------------------------------------------------------------
    def set_project(self, name: str, repo_ids: list[int], audience: str = "everyone") -> None:
        """Create a project (its audience: `audience`), or add repositories to one (its audience stays)."""
        with self.transaction() as db:
            db.execute("INSERT OR IGNORE INTO projects (name, created_at, audience) VALUES (?, ?, ?)",
                       (name, _iso(utcnow()), audience))
            project_id = db.execute("SELECT id FROM projects WHERE name = ?", (name,)).fetchone()[0]
            db.conn.executemany("INSERT OR IGNORE INTO project_repos VALUES (?, ?)", ((project_id, r) for r in repo_ids))

    def project_repo_rows(self, name: str) -> tuple[list[str], list[tuple]] | None:
        """A project's `repos` rows, by id, as column names and each row's values (None: no such project).
        Values, not RepoRows: the engine builds one (repo_row) only for a row that changed since it last read it."""
        if self.conn.execute("SELECT 1 FROM projects WHERE name = ?", (name,)).fetchone() is None:
            return None
        cursor = self.conn.execute("SELECT r.* FROM projects p JOIN project_repos pr ON pr.project_id = p.id "
                                   "JOIN repos r ON r.id = pr.repo_id WHERE p.name = ? ORDER BY r.id", (name,))
        return [d[0] for d in cursor.description], cursor.fetchall()

    def remove_project(self, name: str) -> bool:
        return self.conn.execute("DELETE FROM projects WHERE name = ?", (name,)).rowcount > 0

    def projects(self) -> dict[str, list[str]]:
        found: dict[str, list[str]] = {}
        for project, repo in self.conn.execute(
                "SELECT p.name, r.name FROM projects p LEFT JOIN project_repos pr ON pr.project_id = p.id "
                "LEFT JOIN repos r ON r.id = pr.repo_id ORDER BY p.name, r.name"):
            found.setdefault(project, [])
            if repo:
                found[project].append(repo)
        return found

    def project_audience(self, name: str) -> str | None:
        """A project's audience as stored (None: no such project)."""
        row = self.conn.execute("SELECT audience FROM projects WHERE name = ?", (name,)).fetchone()
        return row[0] if row else None

    def project_audiences(self) -> dict[str, str]:
        return dict(self.conn.execute("SELECT name, audience FROM projects"))

    def set_project_audience(self, name: str, audience: str) -> None:
        self.conn.execute("UPDATE projects SET audience = ? WHERE name = ?", (audience, name))
