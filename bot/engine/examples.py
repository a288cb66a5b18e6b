"""The examples in help and on the App Home name what is tracked here, not made-up repositories.

`/gad help`, `gad-bot help` and the Home tab offer a handful of questions to copy. An example naming
`linux` on a gad-bot that tracks `web` answers "unknown repository" to the first thing a newcomer
tries, so with repositories tracked the examples are built from them:

- the repository with the most commits comes first: it has the most history to show, and the
  choice stays put from one day to the next (the most recently synced would change every hour);
  ties go to the first name;
- the next largest is the second name of a several-repositories question and of `compare`;
- a project, when there is one, is asked like a repository;
- `range:` uses the first repository's two newest version tags (names the grammar accepts only).

Every tracked name is already shown to every member of the workspace (`/gad repos`, the Home tab's
list), and answers are the same in every channel, so naming one in an example reveals nothing a
member could not see. With nothing tracked the generic examples (`query.EXAMPLES`) stay, and the
faces say how a repository gets tracked.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .query import EXAMPLES, is_ref_word
from .refs import version_key

if TYPE_CHECKING:
    from ..store.index import Index


@dataclass(frozen=True)
class Tracked:
    """What the examples may name: repositories largest first, projects by name, two version tags."""

    repos: tuple[str, ...]
    projects: tuple[str, ...] = ()
    tags: tuple[str, str] | None = None  # of repos[0], older first


def tracked(index: "Index") -> Tracked | None:
    """What is tracked, for the examples (a few rows read); None with nothing tracked."""
    repos = sorted(index.repos(), key=lambda r: (-r.commits, r.name))
    if not repos:
        return None
    names = [name.removeprefix("refs/tags/") for name in index.stored_tips(repos[0].id)
             if name.startswith("refs/tags/")]
    versions = sorted((n for n in names if is_ref_word(n) and any(c.isdigit() for c in n)), key=version_key)
    projects = tuple(name for name, members in index.projects().items() if members)
    return Tracked(repos=tuple(r.name for r in repos), projects=projects,
                   tags=(versions[-2], versions[-1]) if len(versions) >= 2 else None)


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
    out.append(f"{first} by:org top:10")
    if second:
        out.append(f"compare {first} {second}")
    out.append(f"subscribe {first} day:mon time:9am")
    return tuple(out)
