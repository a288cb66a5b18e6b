"""A forge organization tracked as a whole: list it, track each repository, keep the two in step.

    tracker = OrgTracker(engine)
    tracker.track(owner)   # OrgTrackResult: "acme: 312 repositories (41 archived), 9 forks and 3 empty ones left out."
    tracker.sync()         # [OrgSyncResult]: new repositories tracked, renamed ones renamed, deleted ones marked gone

Each repository is an ordinary tracked repository (its own name, history and syncs); the
organization is a project of the same name that reports, compare and subscriptions can name.
Repositories are matched by the forge's own id, so one renamed or transferred upstream keeps its
history and takes the new name; one deleted upstream stays counted, marked gone.

Speed: clones run concurrently, GAD_FORGE_FETCHES at a time (each in its own child process: I/O
bound), and each cloned repository is indexed in a pool of worker processes, one per CPU, never
in the calling (serving) process. Every finished repository is recorded as it finishes, so a
`kill -9` leaves each finished one finished and tracking again goes on with the rest.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from datetime import timedelta
from ..errors import GadError, MirrorError, QueryError
from .audiences import ADMINS_AUDIENCE, EVERYONE_AUDIENCE, Audience
from ..store.forges import ForgeClient, ForgeError, Forges, Listing, OwnerRef, is_gitlab_group, list_owner
from ..store.index import utcnow
from .lanes import IndexPool, index_workers, sync_in_lanes
from ..store.orgindex import DROPPED, FAILED, GONE, PENDING, TRACKED, OrgIndex, OrgRepoRow, OrgRow, repo_name_for
from .lookalikes import lookalike

log = logging.getLogger(__name__)

GONE_NOTE = "deleted upstream (no longer in {org}'s listing); its history stays counted"
GONE_RETRY = timedelta(days=3650)  # a repository deleted upstream is not fetched again
PROGRESS_SECONDS = 15.0  # how often a long track or sync of an organization says where it stands in the log


@dataclass(frozen=True)
class OrgProgress:
    """Where tracking an organization stands, for one progress message that is updated."""

    org: str
    phase: str  # listing, rate limit, repositories
    done: int  # repositories finished
    total: int  # repositories to track
    commits: int  # commits indexed so far
    seconds_left: float | None = None
    waiting: float = 0.0  # seconds of rate-limit wait announced


OrgProgressFn = Callable[[OrgProgress], None]


@dataclass(frozen=True)
class OrgChange:
    """One change an organization's listing brought, announced in the channels subscribed to it."""

    org: str
    kind: str  # new, renamed, gone, back
    name: str  # the repository's name now
    old_name: str | None = None

    def sentence(self) -> str:
        if self.kind == "new":
            return f"`{self.name}` is new in {self.org}: now tracked."
        if self.kind == "renamed":
            return f"`{self.old_name}` was renamed or moved upstream: now `{self.name}`, its history kept."
        if self.kind == "gone":
            return f"`{self.name}` was deleted upstream: its history stays counted in {self.org}."
        return f"`{self.name}` is back in {self.org}'s listing."


@dataclass(frozen=True)
class OrgTrackResult:
    org: str  # the project's name
    url: str
    repositories: int  # tracked now (including ones gone upstream)
    archived: int
    forks_left_out: int
    empty_left_out: int
    new: int  # tracked by this call
    commits: int  # commits indexed by this call
    refused: tuple[tuple[str, str], ...] = ()  # (full name, why) clone URLs not fetched
    failed: tuple[tuple[str, str], ...] = ()  # (full name, error)
    changes: tuple[OrgChange, ...] = ()
    seconds: float = 0.0
    waited_seconds: float = 0.0

    def sentence(self) -> str:
        """e.g. "acme: 312 repositories (41 archived), 9 forks and 3 empty ones left out." """
        text = f"{self.org}: {self.repositories:,} repositor{'y' if self.repositories == 1 else 'ies'}"
        if self.archived:
            text += f" ({self.archived:,} archived)"
        left = []
        if self.forks_left_out:
            left.append(f"{self.forks_left_out:,} fork{'s' if self.forks_left_out != 1 else ''}")
        if self.empty_left_out:
            left.append(f"{self.empty_left_out:,} empty one{'s' if self.empty_left_out != 1 else ''}")
        if left:
            text += ", " + " and ".join(left) + " left out"
        # a forge's full name is a stranger's text (a newline, `<!channel>`): it is shown as the name it would be
        # tracked under, made of the same sanitised parts
        if self.refused:
            name, why = self.refused[0]
            text += (f"; {len(self.refused):,} not fetched because {why} (e.g. {repo_name_for(name)})")
        if self.failed:
            name, why = self.failed[0]
            text += f"; {len(self.failed):,} could not be tracked ({repo_name_for(name)}: {why.rstrip('.')})"
        return text + "."


@dataclass(frozen=True)
class OrgSyncResult:
    org: str
    repositories: int
    changes: tuple[OrgChange, ...] = ()
    failed: tuple[tuple[str, str], ...] = ()
    error: str | None = None  # the listing failed: nothing changed
    waiting: int = 0  # listed repositories that could not be cloned before, waiting for their next try


def name_part(raw: str) -> str:
    """A stranger's word (a forge's `id`) as one part of a name: ASCII letters, digits, `.`, `_`, `-`, at most 40;
    a word with none of them is its SHA-256's first 12 hex digits. The `id` is an integer on every forge, but a
    listing is a stranger's text: `7\n<!channel>` once became part of a tracked name whole."""
    part = re.sub(r"[^a-z0-9_.\-]+", "-", raw.lower()).strip(".-")[:40].strip(".-")
    if not part:
        import hashlib

        part = hashlib.sha256(raw.encode("utf-8", "replace")).hexdigest()[:12]
    return part


def project_name_for(owner: OwnerRef) -> str:
    return repo_name_for(owner.owner)


class OrgTracker:
    """Owned by an Engine (bot/engine/engine.py), which it is handed rather than imports: the engine imports it."""

    def __init__(self, engine):
        self.engine = engine
        self.settings = engine.settings
        self.rows = OrgIndex(engine.index)
        self.forges = Forges.from_settings(engine.settings)

    # -- recognising an organization's URL -------------------------------------------------------
    def owner_of(self, url: str, *, guarded: bool = False) -> OwnerRef | None:
        owner = self.forges.owner_of(url)
        if owner is not None and owner.forge.kind == "gitlab" and "/" in owner.owner:
            if not is_gitlab_group(owner, self._client(owner, guarded)):
                return None  # a project: an ordinary repository URL
        return owner

    def org_of(self, host: str, owner: str) -> str | None:
        row = self.rows.org_for(host, owner)
        return row.name if row else None

    def _client(self, owner: OwnerRef, guarded: bool, progress: OrgProgressFn | None = None,
                org: str = "") -> ForgeClient:
        def said(phase: str, done: int, total: int) -> None:
            if progress is not None:
                progress(OrgProgress(org or owner.owner, phase, done if phase == "listing" else 0, 0, 0,
                                     waiting=done if phase == "rate limit" else 0))

        token = self.settings.https_tokens.get(owner.forge.hostname)
        return ForgeClient(token=token, guard=self.engine.policy if guarded else None, progress=said)

    def _listing(self, owner: OwnerRef, guarded: bool, progress: OrgProgressFn | None, org: str) -> Listing:
        check: Callable[[str], str] | None = None
        if guarded:
            from ..store.sources import check_remote_source

            policy = self.engine.policy

            def check_guarded(url: str) -> str:
                return check_remote_source(url, policy)
            check = check_guarded
        return list_owner(owner, self._client(owner, guarded, progress, org),
                          max_repos=self.settings.forge_max_repos, policy_check=check)

    # -- tracking ----------------------------------------------------------------------------------
    def track(self, owner: OwnerRef, *, forks: bool = False, guarded: bool = False,
              progress: OrgProgressFn | None = None) -> OrgTrackResult:
        """List `owner`, track each repository (one per CPU), and make the project; again: go on with the rest."""
        started = time.monotonic()
        name = project_name_for(owner)
        org = self.rows.org_for(owner.forge.host, owner.owner)
        if org is None:
            if self.engine.index.repo(name):
                raise QueryError(f"`{name}` is already a repository's name, so the organization cannot be a project "
                                 "of that name; untrack that repository first.")
            if name in self.engine.index.projects():
                raise QueryError(f"A project named `{name}` already exists; remove it with `project remove {name}` "
                                 "to track the organization under that name.")
        listing = self._listing(owner, guarded, progress, name)  # nothing is stored before the listing is good
        if org is None:
            org = self.rows.add_org(name, owner.forge.host, owner.forge.kind, owner.owner, owner.url, forks, guarded)
        elif org.forks != forks:
            self.rows.set_forks(org.id, forks)
            org = self.rows.org(org.name)  # type: ignore[assignment]
        outcome = self._reconcile(org, listing, progress, announce_new=False)
        self.rows.listed(org.id, None)
        self.engine.index.set_project(org.name, self._member_ids(org), self._audience(org).text())
        return OrgTrackResult(
            org=org.name, url=owner.url, repositories=len(self._member_ids(org)), archived=outcome.archived,
            forks_left_out=outcome.forks_left_out, empty_left_out=outcome.empty_left_out, new=outcome.new,
            commits=outcome.commits, refused=listing.refused + tuple(outcome.refused), failed=tuple(outcome.failed),
            changes=tuple(outcome.changes), seconds=time.monotonic() - started, waited_seconds=listing.waited_seconds)

    def sync(self, names: list[str] | None = None, progress: OrgProgressFn | None = None, *,
             fetch: bool = False) -> list[OrgSyncResult]:
        """List each organization again: track new repositories, rename renamed ones, mark deleted ones gone.

        With fetch=True (the periodic sync) every repository of the organization that is due is fetched too,
        in GAD_FORGE_FETCHES lanes (each fetch a child forked from the fork server), and what changed is indexed
        in worker processes; a repository whose fetch brought nothing is not (Indexer.is_current)."""
        orgs = self.rows.orgs()
        if names is not None:
            wanted = set(names)
            orgs = [o for o in orgs if o.name in wanted]
        results = []
        for org in orgs:
            owner = self._owner_of_row(org)
            try:
                listing = self._listing(owner, org.guarded, progress, org.name)
            except GadError as error:
                self.rows.listed(org.id, str(error))
                log.warning("listing %s failed: %s", org.name, error)
                results.append(OrgSyncResult(org.name, len(self._member_ids(org)), error=str(error)))
                continue
            outcome = self._reconcile(org, listing, progress, announce_new=True)
            self.rows.listed(org.id, None)
            self.engine.index.set_project(org.name, self._member_ids(org), self._audience(org).text())
            if fetch:
                outcome.failed.extend(self._sync_members(org, outcome.fresh))
            results.append(OrgSyncResult(org.name, len(self._member_ids(org)), tuple(outcome.changes),
                                         tuple(outcome.failed), waiting=outcome.waiting))
        return results

    def _sync_members(self, org: OrgRow, skip: set[int]) -> list[tuple[str, str]]:
        """Fetch every repository of `org` that is due (not gone upstream, not in back-off, not being synced by
        another process right now, not just cloned), in lanes; then index each in the worker processes."""
        index, now = self.engine.index, utcnow()
        due = []
        for row in self.rows.repos(org.id):
            repo = index.repo_by_id(row.repo_id) if row.state == TRACKED and row.repo_id is not None else None
            if repo is None or repo.id in skip or repo.in_place or not repo.mirror_path.exists() \
                    or (repo.next_attempt_at and repo.next_attempt_at > now):
                continue
            due.append(repo)
        results = sync_in_lanes(self.engine, due, label=org.name,
                                rewrite=lambda error: listed_but_not_served(error, org.name))
        return [(r.name, r.error) for r in results if r.error]

    def backoff(self, failures: int) -> timedelta:
        """How long a repository that failed `failures` times in a row waits for its next try (as a sync's)."""
        return timedelta(minutes=min(self.settings.sync_interval_minutes * 2 ** min(failures, 10), 24 * 60))

    def failed(self, viewer=None) -> list:
        """The repositories organizations list that could not be tracked (`FailedRepo`s), those of organizations
        `viewer` may see (all when None)."""
        rows = self.rows.failed()
        if viewer is None:
            return rows
        if viewer.operator:
            return rows
        hidden = set(self.engine.catalog.unseen(viewer, sorted({r.org for r in rows})))
        # a private one (as the forge lists it) would start as `admins`: only they see that it failed
        return [r for r in rows if r.org not in hidden and (viewer.admin or not r.private)]

    def _owner_of_row(self, org: OrgRow) -> OwnerRef:
        forge = self.forges.forge_for(org.host)
        if forge is None or forge.kind != org.kind:
            raise ForgeError(f"The forge {org.host} of `{org.name}` is no longer declared; add it to GAD_FORGES again.")
        return OwnerRef(forge, org.owner, org.url)

    def _member_ids(self, org: OrgRow) -> list[int]:
        return [r.repo_id for r in self.rows.repos(org.id) if r.repo_id is not None and r.state in (TRACKED, GONE)]

    # -- listing against what is tracked --------------------------------------------------------------
    def _reconcile(self, org: OrgRow, listing: Listing, progress: OrgProgressFn | None, *,
                   announce_new: bool) -> "_Outcome":
        """announce_new: a periodic (or `sync`) listing, whose new repositories are announced and whose failed ones
        wait out their back-off; else `track URL` again, which tries every failed one now."""
        retry_failed = not announce_new
        outcome = _Outcome()
        known = {r.forge_id: r for r in self.rows.repos(org.id)}
        listed_ids = set()
        to_track: list[OrgRepoRow] = []
        now = utcnow()
        # An organization's repositories stay under its owner: a listing naming `victim/web` for org `evil` would
        # track it under the victim's name (its clone URL is checked in bot/store/forges.py). Such an entry is
        # not part of the listing: one tracked before is marked gone.
        under = repo_name_for(org.owner) + "/"
        listed = []
        for repo in listing.repos:
            if repo_name_for(repo.full_name).startswith(under):
                listed.append(repo)
            else:
                outcome.refused.append((repo.full_name, f"it is named outside {org.owner}; gad-bot tracks only the "
                                                        "organization's own repositories"))
        # Look-alikes (bot/engine/lookalikes.py) of a tracked name or of another name of this listing: refused when
        # they would become a name (a new repository, a rename)
        names = {*self.engine.index.repo_names(), *(repo_name_for(r.full_name) for r in listed)}

        def looks_like_another(repo) -> bool:
            why = lookalike(repo_name_for(repo.full_name), names)
            if why is not None:
                outcome.refused.append((repo.full_name, why))
            return why is not None

        for repo in listed:
            listed_ids.add(repo.forge_id)
            if repo.fork and not org.forks:
                outcome.forks_left_out += 1
                continue
            if repo.empty:
                outcome.empty_left_out += 1
                continue
            outcome.archived += repo.archived
            row = known.get(repo.forge_id)
            if (row is None or row.state in (PENDING, FAILED)) and looks_like_another(repo):
                continue
            self.rows.upsert(org.id, repo.forge_id, repo.full_name, repo.clone_url, repo.archived, PENDING,
                             private=repo.private)
            if row is not None and row.state == FAILED and not retry_failed and row.next_attempt_at is not None \
                    and row.next_attempt_at > now:
                outcome.waiting += 1  # failed before: tried again once its back-off is over
                continue
            if row is None or row.state in (PENDING, FAILED):
                to_track.append(OrgRepoRow(org.id, repo.forge_id, repo.full_name, repo.clone_url,
                                           row.repo_id if row else None, PENDING, repo.archived, None,
                                           private=repo.private, failures=row.failures if row else 0))
                continue
            if row.state == DROPPED:
                continue
            tracked = self.engine.index.repo_by_id(row.repo_id) if row.repo_id is not None else None
            if tracked is None:  # an admin untracked it: leave it out from now on
                self.rows.set_state(org.id, repo.forge_id, DROPPED)
                continue
            if repo.private and not row.private:
                self._closed_upstream(tracked)
            if row.state == GONE:
                self.rows.set_state(org.id, repo.forge_id, TRACKED, repo_id=tracked.id)
                self.engine.index.record_attempt(tracked.id, None, now)
                outcome.changes.append(OrgChange(org.name, "back", tracked.name))
            wanted_name = repo_name_for(repo.full_name)
            if tracked.name != wanted_name or tracked.source != repo.clone_url:
                new_name = wanted_name if tracked.name != wanted_name and not self.engine.index.repo(wanted_name) \
                    and not looks_like_another(repo) else tracked.name
                self.rows.rename_repo(tracked.id, tracked.name, new_name, repo.clone_url)
                self._set_remote(tracked, repo.clone_url)
                if new_name != tracked.name:
                    outcome.changes.append(OrgChange(org.name, "renamed", new_name, tracked.name))
        for row in known.values():
            if row.forge_id not in listed_ids and row.state in (FAILED, PENDING):
                self.rows.forget(org.id, row.forge_id)  # never tracked, and no longer listed: nothing to keep
                continue
            if row.forge_id in listed_ids or row.state != TRACKED or row.repo_id is None:
                continue
            tracked = self.engine.index.repo_by_id(row.repo_id)
            if tracked is None:
                self.rows.set_state(org.id, row.forge_id, DROPPED)
                continue
            self.rows.set_state(org.id, row.forge_id, GONE, repo_id=tracked.id)
            self.engine.index.record_attempt(tracked.id, GONE_NOTE.format(org=org.name), now, now + GONE_RETRY)
            outcome.changes.append(OrgChange(org.name, "gone", tracked.name))
        if to_track:
            self._track_rows(org, to_track, progress, outcome, announce_new)
        if outcome.refused and announce_new:  # a sync: nobody reads the result's sentence
            name, why = outcome.refused[0]
            log.warning("%s: %d listed repositories left out, e.g. %s: %s", org.name, len(outcome.refused),
                        repo_name_for(name), why)
        return outcome

    def _closed_upstream(self, tracked) -> None:
        """A repository listed public before and private now (made private upstream: its new history comes with the
        operator's token) closes to admins, as one private when first listed starts; an audience an admin gave it
        that is not `everyone` stays."""
        from .catalog import audience_of

        if tracked.audience_own and not audience_of(tracked.audience).everyone:
            return
        self.engine.index.set_audience(tracked.id, ADMINS_AUDIENCE.text(), own=True)
        log.warning("%s was made private on its forge: it is now seen by admins only (`gad-bot access %s` opens it)",
                    tracked.name, tracked.name)

    def _set_remote(self, repo, url: str) -> None:
        """A renamed repository's mirror fetches from its new URL (the old one may redirect, or not)."""
        if repo.in_place:
            return
        try:
            from ..store.mirrors.mirror import Mirror

            Mirror(repo.mirror_path).set_origin(url)
        except (GadError, OSError, AttributeError) as error:
            log.warning("could not point %s at its new URL: %s", repo.name, error)

    # -- audiences: the organization's is its project's; its repositories follow it --------------------
    def _audience(self, org: OrgRow) -> Audience:
        """The organization's audience: as an admin set it, else admins only when its listing and fetches carry
        the operator's credentials for its host (private repositories may come with them), else everyone."""
        stored = self.engine.index.project_audience(org.name)
        if stored is not None:
            return Audience.parse(stored)
        return ADMINS_AUDIENCE if org.host.partition(":")[0] in self.settings.https_tokens else EVERYONE_AUDIENCE

    def _repo_audience(self, org: OrgRow, row: OrgRepoRow) -> tuple[Audience, bool]:
        """A new repository of the organization follows the organization's audience; one the forge lists as private
        starts as `admins` of its own, until an admin opens it (opening the organization does not)."""
        if row.private:
            return ADMINS_AUDIENCE, True
        return self._audience(org), False

    # -- tracking many repositories at once ------------------------------------------------------------
    def _track_rows(self, org: OrgRow, rows: list[OrgRepoRow], progress: OrgProgressFn | None,
                    outcome: "_Outcome", announce_new: bool) -> None:
        engine, index = self.engine, self.engine.index
        guard = engine.policy if org.guarded else None
        clock = _Clock(len(rows))

        def say(phase: str = "repositories") -> None:
            if progress is not None:
                progress(OrgProgress(org.name, phase, clock.done, clock.total, clock.commits, clock.seconds_left()))

        def finished(row: OrgRepoRow, repo_id: int, result, error: str | None) -> None:
            clock.done += 1
            if error is not None:
                error = listed_but_not_served(error, org.name)
                outcome.failed.append((row.full_name, error))
                repo = index.repo_by_id(repo_id) if repo_id else None
                if repo is not None:
                    engine.untrack(repo.name)
                now = utcnow()
                self.rows.set_failed(org.id, row.forge_id, error, now, now + self.backoff(row.failures + 1))
            else:
                if row.failures:
                    self.rows.clear_failures(org.id, row.forge_id)
                clock.commits += result.new_commits if result else 0
                outcome.commits += result.new_commits if result else 0
                outcome.new += 1
                outcome.fresh.add(repo_id)
                self.rows.set_state(org.id, row.forge_id, TRACKED, repo_id=repo_id)
                index.set_project(org.name, [repo_id], self._audience(org).text())  # counted from now on
                if announce_new:
                    outcome.changes.append(OrgChange(org.name, "new", index.repo_by_id(repo_id).name))
            say()

        say()
        to_clone: list[tuple[OrgRepoRow, str]] = []
        to_index: list[tuple[OrgRepoRow, int]] = []
        claimed: set[str] = set()  # names given in this batch: two entries of one name never share one (issue 31)
        for row in rows:
            name = repo_name_for(row.full_name)
            existing = index.repo(name)
            if existing is not None and existing.source == row.clone_url and name not in claimed:
                claimed.add(name)
                to_index.append((row, existing.id))  # cloned before an interruption, or tracked on its own
                continue
            if existing is not None or name in claimed:
                # taken: the name with the forge's id, both sanitised (the id is a stranger's text too), and a
                # number after it while that is taken as well
                base = f"{name}-{name_part(row.forge_id)}"
                name, number = base, 1
                while True:
                    again = index.repo(name)
                    if again is not None and again.source == row.clone_url and name not in claimed:
                        break
                    if again is None and name not in claimed:
                        break
                    number += 1
                    name = f"{base}-{number}"
                claimed.add(name)
                if again is not None:
                    to_index.append((row, again.id))
                    continue
            claimed.add(name)
            to_clone.append((row, name))
        workers = index_workers(len(rows))
        lanes = max(1, min(self.settings.forge_fetches, len(to_clone)))
        # the store's creation lock: a clone not yet in the index is no orphan to a sweep meanwhile
        with engine.store.creating(), IndexPool(engine, workers) as pool, \
                ThreadPoolExecutor(lanes, thread_name_prefix="org-clone") as clones:
            if to_clone:
                pool.start()
            pending: dict[Future, tuple[str, OrgRepoRow, object]] = {}
            for row, repo_id in to_index:
                pending[pool.submit(repo_id)] = ("index", row, repo_id)
            cloned: list[Future] = [Future() for _ in to_clone]
            for (row, name), future in zip(to_clone, cloned):
                pending[future] = ("clone", row, name)
            for lane in range(lanes):  # each lane clones its share, one repository after another
                numbers = list(range(lane, len(to_clone), lanes))
                clones.submit(_clone_lane, engine.store, [(to_clone[n][0].clone_url, to_clone[n][1]) for n in numbers],
                              [cloned[n] for n in numbers], guard)
            while pending:
                done, _ = wait(list(pending), return_when=FIRST_COMPLETED)
                for future in done:
                    stage, row, what = pending.pop(future)
                    if stage == "clone":
                        try:
                            path = future.result()
                        except GadError as error:
                            finished(row, 0, None, str(error))
                            continue
                        audience, own = self._repo_audience(org, row)
                        repo_id = index.add_repo(str(what), row.clone_url, path, False, guarded=org.guarded,
                                                 audience=audience.text(), audience_own=own)
                        pending[pool.submit(repo_id)] = ("index", row, repo_id)
                        continue
                    try:
                        result = future.result()
                    except Exception as error:  # a worker that died (kill, out of memory): the repository stays pending
                        log.warning("indexing %s stopped: %s", row.full_name, error)
                        finished(row, int(what), None, "indexing stopped; track the organization again to go on")
                        continue
                    finished(row, int(what), result, result.error)


def listed_but_not_served(error: str, org: str) -> str:
    """A fetch's "no such repository" for one the forge lists right now: not deleted or moved, whatever git says.
    (A listed repository's git side may answer 404: no commits pushed yet, a token that lists but cannot read
    code, a forge still creating it.)"""
    from ..store.mirrors.failures import GONE_UPSTREAM

    if GONE_UPSTREAM not in error:
        return error
    head, _, rest = error.partition(GONE_UPSTREAM)
    detail = rest.split(":", 1)[0].strip() if rest.lstrip().startswith("(") else ""
    return (f"{head}its git server says there is no such repository {detail} although {org}'s listing names it: "
            f"it may have no commits yet, or the token may list it without reading its code; it is tried again "
            f"later, and untrack leaves it out.").replace("  ", " ")


def _clone_lane(store, items: list[tuple[str, str]], futures: list[Future], guard) -> None:
    """Clone `items` (source, name) one after another; each future gets the mirror's path or a MirrorError."""
    def done(number: int, path, error: str | None) -> None:
        if error is None:
            futures[number].set_result(path)
        else:
            futures[number].set_exception(MirrorError(error))

    try:
        store.create_many(items, done, guard=guard)
    except Exception as error:  # whatever is left unanswered fails with one sentence, never hangs the wait
        for future in futures:
            if not future.done():
                future.set_exception(MirrorError(f"Cloning failed: {type(error).__name__}."))


@dataclass
class _Outcome:
    archived: int = 0
    forks_left_out: int = 0
    empty_left_out: int = 0
    new: int = 0
    commits: int = 0
    failed: list[tuple[str, str]] = field(default_factory=list)
    changes: list[OrgChange] = field(default_factory=list)
    fresh: set[int] = field(default_factory=set)  # repository ids cloned by this call
    refused: list[tuple[str, str]] = field(default_factory=list)  # (full name, why): named outside, or a look-alike
    waiting: int = 0  # failed before, in back-off: not tried this time


@dataclass
class _Clock:
    total: int
    done: int = 0
    commits: int = 0
    started: float = field(default_factory=time.monotonic)

    def seconds_left(self) -> float | None:
        if not self.done or self.done >= self.total:
            return None
        return (time.monotonic() - self.started) * (self.total - self.done) / self.done
