"""Notes that say when a figure may mislead (issue 33 part 4), worked out from what a report counted.

- An account named like a tool (`Documentation Generation`, `CI Build`) holding a large share of the active days:
  named, with how to leave it out (a bots pattern).
- One name under several e-mails: each counted as a person of its own, their shared days twice; the `.mailmap`
  line that would join them, and what the figure would lose.
- A large share of the active days that only commits outside the default branch give (the default scope counts
  every branch and tag): said, with `branch:HEAD`'s figure.

Person-level facts (names, e-mails) go only to a viewer who may read them (GAD_PERSON_DETAIL=admins); others
get the same note without them. Each check is bounded: names are read once per repository and generation
(cached on its columns), and the branch check counts a second time only when an upper bound says it may matter.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable

import numpy as np

from . import columns as col
from ..errors import literal
from ..store.store import IN_HEAD

TOOL_SHARE = 0.10  # a tool-like account with this share of the active days or more gets a note
OUTSIDE_SHARE = 0.10  # active days only commits outside the default branch give, as a share of the figure
MOST_NAMES = 3  # names with several e-mails spelled out (the rest counted)
# Words of an account that is a program, not a person (a name's words, lower-cased); `[bot]` is left out already.
TOOL_WORDS = frozenset({"bot", "robot", "automation", "automated", "automatic", "autobuild", "generation",
                        "generator", "generated", "build", "builder", "buildbot", "builds", "ci", "jenkins", "travis",
                        "circleci", "deploy", "deployer", "deployment", "releaser", "sync", "syncer", "mirror",
                        "importer", "cron", "daemon", "script", "pipeline", "actions", "autocommit", "updater"})
# Names that many people share or that say nothing of who committed: never "one person under several e-mails".
GENERIC_NAMES = frozenset({"", "root", "admin", "administrator", "user", "unknown", "none", "nobody", "ubuntu",
                           "debian", "localhost", "your name", "git", "anonymous", "developer", "dev", "test"})
_WORD = re.compile(r"[a-z0-9]+")


@dataclasses.dataclass(frozen=True)
class Names:
    """One repository's author names per person (mailmap on and off), for the notes: a person's names, and the
    names that stand for several persons."""

    by_person: dict[int, tuple[str, ...]]  # person -> raw names as commits write them (the mailmap's when on)
    several: dict[str, tuple[int, ...]]  # folded name -> its persons, for names with two or more
    # `several` flattened once (a history with old and new addresses has hundreds of such names): per member, its
    # name's number in `labels` and its person
    labels: tuple[str, ...] = ()
    member_group: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0, np.int64))
    member_person: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0, np.int64))

    @classmethod
    def of(cls, by_person: dict[int, tuple[str, ...]], several: dict[str, tuple[int, ...]]) -> "Names":
        labels = tuple(several)
        sizes = [len(several[n]) for n in labels]
        return cls(by_person, several, labels,
                   np.repeat(np.arange(len(labels), dtype=np.int64), sizes),
                   np.array([p for n in labels for p in several[n]], dtype=np.int64))


def names_of(index, columns: col.RepoColumns, mailmap: bool) -> Names:
    """The names of each person of a repository, read once per columns object (a generation) and mailmap mode."""
    cache = columns.__dict__.setdefault("_caveat_names", {})
    found = cache.get(mailmap)
    if found is not None:
        return found
    person_of = columns.person_mm if mailmap else columns.person_raw
    bot = columns.bot_mm if mailmap else columns.bot_raw
    by_person: dict[int, set[str]] = {}
    folded: dict[str, set[int]] = {}
    for author, name, _email in index.repo_author_identities(columns.repo_id):
        if author >= len(person_of) or bot[author]:
            continue
        person = int(person_of[author])
        if person <= 0:
            continue
        shown = " ".join(name.split())
        by_person.setdefault(person, set()).add(shown)
        key = shown.casefold()
        if key not in GENERIC_NAMES and " " in key:  # a first and a last name: "ann" alone is many people
            folded.setdefault(key, set()).add(person)
    found = cache[mailmap] = Names.of({p: tuple(sorted(n)) for p, n in by_person.items()},
                                      {k: tuple(sorted(v)) for k, v in folded.items() if len(v) > 1})
    return found


def _per_person(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(persons, their active days) from sorted distinct pair keys."""
    persons = keys >> 32
    if not len(persons):
        return persons, persons
    starts = np.flatnonzero(np.r_[True, persons[1:] != persons[:-1]])
    return persons[starts], np.diff(np.r_[starts, len(persons)])


def is_tool_like(name: str) -> bool:
    return any(word in TOOL_WORDS for word in _WORD.findall(name.lower()))


def tool_notes(names: list[Names], keys: np.ndarray, emails: Callable[[np.ndarray], dict[int, str]],
               people_detail: bool) -> list[str]:
    """A tool-like account with TOOL_SHARE of the active days or more: named (or, to a viewer who may not read
    people, counted), with how to leave it out."""
    persons, days = _per_person(keys)
    total = len(keys)
    if not total:
        return []
    big = persons[days >= TOOL_SHARE * total]
    notes = []
    for person in big.tolist():
        named = sorted({n for found in names for n in found.by_person.get(person, ())})
        tool = [n for n in named if is_tool_like(n)]
        if not tool:
            continue
        share = 100 * int(days[persons == person][0]) / total
        if not people_detail:
            notes.append(f"An account named like a tool, not a person, holds {share:.1f} % of the active days; an admin "
                         "can see which, and leave it out with a bots pattern (GAD_BOT_PATTERNS).")
            continue
        email = emails(np.array([person]))[person]
        notes.append(f"{literal(tool[0])} ({email}) holds {share:.1f} % of the active days and is named like a tool, "
                     f"not a person; if it is one, the operator leaves it out with a bots pattern "
                     f"(GAD_BOT_PATTERNS={email}; bots:on counts it again).")
    return notes


def several_emails_note(names: list[Names], keys: np.ndarray, emails: Callable[[np.ndarray], dict[int, str]],
                        people_detail: bool) -> str | None:
    """Names counted as several people (one per e-mail): the mailmap line that joins the busiest, and the active
    days the figure would lose (the days two of their addresses both committed). Vectorised over every name at
    once: a history with old and new addresses for most people has hundreds of such names (72 ms a report when
    they were looked at one by one)."""
    if not len(keys) or not any(found.several for found in names):
        return None
    persons, days = _per_person(keys)
    if len(names) == 1:
        labels, member_group, member_person = names[0].labels, names[0].member_group, names[0].member_person
    else:  # several repositories: one name's persons joined across them
        groups: dict[str, set[int]] = {}
        for found in names:
            for name, members in found.several.items():
                groups.setdefault(name, set()).update(members)
        joined = Names.of({}, {n: tuple(sorted(v)) for n, v in groups.items()})
        labels, member_group, member_person = joined.labels, joined.member_group, joined.member_person
    at = np.minimum(np.searchsorted(persons, member_person), len(persons) - 1)
    present = persons[at] == member_person
    member_group, member_person, at = member_group[present], member_person[present], at[present]
    counts = np.bincount(member_group, minlength=len(labels))
    keep = counts[member_group] >= 2
    member_group, member_person, at = member_group[keep], member_person[keep], at[keep]
    if not len(member_group):
        return None
    # each member's pairs are one run of the sorted keys: gathered by their bounds, tagged with the member's group
    pair_persons = keys >> 32
    starts = np.searchsorted(pair_persons, member_person)
    ends = np.searchsorted(pair_persons, member_person, side="right")
    lengths = ends - starts
    positions = np.repeat(starts - np.r_[0, np.cumsum(lengths)[:-1]], lengths) + np.arange(int(lengths.sum()))
    tagged = np.sort((np.repeat(member_group, lengths) << 32) | (keys[positions] & 0xFFFFFFFF))
    distinct = tagged[np.r_[True, tagged[1:] != tagged[:-1]]]  # sorted, then neighbours: np.unique hashes (slow)
    size = np.bincount(member_group, weights=lengths, minlength=len(labels)).astype(np.int64)
    overlap = size - np.bincount(distinct >> 32, minlength=len(labels))
    chosen = np.flatnonzero(np.bincount(member_group, minlength=len(labels)))
    order = sorted(chosen.tolist(), key=lambda g: (-int(overlap[g]), -int(size[g]), labels[g]))
    lost = int(overlap[chosen].sum())

    def busiest_first(g: int) -> list[int]:
        members = member_person[member_group == g].tolist()
        return sorted(members, key=lambda p: (-int(days[np.searchsorted(persons, p)]), p))

    if not people_detail:
        one = len(order) == 1
        return (f"{len(order):,} name{'' if one else 's'} commit{'s' if one else ''} under several e-mails and "
                f"count{'s' if one else ''} as several people (joined, the figure would lose up to {2 * lost:,} "
                "person-days); an admin can see which and join them with `.mailmap` lines.")
    shown_groups = [(int(overlap[g]), busiest_first(g)) for g in order[:MOST_NAMES]]
    mail = emails(np.array([p for _, active in shown_groups for p in active], dtype=np.int64))
    told = []
    for overlap_days, active in shown_groups:
        shown = next((n for found in names for n in found.by_person.get(active[0], ())), "")
        line = f"{shown} <{mail[active[0]]}> <{mail[active[1]]}>"
        more = f" (and {len(active) - 3} more addresses)" if len(active) > 3 else ""
        told.append(f"{literal(shown)} commits as {', '.join(mail[p] for p in active[:3])}{more}: the mailmap line "
                    f"{literal(line)} joins {'them' if len(active) == 2 else 'the first two'}"
                    + (f" ({2 * overlap_days:,} person-days counted twice)" if overlap_days else ""))
    rest = len(order) - MOST_NAMES
    return ("One name under several e-mails counts as several people: " + "; ".join(told)
            + (f"; and {rest:,} more name{'s' * (rest != 1)}" if rest > 0 else "")
            + (f". Joined, the figure would lose up to {2 * lost:,} person-days." if lost else "."))


def outside_default_note(all_columns: list[col.RepoColumns], masks: list, flt: col.Filter, author_keys: np.ndarray,
                         disjoint: bool) -> str | None:
    """When the default scope (every branch and tag) counts OUTSIDE_SHARE of its active days or more only through
    commits the default branch does not reach: say so, with branch:HEAD's figure. Counted a second time only when
    the commits outside (an upper bound of those days) could reach the share."""
    total = len(author_keys)
    if not total:
        return None
    bound = 0
    for columns in all_columns:
        outside = (columns.bits & flt.scope_bit) != 0
        outside &= (columns.bits & IN_HEAD) == 0
        if flt.since_day is not None:
            outside &= columns.days >= flt.since_day
        if flt.until_day is not None:
            outside &= columns.days <= flt.until_day
        bound += int(np.count_nonzero(outside))
    if bound < OUTSIDE_SHARE * total:
        return None
    head_flt = dataclasses.replace(flt, scope_bit=IN_HEAD)
    selections = []
    for columns, mask in zip(all_columns, masks):
        head_mask = None if mask is None else mask & ((columns.bits & IN_HEAD) != 0)
        selections.append(col.select(columns, head_flt, head_mask))
    head, _ = col.totals(selections, disjoint=disjoint)
    only_outside = total - head.person_days
    if only_outside < OUTSIDE_SHARE * total:
        return None
    return (f"{100 * only_outside / total:.1f} % of the active days ({only_outside:,}) come only from commits outside "
            f"the default branch (other branches and tags, which the default scope counts); branch:HEAD counts "
            f"{2 * head.person_days:,} person-days.")
