"""The names people type, as tracked repositories: repositories, projects (several repositories as one), sources."""

from __future__ import annotations

import threading
from collections.abc import Iterable

from ..errors import GadError, QueryError, UnknownRepoError, command
from ..store.index import Index, RepoRow


class Catalog:
    """Repositories and projects by name; a project's rows kept so that only changed ones are built again."""

    def __init__(self, index: Index):
        self.index = index
        self._repo_rows: dict[int, tuple[tuple, RepoRow]] = {}  # repository id -> (its row as read, RepoRow)
        self._lock = threading.Lock()

    def forget(self, repo_id: int) -> None:
        """Drop what is kept of a repository (it was untracked)."""
        with self._lock:
            self._repo_rows.pop(repo_id, None)

    # -- repositories --------------------------------------------------------
    def repos(self) -> list[RepoRow]:
        return self.index.repos()

    def repo(self, name: str) -> RepoRow:
        found = self.index.repo(name)
        if found is None:
            raise UnknownRepoError(name, self.known_names())
        return found

    def known_names(self) -> list[str]:
        return self.index.repo_names() + list(self.index.projects())

    # -- projects: several repositories as one -------------------------------
    def project_add(self, name: str, repos: Iterable[str]) -> list[str]:
        """Create a project (or add repositories to it); return its repositories."""
        if self.index.repo(name):
            raise QueryError(f"`{name}` is already a repository's name; choose another name for the project.")
        members = [self.repo(r) for r in repos]
        self.index.set_project(name, [m.id for m in members])
        return self.index.projects()[name]

    def project_remove(self, name: str) -> None:
        if not self.index.remove_project(name):
            raise UnknownRepoError(name, list(self.index.projects()))

    def projects(self) -> dict[str, list[str]]:
        return self.index.projects()

    def find_by_source(self, source: str) -> RepoRow | None:
        """The tracked repository with this source, however it is written: a URL with or without a trailing
        `/` or `.git`, a local path by the git directory it opens (any directory of its work tree)."""
        wanted = self._source_key(source)
        for repo in self.index.repos():
            if repo.source == source or self._source_key(repo.source, repo) == wanted:
                return repo
        return None

    @staticmethod
    def _source_key(source: str, repo: RepoRow | None = None) -> str:
        from ..store.mirrors import open_local
        from ..store.sources import is_local_path

        if is_local_path(source):
            if repo is not None and repo.in_place:
                return str(repo.mirror_path)  # an in-place repository's mirror path is its git directory
            try:
                return str(open_local(source))
            except GadError:
                return source  # gone or not a repository: only the same text matches
        return source.rstrip("/").removesuffix(".git").rstrip("/")

    def resolve(self, names: Iterable[str]) -> list[RepoRow]:
        """Tracked repositories for the names a user typed (projects expand to their repositories)."""
        resolved: dict[int, RepoRow] = {}
        for name in names:
            repo = self.index.repo(name)
            if repo is not None:
                resolved[repo.id] = repo
                continue
            members = self._project_repos(name)
            if members is None:
                raise UnknownRepoError(name, self.known_names())
            if not members:
                raise QueryError(f"Project `{name}` has no repositories; add some with {command(f'project add {name} REPO...')}.")
            for repo in members:
                resolved[repo.id] = repo
        return list(resolved.values())

    def _project_repos(self, name: str) -> list[RepoRow] | None:
        """A project's repositories (None: no such project), in one query: an organization's project has
        thousands. A RepoRow is built again only for a repository whose row changed since it was last read:
        building 2,000 (paths and times parsed) was a third of a warm project report (bench_project.py)."""
        found = self.index.project_repo_rows(name)
        if found is None:
            return None
        fields, raws = found
        at_id = fields.index("id")
        members = []
        with self._lock:
            for raw in raws:
                seen = self._repo_rows.get(raw[at_id])
                if seen is None or seen[0] != raw:
                    row = self.index.repo_row(dict(zip(fields, raw)))
                    seen = self._repo_rows[raw[at_id]] = (raw, row)
                members.append(seen[1])
        return members
