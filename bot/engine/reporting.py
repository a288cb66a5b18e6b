"""Reporting: a Query answered from the index (METRIC.md), side by side (`compare`), by e-mail domain.

report counts distinct (person, day) keys over the snapshots' columns (bot/engine/columns.py), with
the masks a question asks for (bot/engine/snapshots.py), by:release's rows (bot/engine/releaserows.py),
organizations (bot/engine/orgs.py), the wording of a zero (bot/engine/zeros.py) and COCOMO's line
counts (bot/engine/cocomo.py) when asked.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Iterable
from datetime import date, datetime, timezone
from typing import TYPE_CHECKING

import numpy as np

from . import calibrations, columns as col
from ..config import Settings
from ..errors import GadError, PermissionDeniedError, QueryError, command, literal
from ..metric import Report, table_order
from ..store.index import Index, RepoRow, utcnow
from ..store.store import IN_ALL, IN_DEFAULT, IN_HEAD
from .audiences import OPERATOR, Viewer
from .catalog import Catalog, audience_of
from .identities import Identities
from .teams import NO_TEAM, Matched, Teams, no_committer_error, unmatched_note
from .filters import Active, author_zero_words, check_authors, check_filters
from .periods import from_epoch_day, mark_partial, to_epoch_day
from .query import Compare, Query, RefRange
from .releaserows import refuse_releases_of_several, release_ranges, release_rows, trimmed_note, typical_release
from .snapshots import Snapshots

if TYPE_CHECKING:
    from ..store.mirrors.mirror import Mirror


class Reporting:
    """report, compare, domains; COCOMO's heads; the operator's organization rules, read when they change."""

    def __init__(self, settings: Settings, index: Index, catalog: Catalog, snapshots: Snapshots):
        self.settings = settings
        self.index = index
        self.catalog = catalog
        self.snapshots = snapshots
        self.identities = Identities(index)
        self._lock = threading.Lock()

    def report(self, query: Query, today: date | None = None, viewer: Viewer = OPERATOR,
               teams: Teams | None = None) -> Report:
        """Answer a Query from the index alone (reachability over its graph for `branch:`), over what `viewer`
        may see (bot/engine/audiences.py; the operator, the default, sees everything). `teams`: the workspace's user
        groups as Slack lists them, for `team:` and `by:team` (bot/engine/teams.py)."""
        with self.snapshots.masks.staged():  # a refused question caches nothing
            return self._report(query, today, viewer, teams=teams)

    def _person_level(self, query: Query, viewer: Viewer) -> tuple[Query, str | None]:
        """GAD_PERSON_DETAIL=admins: person-level answers only to admins and to a person about themselves;
        by:person asked by anyone else becomes the totals, with a sentence; `author:` someone else is refused."""
        if self.settings.person_detail != "admins" or viewer.reads_people:
            return query, None
        about_themselves = bool(query.authors) and set(query.authors) <= set(viewer.emails)
        if query.teams or query.by == "team":
            # a user group is whoever made it put in (any member may, by Slack's default): one person, or the asker
            # and one other, whose figure less the asker's own is the other's (person-days add up over people)
            raise PermissionDeniedError(
                "Figures of a user group are for admins here (GAD_PERSON_DETAIL=admins): a group may hold one person, "
                "or you and one other; ask without `team:` and `by:team` for the totals, or "
                f"{command('me')} for your own.")
        if query.authors and not about_themselves:
            raise PermissionDeniedError(
                "Figures of one person are for admins here (GAD_PERSON_DETAIL=admins), and for each person about "
                f"themselves; ask without `author:` for the totals, or {command('me')} for your own.")
        if query.by == "person" and not about_themselves:
            return (dataclasses.replace(query, by=None, top=None),
                    "Figures per person are for admins here (GAD_PERSON_DETAIL=admins), so this shows the totals; "
                    f"{command('me')} shows your own.")
        return query, None

    def me(self, query: Query, today: date | None = None, viewer: Viewer = OPERATOR) -> Report:
        """`/gad me`: the viewer's own 2GAD over what they may see (or the repositories named), found by their
        own addresses through each repository's mailmap (bot/engine/identities.py)."""
        from glob import escape

        from .filters import _people

        if not viewer.emails:
            raise QueryError("Slack shows gad-bot no e-mail address of yours (the app needs the `users:read.email` "
                             "scope, and your profile an address), so it cannot find your commits; an admin can add "
                             f"the address you commit with: `gad-bot teams alias {viewer.user or 'U…'} ADDRESS`.")
        names = query.repos or tuple(r.name for r in self.catalog.repos(viewer))
        if not names:
            raise QueryError("There is no repository you may see yet, so there is nothing of yours to count.")
        repos = self.catalog.resolve_seen(names, viewer).repos
        mapped = set().union(*self.identities.people(repos, viewer.emails).values())
        committed = _people(self.index, repos, query.mailmap)
        mine = sorted(p for p in mapped if p in committed and (query.bots or not committed[p]))
        if not mine:
            first = viewer.emails[0]
            where = f"{literal(names[0])} has" if len(query.repos) == 1 else "The repositories you may see have"
            raise QueryError(f"{where} no commits by {', '.join(viewer.emails)}; if you commit with another address, a "
                             f"`.mailmap` line such as `Your Name <{first}> <you@other.example>` in the repository "
                             "joins them, or an admin can add it to your addresses "
                             f"(`gad-bot teams alias {viewer.user or 'U…'} you@other.example`).")
        asked = dataclasses.replace(query, repos=tuple(names), authors=tuple(escape(p) for p in mine))
        with self.snapshots.masks.staged():
            report = self._report(asked, today, viewer, about_themselves=True)
        return dataclasses.replace(report, notes=report.notes + (
            f"Counted as you: {', '.join(mine)} (your Slack profile's address, through each repository's mailmap).",))

    def _team_people(self, repos: list[RepoRow], query: Query,
                     teams: Teams | None) -> tuple[list[Matched], tuple]:
        """The groups `team:` names (all of them for by:team) with the people each matches in these repositories;
        kept per listing of the groups and snapshot of the repositories (matching 3,000 members through each
        repository's mailmap is most of the work of a team's figure), and the key they are kept under."""
        if teams is None:
            raise QueryError("`team:` and `by:team` read Slack's user groups, which this face cannot ask; ask in Slack, "
                             "or give the command line SLACK_BOT_TOKEN (scopes usergroups:read, users:read.email).")
        groups = teams.find(query.teams) if query.teams else list(teams.groups)
        key = ("teams", teams.key, tuple(g.id for g in groups), query.mailmap,
               tuple((r.id, r.generation, r.mailmap_oid) for r in repos))
        return self.snapshots.masks.get_or_compute(key, lambda: self._match_teams(repos, groups, query.mailmap)), key

    def _match_teams(self, repos: list[RepoRow], groups: list, mailmap: bool) -> list[Matched]:
        from .filters import _people

        emails = {e for g in groups for m in g.members for e in m.emails}
        persons = self.identities.people(repos, emails)
        committed = _people(self.index, repos, mailmap)
        ids = self.index.people_with_emails({p for found in persons.values() for p in found if p in committed})
        matched = []
        for group in groups:
            people, unmatched = set(), []
            for member in group.members:
                mine = {p for e in member.emails for p in persons.get(e, ()) if p in committed}
                people |= mine
                if not mine:
                    unmatched.append(member)
            matched.append(Matched(group, frozenset(people), tuple(unmatched),
                                   tuple(sorted(ids[p] for p in people if p in ids))))
        return matched

    def _report(self, query: Query, today: date | None, viewer: Viewer = OPERATOR,
                about_themselves: bool = False, teams: Teams | None = None) -> Report:
        today = today or datetime.now(timezone.utc).date()
        query, person_note = (query, None) if about_themselves else self._person_level(query, viewer)
        resolved = self.catalog.resolve_seen(query.repos, viewer)
        repos = resolved.repos
        scope_bit = {"default": IN_DEFAULT, "all": IN_ALL, "branch": IN_HEAD}[query.scope.kind]
        if query.scope.kind == "all":
            self.snapshots.require_other_refs(repos, "`refs:all`")
        check_filters(self.index, repos, query, self.snapshots.touches(repos))  # `path:nosuch` is a typo, not a quiet period
        unmatched_author = check_authors(self.index, repos, query)  # `author:nobody@x` is a typo too
        matched, teams_key = self._team_people(repos, query, teams) if (query.teams or query.by == "team") else ([], ())
        allowed = self.snapshots.allowed_people(query.authors) if query.authors else None
        if query.teams:  # only the records of the groups' people (a union), with author: too if given
            members = np.array(sorted(set().union(*(m.ids for m in matched))), np.int64)
            if not len(members):
                raise no_committer_error([m.team for m in matched])
            newest = self.index.execute("SELECT coalesce(max(id), 0) FROM people").fetchone()[0]
            in_team = np.zeros(max(newest + 1, len(allowed) if allowed is not None else 0), bool)  # by person id
            in_team[members] = True
            allowed = in_team if allowed is None else in_team & np.pad(allowed, (0, len(in_team) - len(allowed)))
        flt = col.Filter(scope_bit=scope_bit,
                         since_day=to_epoch_day(query.since) if query.since else None,
                         until_day=to_epoch_day(query.until) if query.until else None,
                         mailmap=query.mailmap, bots=query.bots, allowed_people=allowed)
        released = None  # by:release's ranges, over its one repository's columns (in the loop below)
        if query.by == "release":
            refuse_releases_of_several(repos, query)
        selections, masks = [], []  # masks: each repository's scope (branch, range, paths), for `active`
        coauthor_parts = []  # METRIC.md rule 7, per repository: counted with coauthors:on, else only told
        data_ends = None  # the newest commit in scope, whatever the filters: where the data ends
        all_columns = []
        # No per-repository mask asked: the columns and what is known of them are kept per set of snapshots
        # (Snapshots.column_set), so a warm project report does not visit its thousands of repositories (issue 32).
        # None (one not indexed yet): the loop below says which, as before.
        held = (self.snapshots.column_set(repos)
                if not (query.scope.kind == "branch" and query.scope.branch != "HEAD") and query.range is None
                and query.by != "release" and not query.paths and not query.exclude_paths else None)
        if held is not None:
            all_columns = held.columns
            masks = [None] * len(repos)
            data_ends = held.newest_day(scope_bit)
            if query.coauthors and held.incomplete is not None:  # the loop's refusal, for the same repository
                raise self._coauthors_unread(repos[held.incomplete])
            # the others have no co-author entries to count: the loop would give each an empty part
            coauthor_parts = [col.coauthor_select(all_columns[n], flt, None) for n in held.coauthored]
        for repo in (repos if held is None else ()):
            columns = self.snapshots.columns_of(repo, repo.generation)  # just read by resolve: no query a repository
            all_columns.append(columns)
            if query.by == "release":  # one repository (refused above otherwise)
                released = release_ranges(self.snapshots, repo, columns, query)
            # branch:HEAD is the IN_HEAD scope bit itself; another branch is a mask of its own.
            mask = (self.snapshots.branch_mask(repo, columns, query.scope.branch)
                    if query.scope.kind == "branch" and query.scope.branch != "HEAD" else None)
            if query.range is not None:  # a range replaces the scope
                mask = self.snapshots.range_mask(repo, columns, query.range)
            elif released is not None:  # so do the releases' ranges: the total counts their rows once
                mask = columns.in_rows(released.union)
            newest = self.snapshots.newest_day(columns, scope_bit, mask)
            if newest is not None:
                data_ends = newest if data_ends is None else max(data_ends, newest)
            if query.paths or query.exclude_paths:
                if mask is None:
                    mask = (columns.bits & scope_bit) != 0
                mask = mask & self.snapshots.path_mask(repo, columns, query)
            masks.append(mask)
            coauthor_parts.append(col.coauthor_select(columns, flt, mask))
            if query.coauthors and not columns.coauthors.complete:
                raise self._coauthors_unread(repo)
        if held is None:  # several caches key on these snapshots: their key's part worked out once
            from .snapshots import ColumnsList, signature

            all_columns = ColumnsList(all_columns)
            all_columns.signature = signature(all_columns, "repo_id")
        org_table = self.org_table() if (query.orgs or query.by == "org") else None
        active = self._active(all_columns, masks, flt, query, org_table)
        if unmatched_author is not None:  # refused once the scope is known (suggestions from it), before counting
            raise unmatched_author.refusal(repos, query, active)
        merged = self.snapshots.merged(all_columns, masks, flt, query, held)
        selections = ([col.select_merged(merged, flt)] if merged is not None
                      else [col.select(columns, flt, mask) for columns, mask in zip(all_columns, masks)])
        co_selections = [part.selection for part in coauthor_parts if len(part.selection.persons)]
        if query.orgs:
            wanted = org_table.matching(query.orgs)
            selections = [col.keep(s, wanted[org_table.orgs_of(s.persons, s.days)]) for s in selections]
            co_selections = [col.keep(s, wanted[org_table.orgs_of(s.persons, s.days)]) for s in co_selections]
        author_selections = selections
        if query.coauthors:
            selections = selections + co_selections  # authors first: a commit's org is its author's when counted
        # co-author records repeat their commits; without them, repositories that share no commit add up
        disjoint = not query.coauthors and self.snapshots.commits_disjoint(all_columns)
        totals, keys = col.totals(selections, disjoint=disjoint)
        author_keys = col.totals(author_selections, disjoint=disjoint)[1] if query.coauthors else keys
        # One repository's trailers still unread: the others' count alone would pass for the whole scope's.
        complete = held.complete if held is not None else all(columns.coauthors.complete for columns in all_columns)
        coauthor_commits = col.distinct_count([part.naming for part in coauthor_parts]) if complete else 0
        coauthor_days = col.days_added(author_keys, co_selections) if coauthor_commits else 0
        rows: list = []
        if query.by in ("week", "month", "quarter", "year"):
            rows = col.by_period(selections, keys, query.by, first_day=flt.since_day, last_day=flt.until_day,
                                 disjoint=disjoint)
            rows = mark_partial(rows, query.by, query.since, query.until or today)
        elif query.by == "person":
            rows = col.by_person(selections, keys, self.snapshots.people_names(col.distinct_persons(keys)), disjoint=disjoint)
        elif query.by == "repo" and merged is not None:  # thousands of repositories: no loop over them (issue 32)
            rows = col.by_repo_merged(merged, flt)
        elif query.by == "repo":
            rows = col.by_repo(selections, [s.name for s in author_selections])
        elif query.by == "team":
            pairs = self.snapshots.masks.get_or_compute(
                ("team pairs", *teams_key), lambda: col.TeamPairs.of([(m.team.label, m.ids) for m in matched]))
            rows = col.by_team(selections, keys, pairs, NO_TEAM, disjoint=disjoint, shared_commits=query.coauthors)
        elif query.by == "org":
            rows = col.by_org(selections, keys, org_table, disjoint=disjoint)
        more_rows = 0
        notes: tuple[str, ...] = ()
        if released is not None:
            rows = release_rows(self.snapshots, repos[0], all_columns[0], query, flt, released, org_table)
            more_rows = released.more
            trimmed = trimmed_note(all_columns[0], released, query)
            notes = released.notes + ((trimmed,) if trimmed else ())
        if query.by in ("person", "org", "repo", "team") and not (query.by == "repo" and merged is not None):
            # the order every face shows (CSV and JSON take rows as they come), and so the rows top:N keeps
            # (by_repo_merged gives its rows in that order already)
            rows.sort(key=table_order)
        if query.top is not None and query.by in ("person", "org", "repo", "team"):  # by:release: _release_ranges
            more_rows = max(0, len(rows) - query.top)
            tie = tie_note(rows, query.top, query.by)
            notes = notes + ((tie,) if tie else ())
            rows = rows[:query.top]
        trend_bucket = self._trend_bucket(query, keys, today)
        trend_last = flt.until_day if flt.until_day is not None else (to_epoch_day(today) if flt.since_day is not None else None)
        if query.by == trend_bucket and trend_last == flt.until_day:
            trend = rows  # the breakdown is already that series
        else:
            trend = col.by_period(selections, keys, trend_bucket, first_day=flt.since_day, last_day=trend_last,
                                  person_days_only=True)
        as_of = [r.last_success_at for r in repos if r.last_success_at]
        report = Report(repos=tuple(r.name for r in repos), since=query.since, until=query.until,
                      scope_words=query.words(), totals=totals, by=query.by, rows=tuple(rows),
                      trend_bucket=trend_bucket, trend=tuple(trend),
                      skipped=sum(s.skipped for s in selections),
                      data_as_of=min(as_of) if len(as_of) == len(repos) and as_of else None,
                      paths=query.paths, exclude_paths=query.exclude_paths,
                      data_ends=from_epoch_day(data_ends) if data_ends is not None else None,
                      range=query.range.token().removeprefix("range:") if query.range else None,
                      first_day=from_epoch_day(int((keys & 0xFFFFFFFF).min())) if len(keys) else None,
                      last_day=from_epoch_day(int((keys & 0xFFFFFFFF).max())) if len(keys) else None,
                      asked=query.repos, scope=query.scope.token(), authors=query.authors, orgs=query.orgs,
                      mailmap=query.mailmap, bots=query.bots,
                      more_rows=more_rows, coauthors=query.coauthors, coauthor_commits=coauthor_commits,
                      coauthor_active_days=coauthor_days, release_tags=query.tags, prereleases=query.prereleases,
                      release_series=query.release_series,
                      typical=typical_release(rows, query.release_series) if released is not None else None,
                      notes=notes)
        if query.range is not None and repos:
            report = dataclasses.replace(report, **self._range_days(repos[0], query.range, author_selections))
        caveats = self._caveats(query, viewer, about_themselves, all_columns, masks, flt, keys, author_keys, disjoint,
                                released is not None)
        if caveats:
            report = dataclasses.replace(report, notes=report.notes + tuple(caveats))
        calibrated = calibrations.applied(self.index, query.calibrated, totals.two_gad,
                                          seen=lambda measured_on: self.catalog.sees_all(viewer, measured_on))
        if calibrated is not None:  # `calibrated:NAME`, or the default calibration (none saved: nothing changes)
            report = dataclasses.replace(report, calibrated=calibrated)
        if query.vs_fte:  # over the very pairs counted: every filter, co-authors when on
            from .fte import fte
            from .snapshots import snapshots_key

            # kept per question, threshold and day (today cuts the last half-year) in the bounded cache, as the
            # masks are: a question asked again costs a look-up
            shaped = dataclasses.replace(query, top=None, format=None, public=False, vs_cocomo=False,
                                         calibrated=None, cocomo_mode="organic",
                                         by="release" if released is not None else None)
            model = self.snapshots.masks.get_or_compute(
                snapshots_key(all_columns, "fte", shaped, today),
                lambda: fte(keys, query.fte_threshold, query.since, query.until, today))
            report = dataclasses.replace(report, fte=model)
        if totals.person_days == 0:
            report = dataclasses.replace(report, hint=self._why_zero(query, repos, data_ends, org_table, active,
                                                                     all_columns))
        access_notes = [f"{hidden:,} of {literal(project)}'s repositories are left out: you are not in their audience."
                        for project, hidden in resolved.hidden]
        if viewer.admin and not viewer.operator and viewer.also is None:  # an admin sees all: say what others would not
            access_notes += [f"{literal(r.name)} is restricted: this answer is yours, and Share posts it only in a "
                             f"channel of its audience ({command('access ' + r.name)} says who may see it)."
                             for r in repos if not audience_of(r.audience).everyone][:3]
        team_notes = [n for n in [unmatched_note(matched)] if n]
        if query.by == "team":
            team_notes.append("A person in two groups counts in both rows and once in the total.")
        access_notes += team_notes
        if person_note or access_notes:
            report = dataclasses.replace(report, notes=report.notes + tuple(access_notes)
                                         + ((person_note,) if person_note else ()))
        failing = [r for r in repos if r.last_error]
        if failing:  # figures from before a sync that keeps failing: say so wherever they are shown
            now = utcnow()
            report = dataclasses.replace(report, notes=report.notes + tuple(sync_failed_note(r, now) for r in failing))
        if query.vs_cocomo:
            from .cocomo import SlocCache, with_cocomo  # runs a line counter only when asked

            report = with_cocomo(self.cocomo_heads(repos, query), query, report, SlocCache(self.index),
                                 self.settings.data_dir / "tmp")
        return report

    @staticmethod
    def _coauthors_unread(repo: RepoRow) -> GadError:
        return GadError(f"`{repo.name}` is still reading its commits' `Co-authored-by:` trailers (they come with "
                        f"the changed paths, after the commits); try `coauthors:on` again in a few minutes, "
                        f"or run {command('sync ' + repo.name)} if this stays.")

    def _caveats(self, query: Query, viewer: Viewer, about_themselves: bool, all_columns: list, masks: list,
                 flt: col.Filter, keys: np.ndarray, author_keys: np.ndarray, disjoint: bool, releases: bool) -> list[str]:
        """Notes that say when the figure may mislead (bot/engine/caveats.py): a tool-like account with a large
        share, one name under several e-mails, a large share only from outside the default branch."""
        from . import caveats

        if not len(keys):
            return []
        from .snapshots import snapshots_key

        people_detail = self.settings.person_detail != "admins" or viewer.reads_people or about_themselves
        # the notes depend on the pairs counted, so on every token that shapes them, not on how they are shown
        shaped = dataclasses.replace(query, top=None, format=None, public=False, vs_cocomo=False, vs_fte=False,
                                     fte_threshold=12, calibrated=None, cocomo_mode="organic",
                                     by="release" if releases else None)

        def people_notes() -> tuple[str, ...]:
            names = [caveats.names_of(self.index, columns, query.mailmap) for columns in all_columns]
            found = caveats.tool_notes(names, keys, self.snapshots.people_names, people_detail)
            if not query.authors:  # `author:` picked the people: their several addresses are the asker's choice
                several = caveats.several_emails_note(names, keys, self.snapshots.people_names, people_detail)
                found += [several] if several else []
            return tuple(found)

        notes = list(self.snapshots.masks.get_or_compute(
            snapshots_key(all_columns, "people notes", shaped, people_detail), people_notes))
        if query.scope.kind == "default" and query.range is None and not releases and not query.orgs:
            # kept per question and snapshot: when it counts a second time (a repository with many commits off the
            # default branch), only the first asking pays; "" for no note, since None is never cached
            key = snapshots_key(all_columns, "outside default", flt.since_day, flt.until_day, query.mailmap,
                                query.bots, query.authors, query.paths, query.exclude_paths, query.coauthors)
            outside = self.snapshots.masks.get_or_compute(
                key, lambda: caveats.outside_default_note(all_columns, masks, flt, author_keys, disjoint) or "")
            notes += [outside] if outside else []
        return notes

    def _active(self, all_columns: list[col.RepoColumns], masks: list, flt: col.Filter, query: Query,
                org_table) -> Active:
        """Who is active in this question's scope (every filter but `author:`), with their first and last day
        (bot/engine/filters.py `Active`): asked only to word a refusal or a zero."""
        def active(globs: tuple[str, ...] | None, with_period: bool) -> dict[str, tuple[date, date]]:
            narrowed = dataclasses.replace(flt, allowed_people=self.snapshots.allowed_people(globs) if globs else None,
                                           since_day=flt.since_day if with_period else None,
                                           until_day=flt.until_day if with_period else None)
            selections = [col.select(columns, narrowed, mask) for columns, mask in zip(all_columns, masks)]
            if query.orgs:
                wanted = org_table.matching(query.orgs)
                selections = [col.keep(s, wanted[org_table.orgs_of(s.persons, s.days)]) for s in selections]
            persons = np.concatenate([s.persons for s in selections] or [np.zeros(0, np.int64)]).astype(np.int64)
            days = np.concatenate([s.days for s in selections] or [np.zeros(0, np.int32)])
            if not len(persons):
                return {}
            order = np.lexsort((days, persons))
            persons, days = persons[order], days[order]
            firsts = np.flatnonzero(np.r_[True, persons[1:] != persons[:-1]])
            lasts = np.r_[firsts[1:], len(persons)] - 1
            names = self.snapshots.people_names(persons[firsts])
            return {names[int(persons[a])]: (from_epoch_day(int(days[a])), from_epoch_day(int(days[b])))
                    for a, b in zip(firsts, lasts)}

        return active

    def _why_zero(self, query: Query, repos: list[RepoRow], data_ends: int | None, org_table,
                  active: Active, all_columns: list | None = None) -> str | None:
        """What a zero figure probably meant to ask (bot/engine/zeros.py words it)."""
        from .zeros import why_zero

        def reversed_range_counts() -> bool:
            swapped = RefRange(query.range.end, query.range.start)
            lists = lambda span: any(bool(self.snapshots.range_mask(r, self.snapshots.columns_of(r), span).any()) for r in repos)  # noqa: E731
            return not lists(query.range) and lists(swapped)  # empty as asked (not just by the period), full reversed

        def same_commit_range() -> bool:
            ends = lambda r: {self.snapshots.resolve_ref(r, self.snapshots.columns_of(r), name)  # noqa: E731
                              for name in (query.range.start, query.range.end)}
            return all(len(ends(r)) == 1 for r in repos)

        return why_zero(query, data_ends=from_epoch_day(data_ends) if data_ends is not None else None,
                        reversed_range_counts=reversed_range_counts,
                        organizations=lambda: _orgs_present(org_table, all_columns or [], query.mailmap),
                        authors=lambda: author_zero_words(self.index, repos, query, active),
                        same_commit_range=same_commit_range)

    def cocomo_heads(self, repos: Iterable[RepoRow], query: Query) -> list:
        """Where `vs:cocomo` counts lines: each repository's range end, named branch, or default branch head."""
        from .cocomo import Head
        from ..store.mirrors.mirror import Mirror  # pygit2 only when lines are counted

        heads = []
        for repo in repos:
            mirror = Mirror(repo.mirror_path)
            tip = self.range_end_oid(repo, query.range) if query.range else self.head_tip(repo, mirror, query.scope)
            heads.append(Head(repo.name, mirror, tip))
        return heads

    def head_tip(self, repo: RepoRow, mirror: "Mirror", scope) -> bytes:
        """The commit 'at the head of the scope': the named branch's tip for branch:NAME, else the default branch's."""
        if scope.kind == "branch" and scope.branch != "HEAD":
            tip = mirror.branch_tip(scope.branch)
            if tip is None:
                raise QueryError(f"`{repo.name}` has no branch `{scope.branch}` to count source lines at; "
                                 "name one of its branches with `branch:NAME`.")
            return tip
        tip = self.index.stored_tips(repo.id).get("HEAD")
        if tip is None:
            raise QueryError(f"`{repo.name}` has no default branch, so COCOMO has no head to count source lines at; "
                             "name a branch with `branch:NAME vs:cocomo`.")
        return tip

    def _range_days(self, repo: RepoRow, span: RefRange, selections: list) -> dict:
        """The days of `range:A..B`'s ends (their commits' author days, in the first repository asked) and the
        counted commits authored before A's day: Report fields."""
        columns = self.snapshots.columns_of(repo)
        days = columns.store.history.days
        day_of = lambda row: from_epoch_day(int(days[row])) if days[row] != col.BAD_DAY else None  # noqa: E731
        end_day = day_of(self.snapshots.resolve_ref(repo, columns, span.end))
        start_day = day_of(self.snapshots.resolve_ref(repo, columns, span.start)) if span.start else None
        older = 0
        if start_day is not None:
            limit = to_epoch_day(start_day)
            older = col.distinct_count([s.commit_ids[s.days < limit] for s in selections])
        return {"range_start_day": start_day, "range_end_day": end_day, "range_older_commits": older}

    def range_end_oid(self, repo: RepoRow, span: RefRange) -> bytes:
        """The full id of a range's end (for `vs:cocomo`: lines are counted at B)."""
        columns = self.snapshots.columns_of(repo)
        return self.snapshots.oid_of_row(repo, columns, self.snapshots.resolve_ref(repo, columns, span.end))

    # -- organizations: `by:org`, `org:` ---------------------------------------
    def org_rules(self):
        """The operator's organization rules (GAD_ORG_FILE), read again whenever the file changes."""
        return self._org_rules_entry()[1]

    def _org_rules_entry(self) -> tuple:
        """(the file's signature, its rules)."""
        from . import orgs

        signature = orgs.file_signature(self.settings.org_file)
        with self._lock:
            cached = getattr(self, "_org_rules", None)
        if cached is not None and cached[0] == signature:
            return cached
        entry = (signature, orgs.load_rules(self.settings.org_file))
        with self._lock:
            self._org_rules = entry
        return entry

    def org_table(self):
        """Every person's organization as arrays (bot/engine/orgs.py), rebuilt when people or the rules change."""
        from . import orgs

        signature, rules = self._org_rules_entry()
        count, top = self.index.execute("SELECT count(*), coalesce(max(id), 0) FROM people").fetchone()
        key = (signature, count, top)  # a changed file or new people: a new table
        with self._lock:
            cached = getattr(self, "_org_table", None)
        if cached is not None and cached[0] == key:
            return cached[1]
        people = [(int(r[0]), str(r[1])) for r in self.index.execute("SELECT id, email FROM people")]
        table = orgs.OrgTable.build(people, rules)
        with self._lock:
            self._org_table = (key, table)
        return table

    def domains(self, query: Query, today: date | None = None) -> list:
        """`gad-bot orgs`: every e-mail domain among the query's counted people, with its organization and 2GAD."""
        from . import orgs
        from ..metric import DomainRow

        report = self.report(dataclasses.replace(query, by="person"), today)
        rules = self.org_rules()
        found: dict[str, dict] = {}
        for row in report.rows:
            domain = orgs.domain_of(row.key)
            entry = found.setdefault(domain, {"people": 0, "person_days": 0, "commits": 0, "by_email": 0})
            entry["people"] += 1
            entry["person_days"] += row.totals.person_days
            entry["commits"] += row.totals.commits
            entry["by_email"] += row.key in rules.emails or row.key in rules.dated
        out = []
        for domain, entry in found.items():
            ruled = rules.domain_rule(domain) if domain else None
            fallback = orgs.default_affiliation(domain)
            out.append(DomainRow(domain=domain or "(none)", registrable=orgs.registrable_domain(domain) or "",
                                 org=ruled if ruled is not None else fallback.org,
                                 how="domain rule" if ruled is not None else fallback.how,
                                 person_days=entry["person_days"], developers=entry["people"],
                                 commits=entry["commits"], people_by_email_rule=entry["by_email"]))
        out.sort(key=lambda d: (d.matched, -d.person_days, d.domain))
        return out

    # -- side by side: `compare` ------------------------------------------------
    def _compare_item(self, command: Compare, item, today: date | None, viewer: Viewer = OPERATOR,
                      teams: Teams | None = None) -> Report:
        """One item's report; a mistake in its `NAME:PATH` is told in the form typed (`git:bultin`, not `path:`)."""
        try:
            return self.report(dataclasses.replace(command.item_query(item), by="month"), today, viewer, teams)
        except QueryError as error:
            if item.path is None or item.path in command.query.paths:
                raise
            typed = f"`path:{item.path}`"
            if typed not in str(error):
                raise
            raise QueryError(str(error).replace(typed, f"`{item.label}`")
                             .replace("`path:", f"`{item.name}:")) from None

    def compare(self, command: Compare, today: date | None = None, viewer: Viewer = OPERATOR,
                teams: Teams | None = None):
        """One row per item over the same tokens (each item's report, by month, boiled down)."""
        from ..metric import CompareReport, CompareRow

        with self.snapshots.masks.staged():  # one item refused: nothing cached for the others either
            reports = [self._compare_item(command, item, today, viewer, teams) for item in command.items]
        rows = [CompareRow.from_report(item.label, report) for item, report in zip(command.items, reports)]
        query = command.query
        as_of = [r.data_as_of for r in reports]
        cocomo_notes = tuple(dict.fromkeys(n for r in reports for n in r.notes if n.startswith(("COCOMO", "vs:cocomo"))))
        # what a zero probably meant (a reversed range, since: after the data ...), as `report` says it, per item
        zero_notes = tuple(f"{item.label}: {report.hint}" for item, report in zip(command.items, reports) if report.hint)
        own_ranges = all(item.range for item in command.items) and query.range is None
        scope_words = dataclasses.replace(query, paths=()).words()
        if own_ranges:  # not "all branches and tags": each item counts what git's A..B lists for its own range
            scope_words = scope_words.replace(query.scope.words(), "each item's own range (what git's A..B lists)", 1)
        return CompareReport(rows=tuple(rows), since=query.since, until=query.until,
                             scope_words=scope_words, filters=tuple(_filter_tokens(query)),
                             range=query.range.token().removeprefix("range:") if query.range else None,
                             vs_cocomo=query.vs_cocomo,
                             data_as_of=min(as_of) if as_of and all(as_of) else None,
                             notes=zero_notes + cocomo_notes)

    @staticmethod
    def _trend_bucket(query: Query, keys: np.ndarray, today: date) -> str:
        if query.since is not None:
            end = query.until or today
            return "week" if (end - query.since).days <= 26 * 7 else "month"
        if len(keys):
            days = keys & 0xFFFFFFFF
            return "week" if int(days.max() - days.min()) <= 26 * 7 else "month"
        return "month"


def _orgs_present(org_table, all_columns: list, mailmap: bool) -> list[str]:
    """The organizations of the people who committed to these repositories (whatever the filters), for a zero's hint:
    the table knows everyone's, those of repositories the person may not see included (a committer's domain is a
    fact about where they committed)."""
    if org_table is None:
        return []
    found: set[int] = set()
    for columns in all_columns:
        persons = (columns.person_mm if mailmap else columns.person_raw)[columns.author_ids]
        found.update(np.unique(org_table.orgs_of(persons, columns.days)).tolist())
    return [org_table.names[i] for i in sorted(found)]


def tie_note(rows: list, top: int, by: str) -> str | None:
    """`top:N` that cuts through rows of equal active days: which of them make the table is only the order's
    tie-break (commits, then name), so say how many tie and how many were left out."""
    if len(rows) <= top or rows[top - 1].totals.person_days != rows[top].totals.person_days:
        return None
    days = rows[top].totals.person_days
    tied = [r for r in rows if r.totals.person_days == days]
    left = sum(1 for r in rows[top:] if r.totals.person_days == days)
    kind = {"person": ("person", "people"), "org": ("organization", "organizations"),
            "repo": ("repository", "repositories"), "team": ("team", "teams")}.get(by, ("row", "rows"))
    last = rows.index(tied[-1]) + 1
    return (f"top:{top} cuts through a tie: {len(tied):,} {kind[1]} have {days:,} active day{'s' * (days != 1)}, and "
            f"{left:,} of them {'is' if left == 1 else 'are'} left out only by the order's tie-break (most commits, "
            f"then name); top:{last} shows them all.")


def _filter_tokens(query: Query) -> list[str]:
    """The tokens besides the period and range that shape every item of a compare, as typed."""
    tokens = [t for t in query.scope_tokens() if not t.startswith(("since:", "until:", "range:", "branch:", "refs:"))]
    tokens += [f"author:{a}" for a in query.authors]
    tokens += (["coauthors:on"] if query.coauthors else []) + (["vs:cocomo"] if query.vs_cocomo else [])
    return tokens


def sync_failed_note(repo: RepoRow, now: datetime) -> str:
    """'web: data as of 3 days ago (2026-12-01 08:00 UTC): the last sync failed; ...' for a report's notes."""
    if repo.last_success_at is None:
        as_of = "data as of its first index"
    else:
        seconds = (now - repo.last_success_at).total_seconds()
        days, hours = int(seconds // 86400), int(seconds // 3600)
        age = f"{days} day{'s' * (days != 1)} ago" if days else f"{hours} hour{'s' * (hours != 1)} ago" if hours \
            else "less than an hour ago"
        as_of = f"data as of {age} ({repo.last_success_at.strftime('%Y-%m-%d %H:%M')} UTC)"
    return (f"{repo.name}: {as_of}: the last sync failed; gad-bot tries again by itself, and "
            f"{command('repos')} says why.")
