"""The examples in help and on the App Home name what is tracked here, not made-up repositories.

`/gad help`, `gad-bot help` and the Home tab offer a handful of questions to copy. An example naming
`linux` on a gad-bot that tracks `web` answers "unknown repository" to the first thing a newcomer
tries, so with repositories tracked the examples are built from them:

- the repository with the most commits comes first: it has the most history to show, and the
  choice stays put from one day to the next (the most recently synced would change every hour);
  ties go to the first name;
- the next largest is the second name of a several-repositories question and of `compare`;
- a project, when there is one, is asked like a repository;
- `range:` uses the first repository's two newest releases (on different commits), so that it lists one
  release's work, and `by:release` is offered beside it. Releases are by:release's own (bot/engine/releases.py:
  tags that look like versions, pre-releases and marker tags left out), of the family of tags most used
  (`v` beside `release-`, `V_` on OpenSSH): one family sorts into one history, mixed ones do not.

The same names go into `gad-bot report --help` and into refusals whose example names a repository
("Name at least one repository, e.g. ...": query.NamesAnExample, filled by `name_tracked`).

Every tracked name is already shown to every member of the workspace (`/gad repos`, the Home tab's
list), and answers are the same in every channel, so naming one in an example reveals nothing a
member could not see. With nothing tracked the generic examples (`query.EXAMPLES`) stay, and the
faces say how a repository gets tracked.
"""

from __future__ import annotations

import logging
import sqlite3
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import GadError, QueryError
from .audiences import OPERATOR, Viewer
from .catalog import Catalog
from .query import EXAMPLES, NamesAnExample, is_ref_word
from .refs import family, is_prerelease, version_key
from .releases import families, is_release_tag

if TYPE_CHECKING:
    from ..store.index import Index, RepoRow


@dataclass(frozen=True)
class Tracked:
    """What the examples may name: repositories largest first, projects by name, two version tags."""

    repos: tuple[str, ...]
    projects: tuple[str, ...] = ()
    tags: tuple[str, str] | None = None  # of repos[0], older first


log = logging.getLogger(__name__)


def tracked_or_generic(index: "Index", viewer: Viewer = OPERATOR,
                       repos: "list[RepoRow] | None" = None) -> Tracked | None:
    """`tracked`, or None (the generic examples) when the index cannot be read: help, answered in Slack's ack
    and on the terminal, must still help when the index is damaged or locked."""
    try:
        return tracked(index, viewer, repos)
    except (sqlite3.Error, GadError, OSError) as error:
        log.warning("help examples fall back to the generic ones: the index could not be read (%s)",
                    type(error).__name__)
        return None


def tracked(index: "Index", viewer: Viewer = OPERATOR, repos: "list[RepoRow] | None" = None) -> Tracked | None:
    """What is tracked that `viewer` may see, for the examples (a few rows read); None with nothing. `repos`: those
    repositories, when the caller has just read them for this viewer (the Home tab lists them too), else read here.
    An example names only what the person it is for may see: a name is a fact about a repository."""
    catalog = Catalog(index)
    repos = sorted(catalog.repos(viewer) if repos is None else repos, key=lambda r: (-r.commits, r.name))
    if not repos:
        return None
    projects = tuple(name for name, members in catalog.projects(viewer).items() if members)
    return Tracked(repos=tuple(r.name for r in repos), projects=projects, tags=_releases(index.stored_tips(repos[0].id)))


def _releases(tips: dict[str, bytes]) -> tuple[str, str] | None:
    """The two newest releases by version (v1.9 < v1.10), on different commits: a range that lists a
    release's work. Only the family by:release counts by default (releases.families: the most used), since
    tags of another family (release-14.2 beside v2.0) do not sort into one history; pre-releases are left out."""
    by_name = {name.removeprefix("refs/tags/"): target for name, target in tips.items()
               if name.startswith("refs/tags/")}
    found = [n for n in by_name if is_release_tag(n, None)]
    if not found:
        return None
    counted = families(found)[0][0]
    versions = sorted((n for n in found if family(n) == counted and not is_prerelease(n) and is_ref_word(n)),
                      key=version_key)
    if not versions:
        return None
    newest = versions[-1]
    older = [n for n in versions[:-1] if by_name[n] != by_name[newest]]
    return (older[-1], newest) if older else None


def examples(found: Tracked | None) -> tuple[str, ...]:
    """Questions to copy (without `/gad ` or `gad-bot report `): about what is tracked, else the generic ones."""
    if found is None:
        return EXAMPLES
    first = found.repos[0]
    second = found.repos[1] if len(found.repos) > 1 else None
    # all history first: a repository quiet for a year still answers it with figures, not a zero
    out = [f"{first} by:year", f"{first} by:person top:10", f"{first} since:12w by:week"]
    if second:
        out.append(f"{first} {second} by:repo")
    if found.projects:
        out.append(f"{found.projects[0]} by:repo")
    if found.tags:
        out.append(f"{first} range:{found.tags[0]}..{found.tags[1]}")
        out.append(f"{first} by:release")
    out.append(f"{first} by:org top:10")
    if second:
        out.append(f"compare {first} {second}")
    out.append(f"subscribe {first} day:mon time:9am")
    return tuple(out)


def name_tracked(error: QueryError, found: Tracked | None) -> QueryError:
    """`error` with tracked names in its example (the first question of `examples`, the two largest
    repositories), as help shows them; unchanged when its example names no repository, with nothing tracked,
    or when its example needs a second repository and one is tracked."""
    if found is None or not isinstance(error, NamesAnExample):
        return error
    names = {"question": examples(found)[0], "repo": found.repos[0]}
    if len(found.repos) > 1:
        names["other"] = found.repos[1]
    if not error.placeholders() <= names.keys():
        return error
    return QueryError(error.naming(names))
