"""The names people type, as tracked repositories: repositories, projects (several repositories as one), sources.

Every name goes through an audience (bot/engine/audiences.py): a repository or project the viewer may not
see is answered as if it were not tracked, and a project counts only the repositories the viewer may see
(`Resolved.hidden` says how many it left out). The operator (the CLI, the default) sees everything.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

from dataclasses import dataclass
from functools import lru_cache

from ..errors import GadError, QueryError, UnknownRepoError, command
from ..store.index import Index, RepoRow
from .audiences import OPERATOR, Audience, Viewer


@lru_cache(maxsize=1024)
def audience_of(stored: str | None) -> Audience:
    """An audience as the index stores it, parsed once per distinct text (thousands of repositories share a few)."""
    return Audience.parse(stored)


@dataclass(frozen=True)
class Resolved:
    """What the names a viewer typed stand for: the repositories they may see, and per project how many it left out."""

    repos: list[RepoRow]
    hidden: tuple[tuple[str, int], ...] = ()  # (project, repositories of it the viewer may not see)


# The first path segment of a forge's page inside a repository (GitHub, GitLab's `-`, Gitea/Forgejo's `src`): a
# browser URL `https://host/owner/name/tree/main` names the repository `https://host/owner/name`.
_PAGES = frozenset({"tree", "blob", "-", "src", "commits", "commit", "releases", "tags", "pulls", "pull", "issues",
                    "merge_requests", "compare", "branches", "activity", "wiki"})


def _looks_like_url(name: str) -> bool:
    from .query import is_source
    from ..store.sources import is_local_path

    return is_source(name) and not is_local_path(name)


class Catalog:
    """Repositories and projects by name; a project's rows kept so that only changed ones are built again."""

    def __init__(self, index: Index):
        self.index = index
        self._repo_rows: dict[int, tuple[tuple, RepoRow]] = {}  # repository id -> (its row as read, RepoRow)
        self._project_rows: dict[str, tuple[list, tuple[RepoRow, ...]]] = {}  # project -> (rows as read, members)
        self._lock = threading.Lock()

    def forget(self, repo_id: int) -> None:
        """Drop what is kept of a repository (it was untracked)."""
        with self._lock:
            self._repo_rows.pop(repo_id, None)
            self._project_rows.clear()

    # -- repositories --------------------------------------------------------
    @staticmethod
    def sees(viewer: Viewer, repo: RepoRow) -> bool:
        return viewer.operator or viewer.sees(audience_of(repo.audience))

    def repos(self, viewer: Viewer = OPERATOR) -> list[RepoRow]:
        return [r for r in self.index.repos() if self.sees(viewer, r)]

    def repo(self, name: str, viewer: Viewer = OPERATOR) -> RepoRow:
        """The tracked repository `name`; one the viewer may not see is not tracked, as far as they can tell."""
        found = self.index.repo(name)
        if found is None or not self.sees(viewer, found):
            raise UnknownRepoError(name, self.known_names(viewer))
        return found

    def known_names(self, viewer: Viewer = OPERATOR) -> list[str]:
        """Every repository and project name the viewer may see (what "did you mean" may offer them)."""
        if viewer.operator:
            return self.index.repo_names() + list(self.index.projects())
        return [r.name for r in self.repos(viewer)] + [p for p in self.project_audiences_seen(viewer)]

    def unseen(self, viewer: Viewer, names) -> list[str]:
        """Of these names (repositories or projects), those `viewer` may not see; untracked names are not listed."""
        hidden = []
        for name in dict.fromkeys(names):
            repo = self.index.repo(name)
            stored = repo.audience if repo is not None else self.index.project_audience(name)
            if (repo is not None or stored is not None) and not viewer.operator \
                    and not viewer.sees(audience_of(stored)):
                hidden.append(name)
        return hidden

    def sees_all(self, viewer: Viewer, names) -> bool:
        """Whether `viewer` may see every one of these repositories or projects; a name no longer tracked (renamed,
        untracked) counts as one they may not see, unless they are the operator: what it was is unknown now."""
        if viewer.operator:
            return True
        names = list(names)
        return not self.unseen(viewer, names) and all(
            self.index.repo(n) is not None or self.index.project_audience(n) is not None for n in names)

    def project_audiences_seen(self, viewer: Viewer) -> list[str]:
        """The projects whose own audience admits the viewer (their repositories are checked one by one)."""
        return sorted(name for name, stored in self.index.project_audiences().items()
                      if viewer.operator or viewer.sees(audience_of(stored)))

    # -- projects: several repositories as one -------------------------------
    def project_add(self, name: str, repos: Iterable[str]) -> list[str]:
        """Create a project (or add repositories to it); return its repositories."""
        if self.index.repo(name):
            raise QueryError(f"`{name}` is already a repository's name; choose another name for the project.")
        existing = self.index.projects()
        if name not in existing:  # a new project: not a look-alike of a tracked name (bot/engine/lookalikes.py)
            from .lookalikes import refuse_new_name

            refuse_new_name(name, [*self.index.repo_names(), *existing], kind="project")
        members = [self.repo(r) for r in repos]
        self.index.set_project(name, [m.id for m in members])
        return self.index.projects()[name]

    def project_remove(self, name: str) -> None:
        if not self.index.remove_project(name):
            raise UnknownRepoError(name, list(self.index.projects()))

    def projects(self, viewer: Viewer = OPERATOR) -> dict[str, list[str]]:
        """Each project the viewer may see, with the repositories of it they may see."""
        everything = self.index.projects()
        if viewer.operator:
            return everything
        seen = {r.name for r in self.repos(viewer)}
        return {name: [r for r in everything[name] if r in seen] for name in self.project_audiences_seen(viewer)
                if name in everything}

    def find_by_source(self, source: str) -> RepoRow | None:
        """The tracked repository with this source, however it is written: a URL with or without a trailing
        `/` or `.git`, a local path by the git directory it opens (any directory of its work tree)."""
        wanted = self._source_key(source)
        repos = self.index.repos()
        for repo in repos:
            if repo.source == source or self._source_key(repo.source, repo) == wanted:
                return repo
        return self._by_place(source, repos)

    @staticmethod
    def _by_place(source: str, repos: list[RepoRow]) -> RepoRow | None:
        """A URL that names a tracked repository in another form: http beside https, `git@host:o/n.git`,
        another case (forges ignore it), `www.`, or a page of it pasted from a browser (`/tree/main/src`). Such a
        URL used to start a second fetch of a repository that is tracked already."""
        from ..store.sources import is_local_path
        from .links import Place

        if is_local_path(source):
            return None
        place = Place.of(source)
        if place is None:
            return None
        for repo in repos:
            tracked = Place.of(str(repo.source)) if not repo.in_place else None
            if tracked is None or tracked.host != place.host:
                continue
            rest = place.segments[len(tracked.segments):]
            if place.segments[:len(tracked.segments)] == tracked.segments and (not rest or rest[0] in _PAGES):
                return repo
        return None

    @staticmethod
    def _source_key(source: str, repo: RepoRow | None = None) -> str:
        from ..store.mirrors.localcopy import open_local
        from ..store.sources import is_local_path

        if is_local_path(source):
            if repo is not None and repo.in_place:
                return str(repo.mirror_path)  # an in-place repository's mirror path is its git directory
            try:
                return str(open_local(source))
            except GadError:
                return source  # gone or not a repository: only the same text matches
        return source.rstrip("/").removesuffix(".git").rstrip("/")

    def resolve(self, names: Iterable[str], viewer: Viewer = OPERATOR) -> list[RepoRow]:
        """Tracked repositories for the names a user typed (projects expand to their repositories)."""
        return self.resolve_seen(names, viewer).repos

    def resolve_seen(self, names: Iterable[str], viewer: Viewer = OPERATOR) -> Resolved:
        """The repositories the names stand for, as far as `viewer` may see them."""
        names = tuple(names)
        resolved: dict[int, RepoRow] = {}
        hidden: list[tuple[str, int]] = []
        for name in names:
            repo = self.index.repo(name)
            if repo is None and _looks_like_url(name):  # the URL of a tracked repository names it
                repo = self.find_by_source(name)
            if repo is not None:
                if not self.sees(viewer, repo):
                    raise UnknownRepoError(name, self.known_names(viewer))
                resolved[repo.id] = repo
                continue
            members = self._project_repos(name)
            if members is None or not (viewer.operator or viewer.sees(audience_of(self.index.project_audience(name)))):
                raise UnknownRepoError(name, self.known_names(viewer))
            if not members:
                raise QueryError(f"Project `{name}` has no repositories; add some with {command(f'project add {name} REPO...')}.")
            shown = members if viewer.operator else self._seen_members(members, viewer)
            if len(shown) < len(members):
                hidden.append((name, len(members) - len(shown)))
            if not shown:
                raise QueryError(f"None of project `{name}`'s {len(members):,} repositories is open to you; an admin "
                                 f"can say who may see them ({command('access ' + name)}).")
            if not resolved and len(names) == 1:  # one project: its rows are by id already, each once
                return Resolved(list(shown), tuple(hidden))
            for repo in shown:
                resolved[repo.id] = repo
        return Resolved(list(resolved.values()), tuple(hidden))

    @staticmethod
    def _seen_members(members: list[RepoRow], viewer: Viewer) -> list[RepoRow]:
        """The members `viewer` may see, each distinct audience asked once (an organization's thousands share a few)."""
        sees = {text: viewer.sees(audience_of(text)) for text in {r.audience for r in members}}
        return [r for r in members if sees[r.audience]]

    def _project_repos(self, name: str) -> list[RepoRow] | None:
        """A project's repositories (None: no such project), in one query: an organization's project has
        thousands. A RepoRow is built again only for a repository whose row changed since it was last read:
        building 2,000 (paths and times parsed) was a third of a warm project report (bench_project.py)."""
        found = self.index.project_repo_rows(name)
        if found is None:
            return None
        fields, raws = found
        with self._lock:
            kept = self._project_rows.get(name)
        if kept is not None and kept[0] == raws:  # nothing changed since the last question: one comparison in C
            return list(kept[1])
        at_id = fields.index("id")
        members = []
        with self._lock:
            for raw in raws:
                seen = self._repo_rows.get(raw[at_id])
                if seen is None or seen[0] != raw:
                    row = self.index.repo_row(dict(zip(fields, raw)))
                    seen = self._repo_rows[raw[at_id]] = (raw, row)
                members.append(seen[1])
            self._project_rows[name] = (raws, tuple(members))
        return members

    # -- audiences: who may see each name (admins set them) ------------------------------------
    def access_of(self, name: str) -> "Access":
        """Who may see `name` (a repository, a project, or an organization's project), for an admin to read."""
        from ..store.orgindex import OrgIndex

        repo = self.index.repo(name)
        if repo is not None:
            org = OrgIndex(self.index).org_of_repo(repo.id)
            return Access(name, "repository", audience_of(repo.audience),
                          follows=org if org is not None and not repo.audience_own else None)
        stored = self.index.project_audience(name)
        if stored is None:
            raise UnknownRepoError(name, self.known_names())
        org = OrgIndex(self.index).org(name)
        if org is None:
            return Access(name, "project", audience_of(stored))
        own = tuple(r.name for r in self._project_repos(name) or [] if r.audience_own)
        return Access(name, "organization", audience_of(stored), own=own)

    def set_access(self, name: str, audience: Audience) -> "Access":
        """Set who may see `name`. An organization's repositories that follow it follow the change; those with an
        audience of their own (set by an admin, or private on the forge) keep it, and are named in the answer."""
        from ..store.orgindex import OrgIndex
        from ..store.tables.schema import OPEN_BEFORE_AUDIENCES

        repo = self.index.repo(name)
        with self.index.transaction():
            if repo is not None:
                self.index.set_audience(repo.id, audience.text(), own=True)
            elif self.index.project_audience(name) is None:
                raise UnknownRepoError(name, self.known_names())
            else:
                self.index.set_project_audience(name, audience.text())
                if OrgIndex(self.index).org(name) is not None:
                    for member in self._project_repos(name) or []:
                        if not member.audience_own:
                            self.index.set_audience(member.id, audience.text(), own=False)
            self.index.execute("DELETE FROM meta WHERE key = ?", (OPEN_BEFORE_AUDIENCES,))  # an admin has looked
        return self.access_of(name)


@dataclass(frozen=True)
class Access:
    """Who may see a name: its audience; for a repository, the organization it follows (if any); for an
    organization, its repositories with an audience of their own."""

    name: str
    kind: str  # "repository", "project" or "organization"
    audience: Audience
    follows: str | None = None
    own: tuple[str, ...] = ()
