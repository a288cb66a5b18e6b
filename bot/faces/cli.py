"""`gad-bot ...`: the operator's face. The only module that reads os.environ.

Errors raised on purpose (GadError) become one line on stderr and exit status 2;
anything else is a bug: one line with a reference id, the traceback only in the log.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from datetime import date, datetime, timezone
from functools import wraps

# OpenBLAS (numpy's, and scipy's for range:) starts a thread per CPU when it loads, and they spin a while: ~55 ms of
# CPU in every process that imports numpy, ~110 ms with scipy (docs/benchmarks.md, CLI start-up), for matrix work
# gad-bot never does (its columns are counted, sorted and masked, never multiplied). One thread, unless the
# operator set it; serve's workers inherit it. Set before anything imports numpy.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import click

from ..config import Settings
from ..errors import ConfigError, GadError, QueryError, SourceError, set_face

log = logging.getLogger("gad-bot")


def _today() -> date:
    return datetime.now(timezone.utc).date()


def _settings() -> Settings:
    return Settings.from_env(os.environ)


def _engine():
    from ..engine.engine import Engine

    return Engine.open(_settings())


def friendly(command):
    """Turn GadError into one clear line and exit 2; never show a traceback for those."""

    @wraps(command)
    def wrapper(*args, **kwargs):
        try:
            return command(*args, **kwargs)
        except GadError as error:
            click.echo(f"gad-bot: {_naming_tracked(error)}", err=True)
            sys.exit(2)
        except (click.exceptions.Exit, click.ClickException, SystemExit, KeyboardInterrupt):
            raise
        except Exception:  # a bug: keep the details in the log, give the user a reference
            import uuid

            reference = uuid.uuid4().hex[:8]
            log.exception("internal error, reference %s", reference)
            click.echo(f"gad-bot: internal error (reference {reference}); run again with "
                       "GAD_LOG_LEVEL=DEBUG for details.", err=True)
            sys.exit(1)

    return wrapper


def _naming_tracked(error: GadError) -> GadError:
    """A refusal whose example names a repository, with a tracked one in it (as `gad-bot help` shows)."""
    from ..engine.examples import name_tracked

    return name_tracked(error, _tracked_for_examples()) if isinstance(error, QueryError) else error


class _ProgressBar:
    """A rich progress bar on a terminal; silence otherwise (scripts, CI, pipes)."""

    def __init__(self, enabled: bool):
        self.enabled = enabled and sys.stderr.isatty()
        self._progress = None
        self._tasks: dict[str, int] = {}

    def __enter__(self):
        if self.enabled:
            from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn,
                                       TimeRemainingColumn)

            from rich.console import Console

            self._progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                      TimeElapsedColumn(), TimeRemainingColumn(), console=Console(stderr=True),
                                      transient=True)
            self._progress.start()
        return self

    def __exit__(self, *exc):
        if self._progress:
            self._progress.stop()

    def __call__(self, phase: str, done: int, total: int, label: str | None = None) -> None:
        if not self._progress:
            return
        label = label or {"fetch": "Fetching objects", "index": "Indexing commits",
                          "paths": "Indexing changed paths"}.get(phase, phase)
        if phase not in self._tasks:
            self._tasks[phase] = self._progress.add_task(label, total=total or None)
        self._progress.update(self._tasks[phase], completed=done, total=total or None, description=label)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="gad-bot")
def cli():
    """gad-bot: 2GAD (Git Active Days x 2, in person-days) for your repositories, in Slack and here.

    `gad-bot help` shows what a query can say; `gad-bot COMMAND --help` shows a command's options.
    """
    set_face("terminal")  # messages name `gad-bot repos`, not `/gad repos` (serve sets Slack's face back)
    try:
        settings = _settings()
        # One-shot commands print their own results; their log stays quiet unless asked for.
        level = settings.log_level if "GAD_LOG_LEVEL" in os.environ else "WARNING"
        json_logs = settings.log_format == "json"
    except ConfigError:
        level, json_logs = "WARNING", False
    from ..logs import setup_logging

    setup_logging(level, json_logs, secrets=())


def _summary(result, paths: bool = True) -> str:
    if result.error:
        return f"{result.name}: failed: {result.error}"
    if result.unchanged:
        return f"{result.name}: up to date ({result.commits:,} commits)"
    return (f"{result.name}: {result.commits:,} commits indexed "
            f"(+{result.new_commits:,} new, -{result.removed_commits:,} gone) in {result.seconds:.1f} s"
            + (f"; changed paths in {result.path_seconds:.1f} s" if paths else ""))


@cli.command()
@click.argument("source")
@click.option("--name", help="Name to use in queries (default: owner/name for forge URLs, the directory name for paths).")
@click.option("--in-place", is_flag=True, help="Register an existing local repository without copying it.")
@click.option("--forks", is_flag=True, help="For an organization's URL: track its forks too (left out by default).")
@friendly
def track(source, name, in_place, forks):
    """Mirror SOURCE (URL, user@host:path, or local path) and index it.

    The URL of a forge organization, group or user (https://github.com/ORG, https://gitlab.com/GROUP,
    https://codeberg.org/ORG, or a host in GAD_FORGES) tracks each of its repositories, and a project
    named after it; tracking it again goes on with the ones not finished.
    """
    from ..engine.query import _check_repo_word

    if name:
        _check_repo_word(name)
    source = _normalise_source(source)
    from ..store.sources import is_local_path

    if is_local_path(source):
        from ..store.mirrors.localcopy import open_local

        open_local(source)  # refuse a non-repository before the data directory is touched
    engine = _engine()
    owner = None if is_local_path(source) or in_place else engine.org_owner(source)
    if owner is not None:
        _track_org(engine, owner, name, forks)
        return
    with _ProgressBar(True) as progress:
        result = engine.track(source, name, in_place=in_place, progress=progress, paths=False)
    click.echo(_summary(result, paths=False))  # the commits are in: reports work from here on
    with _ProgressBar(True) as progress:
        rest = engine.index_other_refs(result.name, progress)
    if rest is not None:
        click.echo(f"{result.name}: +{rest.new_commits:,} commits that only refs outside branches and tags reach "
                   f"(for refs:all) indexed in {rest.seconds:.1f} s")
    with _ProgressBar(True) as progress:
        count, seconds = engine.index_paths(result.name, progress)
    click.echo(f"{result.name}: changed paths of {count:,} commits indexed in {seconds:.1f} s (for path:)")


PROGRESS_SECONDS = 15.0  # off a terminal, a long track or sync prints where it stands this often (to stderr)


def _track_org(engine, owner, name, forks: bool) -> None:
    """Every repository of a forge organization: one progress line, then what was found."""
    if name:
        raise QueryError("An organization is tracked under its own name (its project's); leave out --name.")

    said = [time.monotonic()]

    def line(state) -> None:  # off a terminal (a pipe, a log): a line now and then, never silence for minutes
        if bar.enabled or time.monotonic() - said[0] < PROGRESS_SECONDS:
            return
        said[0] = time.monotonic()
        if state.phase == "repositories":
            left = f", about {state.seconds_left / 60:.0f} min left" if state.seconds_left else ""
            click.echo(f"gad-bot: {state.org}: {state.done:,} of {state.total:,} repositories, "
                       f"{state.commits:,} commits indexed{left}", err=True)
        elif state.phase == "rate limit":
            click.echo(f"gad-bot: {state.org}: waiting {state.waiting:.0f} s for the API's rate limit", err=True)
        else:
            click.echo(f"gad-bot: {state.org}: listing repositories ({state.done:,} so far)", err=True)

    with _ProgressBar(True) as bar:
        def progress(state) -> None:
            line(state)
            if state.phase == "repositories":
                bar("repositories", state.done, state.total,
                    f"{state.org}: repositories ({state.commits:,} commits indexed)")
            elif state.phase == "rate limit":
                bar("rate limit", 0, 0, f"{state.org}: waiting {state.waiting:.0f} s for the API's rate limit")
            else:
                bar("listing", state.done, 0, f"{state.org}: listing repositories")

        result = engine.track_org(owner, forks=forks, progress=progress)
    click.echo(result.sentence())
    if result.failed:
        click.echo(f"{result.org}: {len(result.failed):,} not cloned yet are tried again later; `gad-bot repos` lists "
                   "them with the reason, and `gad-bot untrack NAME` leaves one out.")
    click.echo(f"{result.org}: {result.new:,} repositories tracked now, {result.commits:,} commits indexed in "
               f"{result.seconds:.1f} s; reports, compare and subscriptions can name `{result.org}`.")
    if result.failed:  # a script (or a person) must not take a partial track for a whole one
        sys.exit(1)


def _text_width() -> int:
    """The terminal's width, 80 when it is not a terminal (a pipe, a file, CI): tables fit a plain terminal."""
    import shutil

    return max(40, min(200, shutil.get_terminal_size((80, 24)).columns))


def _normalise_source(source: str) -> str:
    """Local paths are stored absolute, so a later `sync` from another directory finds them."""
    from ..store.sources import is_local_path

    if is_local_path(source):
        return os.path.abspath(os.path.expanduser(source))
    if "@" in source.split("://", 1)[-1].split("/", 1)[0] and "://" in source:
        raise SourceError("Credentials in the URL would be stored and shown; remove them and set "
                          "GAD_HTTPS_TOKENS=host=TOKEN (or GAD_SSH_KEY) instead.")
    return source


@cli.command()
@click.argument("names", nargs=-1)
@click.option("--reclone", is_flag=True, help="Replace each named mirror with a fresh clone (for a damaged mirror); "
                                              "keeps its projects and subscriptions.")
@click.option("--all", "every", is_flag=True, help="A line for every repository (past 50, the counts and the "
                                                   "failures are printed).")
@friendly
def sync(names, reclone, every):
    """Fetch (with prune) and index what is new, for NAMES or every tracked repository.

    Repositories are fetched GAD_FORGE_FETCHES at a time and indexed in one worker process per CPU, as serve's
    periodic sync does. A tracked forge organization (named, or all of them when no NAMES are given) is listed
    again first: new repositories are tracked, renamed ones renamed, deleted ones marked gone upstream; a named
    one's repositories are synced.
    """
    from ..store.orgindex import TRACKED, OrgIndex

    engine = _engine()
    if reclone and not names:
        raise QueryError("Name the repositories to re-clone, e.g. `gad-bot sync --reclone myrepo`.")
    org_rows = {org.name: org for org in OrgIndex(engine.index).orgs()}
    orgs = [n for n in names if n in org_rows and not engine.index.repo(n)] if names else list(org_rows)
    failed = False
    if reclone:
        with _ProgressBar(True) as progress:
            for name in names:
                result = engine.reclone(name, progress)
                failed |= bool(result.error)
                click.echo(_summary(result))
        sys.exit(1 if failed else 0)
    for listed in engine.sync_orgs(orgs) if orgs else []:
        failed |= bool(listed.error)
        changes = " ".join(change.sentence() for change in listed.changes) or "nothing changed upstream."
        not_cloned = (f" {len(listed.failed) + listed.waiting:,} could not be cloned (`gad-bot repos` says why)."
                      if listed.failed or listed.waiting else "")
        click.echo(f"{listed.org}: listing failed: {listed.error}" if listed.error else
                   f"{listed.org}: {listed.repositories:,} repositories; {changes}{not_cloned}")
    if names:
        repos = [engine.repo(n) for n in names if n not in orgs]
        members = OrgIndex(engine.index)
        for org in orgs:  # a named organization: its repositories (not those gone upstream)
            repos += [r for r in (engine.index.repo_by_id(row.repo_id) for row in members.repos(org_rows[org].id)
                                  if row.state == TRACKED and row.repo_id is not None) if r is not None]
        repos = list({r.id: r for r in repos}.values())
    else:
        repos = engine.repos()
    started = time.monotonic()

    def progress(done: int, total: int, failures: int, seconds: float) -> None:
        click.echo(f"gad-bot: synced {done:,} of {total:,} repositories ({failures:,} failed) in {seconds:.0f} s",
                   err=True)

    if len(repos) == 1:  # one repository: here, with its progress bar (no worker processes to start)
        with _ProgressBar(True) as bar:
            results = engine.sync([repos[0].name], progress=bar)
    else:
        results = engine.sync_many(repos, progress=progress) if repos else []
    failed |= any(r.error for r in results)
    for line in sync_lines(results, time.monotonic() - started, every=every):
        click.echo(line)
    if failed:
        sys.exit(1)


LISTED_AT_MOST = 50  # more repositories than this: `sync` prints counts and the failures (`--all`: every line)


def sync_lines(results, seconds: float, *, every: bool = False) -> list[str]:
    """What `sync` prints: a line per repository, or past LISTED_AT_MOST the counts, then each failure (first
    first, LISTED_AT_MOST at most)."""
    if every or len(results) <= LISTED_AT_MOST:
        return [_summary(r) for r in results]
    failures = [r for r in results if r.error]
    changed = [r for r in results if not r.error and not r.unchanged]
    lines = [f"{len(results):,} repositories synced in {seconds:.0f} s: "
             f"{len(results) - len(failures) - len(changed):,} up to date, {len(changed):,} with new commits "
             f"(+{sum(r.new_commits for r in changed):,}), {len(failures):,} failed"
             + ("; each failure below" if failures else "") + " (`gad-bot sync --all` prints every repository)."]
    lines += [_summary(r) for r in failures[:LISTED_AT_MOST]]
    if len(failures) > LISTED_AT_MOST:
        lines.append(f"... and {len(failures) - LISTED_AT_MOST:,} more failures (`gad-bot repos` lists them).")
    return lines


@cli.command()
@click.argument("name")
@friendly
def untrack(name):
    """Forget a repository: its mirror and its rows (one an organization lists but could not clone: leave it out)."""
    dropped = _engine().untrack(name)
    if dropped is not None:
        click.echo(f"{name}: left out of {dropped.org} (it could not be cloned); it will not be tried again")
        return
    click.echo(f"{name}: untracked")


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.option("--all", "every", is_flag=True, help="List every repository (past 50, only the counts and the "
                                                   "ones to look at are listed).")
@friendly
def repos(as_json, every):
    """List tracked repositories: source, commits, last sync, last error; and those an organization lists that
    could not be cloned."""
    from ..engine.rows import RepoSummary

    engine = _engine()
    rows = [RepoSummary.of_failed(f) for f in engine.failed_repos()]
    rows += [RepoSummary.of(r, missing_objects=engine.damage(r)) for r in engine.repos()]
    if as_json:
        click.echo(json.dumps([r.to_dict() for r in rows], default=lambda v: v.isoformat() if hasattr(v, "isoformat")
                              else str(v), indent=2))
        return
    from ..render.text import render_repos_text

    click.echo(render_repos_text(rows, every=every))


def _track_on_the_fly(engine, words: list[str]) -> list[str]:
    """The operator may name a path or URL instead of a tracked repository: track it first."""
    from ..engine.query import is_source

    resolved = []
    for word in words:
        if not is_source(word):
            resolved.append(word)
            continue
        from ..store.sources import is_local_path

        source = _normalise_source(word)
        existing = engine.find_by_source(source)
        if existing is None:
            in_place = is_local_path(word)
            with _ProgressBar(True) as progress:
                existing_name = engine.track(source, None, in_place=in_place, progress=progress).name
            how = "read in place, nothing copied" if in_place else "mirrored into the data directory"
            click.echo(f"gad-bot: now tracking {source} as `{existing_name}` ({how}); later reports can name it "
                       f"`{existing_name}`, and `gad-bot untrack {existing_name}` forgets it.", err=True)
        else:
            existing_name = existing.name
            if existing.in_place:
                engine.sync([existing_name])
            elif source != existing.source:  # another form of its URL: say which tracked one it named
                click.echo(f"gad-bot: {word} is the tracked repository `{existing_name}` ({existing.source}); "
                           f"reports can name it `{existing_name}`.", err=True)
        resolved.append(existing_name)
    return resolved


def _report_epilog() -> str:
    """Every token with an example, for `gad-bot report --help` (click keeps lines after \\b as they are)."""
    from ..engine.examples import examples
    from ..engine.periods import PERIOD_FORMS
    from ..engine.query import TOKENS
    from ..render.helptext import token_lines

    lines = ["\b", "Tokens (any order, after the repository or project names):", *token_lines(TOKENS, 76)]
    lines += ["", f"PERIOD is {PERIOD_FORMS}.", "", "\b", "Examples:"]
    shown = examples(_tracked_for_examples())  # what is tracked here, as `gad-bot help` shows
    lines += [f"  gad-bot report {e}" for e in shown if not e.startswith(("subscribe", "compare"))]
    lines += ["  gad-bot report . since:2024-01      (the repository you are in, registered in place)"]
    return "\n".join(lines)


class _ReportCommand(click.Command):
    """`report`, whose --help epilog is built when shown: it needs the terminal renderer (rich), which a
    plain `gad-bot report` would otherwise import at start-up for nothing (~50 ms)."""

    def format_epilog(self, ctx, formatter) -> None:
        self.epilog = _report_epilog()
        super().format_epilog(ctx, formatter)


@cli.command(cls=_ReportCommand, context_settings={"ignore_unknown_options": True},
             short_help="2GAD for a query, exactly what a Slack user types after /gad.")
@click.argument("query", nargs=-1, required=True)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.option("--csv", "as_csv", is_flag=True, help="Print CSV (the breakdown rows, or the totals).")
@friendly
def report(query, as_json, as_csv):
    """2GAD for QUERY: REPO... [TOKENS], exactly what a Slack user types after /gad.

    A path or URL in place of a name tracks it first (a path in place, nothing copied).
    """
    import dataclasses

    from ..engine.query import explain_unknown, parse_query, query_words

    query = query_words(query)  # `gad-bot report "openssh since:2024"`: the whole query quoted as one
    if query and query[0].lower() in ("help", "?"):
        return help_command.callback(None)
    parsed = parse_query(query, _today())  # a typo fails here, before anything is written
    _one_format(as_json, as_csv, parsed.format)
    engine = _engine()
    parsed = dataclasses.replace(parsed, repos=tuple(dict.fromkeys(_track_on_the_fly(engine, list(parsed.repos)))))
    try:
        result = engine.report(parsed, _today(), teams=_teams(engine) if (parsed.teams or parsed.by == "team")
                               else None)
    except GadError as error:
        from ..errors import UnknownRepoError

        if isinstance(error, UnknownRepoError):
            raise explain_unknown(error, " ".join(query)) from None
        raise
    if as_json:
        from ..render.jsonout import report_to_dict

        click.echo(json.dumps(report_to_dict(result), indent=2))
    elif as_csv or parsed.format == "csv":
        from ..render.csvout import report_to_csv

        click.echo(report_to_csv(result), nl=False)
    else:
        from ..render.text import render_text

        click.echo(render_text(result, width=_text_width()))


def _one_format(as_json: bool, as_csv: bool, token: str | None) -> None:
    """JSON and CSV are two answers to one question; asked for both, say so rather than pick one."""
    if as_json and (as_csv or token == "csv"):
        both = "--csv" if as_csv else "format:csv"
        raise QueryError(f"--json and {both} ask for two formats at once; keep one of them "
                         "(no option prints the text table).")


@cli.command("help")
@click.argument("topic", required=False)
def help_command(topic):
    """What a query can say (every token, with examples), and the commands."""
    from ..render.helptext import render_help_text

    commands = [(f"gad-bot {name}", (command.get_short_help_str(limit=66)))
                for name, command in sorted(cli.commands.items())]
    click.echo(render_help_text(commands, _tracked_for_examples()), nl=False)


def _tracked_for_examples():
    """What help's examples may name: the tracked repositories, when the data directory has an index
    (help never creates one, and still helps, with generic examples, when it cannot be read)."""
    import sqlite3

    from ..engine.examples import tracked_or_generic
    from ..store.index import Index

    try:
        settings = _settings()
        if not settings.index_path.exists():
            return None
        return tracked_or_generic(Index(settings.index_path))
    except (GadError, sqlite3.Error) as error:  # the settings, or opening (migrating) the index
        log.info("help shows the generic examples: the index could not be read (%s)", type(error).__name__)
        return None


@cli.command(context_settings={"ignore_unknown_options": True})
@click.argument("words", nargs=-1, required=True)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.option("--csv", "as_csv", is_flag=True, help="Print CSV with every column.")
@friendly
def compare(words, as_json, as_csv):
    """Side by side: ITEM ITEM... [tokens], an ITEM being a repository, a project or NAME:PATH (up to 10)."""
    from ..engine.query import parse_compare, query_words

    parsed = parse_compare(query_words(words), _today())
    _one_format(as_json, as_csv, parsed.query.format)
    engine = _engine()
    wants_teams = parsed.query.teams or any(item.team for item in parsed.items)
    result = engine.compare(parsed, _today(), teams=_teams(engine) if wants_teams else None)
    from ..render import compare as view

    if as_json:
        click.echo(json.dumps(view.compare_to_dict(result), indent=2))
    elif as_csv or parsed.query.format == "csv":
        click.echo(view.compare_to_csv(result), nl=False)
    else:
        import shutil

        click.echo(view.render_compare_text(result, width=shutil.get_terminal_size((150, 24)).columns))


# -- calibrate: 2GAD beside a timesheet (issue 19 part 3; docs/calibrate.md) ---------------------------


@cli.command(context_settings={"ignore_unknown_options": True},
             short_help="2GAD beside a timesheet export, per month: the study's 'within 10 %' on your team.")
@click.argument("timesheet", type=click.Path(exists=True, dir_okay=False))
@click.argument("query", nargs=-1, required=True)
@click.option("--columns", metavar="person=H,date=H,hours=H",
              help="The timesheet's columns, by header, when its export is not recognised.")
@click.option("--date-format", metavar="FORMAT", help="How its dates are written, e.g. %d/%m/%Y (default: "
                                                      "YYYY-MM-DD, MM/DD/YYYY or DD.MM.YYYY).")
@click.option("--hours-per-day", type=float, default=8.0, show_default=True,
              help="The hours of one logged person-day.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.option("--csv", "as_csv", is_flag=True, help="Print CSV: the months, the total, the people listed apart.")
@click.option("--chart", "chart_path", type=click.Path(dir_okay=False, writable=True), metavar="PATH.png",
              help="Also write a PNG of both curves per month to PATH.png.")
@click.option("--save", "save_as", metavar="NAME",
              help="Keep the measured ratio (logged person-days / 2GAD, the months' spread) as NAME, for "
                   "`calibrated:NAME` in reports.")
@click.option("--default", "as_default", is_flag=True,
              help="With --save: every report shows its calibrated figure by this one (calibrated:off leaves it out).")
@friendly
def calibrate(timesheet, query, columns, date_format, hours_per_day, as_json, as_csv, chart_path, save_as,
              as_default):
    """2GAD beside TIMESHEET (a CSV export of hours per person and day) for REPO... [tokens].

    Per month and in total: the person-days logged (hours / --hours-per-day) by the people who commit,
    the 2GAD of those people over the same days, their ratio and the error. People on one side only
    are listed apart. Tokens are a report's (since:, until:, branch:, path:, mailmap:off, ...).
    """
    import dataclasses

    from ..engine.calibrate import calibrate as compare_with_timesheet, span_of
    from ..engine.query import parse_query, query_words
    from ..engine.timesheets import MAX_BYTES, TimesheetError, parse_columns_option, read_timesheet

    parsed = parse_query(query_words(query), _today())
    _one_format(as_json, as_csv, parsed.format)
    if parsed.by is not None or parsed.vs_cocomo or parsed.vs_fte or parsed.calibrated:
        given_token = ('by:' + parsed.by if parsed.by else 'vs:cocomo' if parsed.vs_cocomo else 'vs:fte'
                       if parsed.vs_fte else 'calibrated:' + parsed.calibrated)
        raise QueryError(f"calibrate breaks its figures down by month itself; leave out `{given_token}`.")
    if as_default and not save_as:
        raise QueryError("--default makes a saved calibration every report's; give it a name with `--save NAME`.")
    given = parse_columns_option(columns) if columns else None
    try:
        with open(timesheet, "rb") as file:
            data = file.read(MAX_BYTES + 1)  # bounded: a larger file is refused, not read
    except OSError as error:
        raise TimesheetError(f"cannot read {timesheet} ({error.strerror}); give the path of the CSV export.") from None
    sheet = read_timesheet(data, given, date_format=date_format)  # every bad row told before anything else
    span_of(sheet, parsed, hours_per_day)  # so is a span it cannot compare, before a path is tracked
    engine = _engine()
    parsed = dataclasses.replace(parsed, repos=tuple(dict.fromkeys(_track_on_the_fly(engine, list(parsed.repos)))))
    result = compare_with_timesheet(engine, sheet, parsed, _today(), hours_per_day=hours_per_day)
    from ..render import calibrate as view

    if save_as:
        from ..engine.calibrations import save

        kept = save(engine.index, save_as, result, default=as_default)
        click.echo(f"gad-bot: saved as {kept.name}: logged person-days / 2GAD = {kept.ratio:.2f} over "
                   f"{kept.months} months (band {kept.low:.2f}-{kept.high:.2f}, the months' 25th to 75th "
                   f"percentile){'; every report now shows its calibrated figure' if kept.is_default else ''}; "
                   f"reports show it with calibrated:{kept.name}.", err=True)
    if chart_path:
        _write_whole(chart_path, view.calibration_png(result))
    if as_json:
        click.echo(json.dumps(view.calibration_to_dict(result), indent=2))
    elif as_csv or parsed.format == "csv":
        click.echo(view.calibration_to_csv(result), nl=False)
    else:
        click.echo(view.render_calibration_text(result), nl=False)
    if chart_path:
        click.echo(f"gad-bot: wrote the chart to {chart_path}", err=True)


def _write_whole(path: str, data: bytes) -> None:
    """`path` holds all of `data` or is left as it was: written beside it, then renamed over it."""
    import tempfile

    target = os.path.abspath(path)
    temporary = None
    try:
        handle, temporary = tempfile.mkstemp(dir=os.path.dirname(target), prefix=".gad-", suffix=".tmp")
        with os.fdopen(handle, "wb") as file:
            file.write(data)
        os.replace(temporary, target)
    except OSError as error:
        if temporary and os.path.exists(temporary):
            os.unlink(temporary)
        raise QueryError(f"cannot write {path} ({error.strerror}); choose a writable path for --chart.") from None


@cli.command(context_settings={"ignore_unknown_options": True})
@click.argument("query", nargs=-1, required=True)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.option("--csv", "as_csv", is_flag=True, help="Print CSV.")
@friendly
def orgs(query, as_json, as_csv):
    """The e-mail domains in REPO... [tokens], with organization and 2GAD, unmatched first (to write GAD_ORG_FILE)."""
    from ..engine.query import parse_query, query_words
    from ..render import orgs as view

    parsed = parse_query(query_words(query), _today())
    _one_format(as_json, as_csv, parsed.format)
    if parsed.by is not None:
        raise QueryError(f"`orgs` lists domains; leave out `by:{parsed.by}`.")
    engine = _engine()
    rows = engine.domains(parsed, _today())
    if as_json:
        click.echo(json.dumps([view.domain_to_dict(r) for r in rows], indent=2))
    elif as_csv or parsed.format == "csv":
        click.echo(view.domains_to_csv(rows, parsed), nl=False)
    else:
        file = engine.settings.org_file
        click.echo(view.render_domains_text(rows, str(file) if file else None, width=_text_width()))


@cli.command(context_settings={"ignore_unknown_options": True})
@click.argument("words", nargs=-1, required=True)
@friendly
def project(words):
    """Several repositories counted as one: `project add NAME REPO...`, `project remove NAME`, `project list`."""
    import shlex

    from ..engine.query import ListProjects, ProjectAdd, ProjectRemove, parse_command
    from ..render.words import projects_words, repos_words

    parsed = parse_command(shlex.join(["project", *words]), _today())  # the one grammar, as Slack reads it
    engine = _engine()
    if isinstance(parsed, ProjectAdd):
        members = engine.project_add(parsed.name, parsed.repos)
        click.echo(f"Project `{parsed.name}` now counts {repos_words(members, limit=len(members))} as one; "
                   f"`gad-bot report {parsed.name}` answers for them together.")
    elif isinstance(parsed, ProjectRemove):
        engine.project_remove(parsed.name)
        click.echo(f"Removed project `{parsed.name}` (its repositories stay tracked).")
    elif isinstance(parsed, ListProjects):
        not_cloned: dict[str, int] = {}
        for failed in engine.failed_repos():
            not_cloned[failed.org] = not_cloned.get(failed.org, 0) + 1
        click.echo(projects_words(engine.projects(), not_cloned) if engine.projects() else
                   "No projects yet; create one with `gad-bot project add NAME REPO...`.")


@cli.command()
@friendly
def projects():
    """List the projects and the repositories each counts as one (as `project list`)."""
    project.callback(("list",))


@cli.command(context_settings={"ignore_unknown_options": True})
@click.argument("name")
@click.argument("audience", nargs=-1)
@friendly
def access(name, audience):
    """Who may see NAME (a repository, project or organization); with AUDIENCE, set it: `everyone`, `admins`, or
    Slack ids of channels (C…), user groups (S…) and people (U…)."""
    from ..engine.audiences import Audience

    engine = _engine()
    if audience:
        found = engine.set_access(name, Audience.from_words(list(audience)))
    else:
        found = engine.access(name)
    click.echo(_access_words(found, _settings()))


def _access_words(access, settings: Settings) -> str:
    """`web (repository) is seen by: everyone ...`, with each id's name beside it where Slack answers."""
    audience = access.audience
    if audience.everyone or not audience.ids:
        who = "everyone in the workspace (not guests, not other organizations)" if audience.everyone else "admins only"
    else:
        names = _slack_names(audience.ids, settings)
        who = ", ".join(f"{i} ({names[i]})" if names.get(i) else i for i in audience.ids)
    lines = [f"{access.name} ({access.kind}) is seen by: {who}."]
    if access.follows:
        lines.append(f"It follows the audience of its organization `{access.follows}`; "
                     f"`gad-bot access {access.name} ...` gives it one of its own.")
    if access.own:
        lines.append(f"{len(access.own):,} of its repositories keep an audience of their own (private on the forge, "
                     "or set by an admin): " + ", ".join(access.own[:20]) + (" ..." if len(access.own) > 20 else ""))
    return "\n".join(lines)


def _slack_names(ids, settings: Settings) -> dict[str, str]:
    """#channel, @group and people's names for Slack ids, where Slack answers (no token, or an error: none)."""
    if not settings.slack_bot_token:
        return {}
    from ..slackapi import web_client

    client, names = web_client(settings), {}
    for slack_id in ids:
        try:
            if slack_id[0] in "CG":
                names[slack_id] = "#" + client.conversations_info(channel=slack_id)["channel"]["name"]
            elif slack_id[0] == "S":
                groups = client.usergroups_list()["usergroups"]
                names.update({g["id"]: "@" + g.get("handle", "") for g in groups if g.get("id") in ids})
            else:
                user = client.users_info(user=slack_id)["user"]
                names[slack_id] = user.get("real_name") or user.get("name") or ""
        except Exception as error:  # a name is a courtesy: the id stands without it
            log.info("Slack did not name %s: %s", slack_id, type(error).__name__)
    return names


def _teams(engine):
    """Slack's user groups with their members' addresses, read with SLACK_BOT_TOKEN (scopes usergroups:read,
    users:read, users:read.email), as `/gad` reads them."""
    settings = _settings()
    if not settings.slack_bot_token:
        raise ConfigError("`team:` and `by:team` read the workspace's user groups from Slack: set SLACK_BOT_TOKEN "
                          "(scopes usergroups:read and users:read.email) for the command line too.")
    from ..service.members import Members
    from ..slackapi import web_client

    return Members(settings, engine.index, web_client(settings)).teams()


@cli.group(invoke_without_command=True)
@click.pass_context
@friendly
def teams(ctx):
    """Slack's user groups: each with its members' addresses, matched to committers or not (`teams alias` adds one)."""
    if ctx.invoked_subcommand is not None:
        return
    engine = _engine()
    groups = _teams(engine)
    repos = engine.repos()
    persons = engine.reporting.identities.people(repos, {e for g in groups.groups for m in g.members
                                                         for e in m.emails})
    committed = set(engine.index.people_with_emails({p for found in persons.values() for p in found}))
    if not groups.groups:
        click.echo("This workspace has no user groups yet.")
    for group in groups.groups:
        click.echo(f"{group.label} ({len(group.members)} member{'s' * (len(group.members) != 1)})")
        for member in group.members:
            matched = sorted({p for e in member.emails for p in persons.get(e, ()) if p in committed})
            addresses = ", ".join(member.emails) or "no address (the app needs users:read.email)"
            said = f"matched: {', '.join(matched)}" if matched else (
                "unmatched: no commit by these addresses in the tracked repositories; a .mailmap line or "
                f"`gad-bot teams alias {member.user} ADDRESS` joins the address they commit with")
            click.echo(f"  {member.name or member.user} ({member.user}) <{addresses}>: {said}")


@teams.command("alias")
@click.argument("user")
@click.argument("addresses", nargs=-1)
@click.option("--remove", is_flag=True, help="Forget these addresses instead.")
@friendly
def teams_alias(user, addresses, remove):
    """Add addresses a Slack member (U…) commits with, beside their profile's; alone, list them."""
    from ..engine.audiences import slack_id

    if slack_id(user) is None or user[0] not in "UW":
        raise QueryError(f"`{user}` is not a Slack member id; it starts with U (or W), e.g. U0123ABCD.")
    engine = _engine()
    if addresses:
        engine.set_aliases(user, addresses, remove=remove)
    kept = engine.aliases(user)
    click.echo(f"{user} commits as: " + (", ".join(kept) if kept else "(their Slack profile's address only)"))


def _check_slack_settings(settings: Settings, socket_mode: bool) -> None:
    """One clear line for each missing or malformed Slack setting, before anything starts."""
    if not settings.slack_bot_token:
        raise ConfigError("SLACK_BOT_TOKEN is not set; copy the Bot User OAuth Token (xoxb-...) from the app's "
                          "OAuth & Permissions page.")
    if not settings.slack_bot_token.startswith("xoxb-"):
        raise ConfigError("SLACK_BOT_TOKEN does not look like a bot token; it starts with xoxb- "
                          "(OAuth & Permissions > Bot User OAuth Token).")
    if socket_mode and not settings.slack_app_token.startswith("xapp-"):
        raise ConfigError("SLACK_APP_TOKEN does not look like an app-level token; it starts with xapp- "
                          "(Basic Information > App-Level Tokens, scope connections:write).")
    if not socket_mode and not settings.slack_signing_secret:
        raise ConfigError("SLACK_SIGNING_SECRET is not set; HTTP mode needs it (Basic Information > Signing Secret), "
                          "or set SLACK_APP_TOKEN to use Socket Mode instead.")


@cli.command()
@click.option("--port", type=int, default=3000, show_default=True,
              help="HTTP mode: the port for /slack/events and /healthz.")
@click.option("--host", default="0.0.0.0", show_default=True, help="HTTP mode: the address to listen on.")
@friendly
def serve(port, host):
    """Run the Slack app: Socket Mode when SLACK_APP_TOKEN is set, otherwise HTTP on --port."""
    from ..spawning import start_server

    set_face("slack")  # what it says goes to Slack users
    settings = _settings()
    socket_mode = bool(settings.slack_app_token)
    _check_slack_settings(settings, socket_mode)
    # The workers' fork server loads the engine while serve loads Slack's libraries; and scipy's graph code (range:,
    # by:release), once for all report workers rather than in each (~0.24 s of CPU a worker, bot/store/graph.py).
    start_server("scipy.sparse.csgraph")
    from .server import run_server

    from ..logs import setup_logging

    setup_logging(settings.log_level, settings.log_format == "json", secrets=settings.secrets())
    run_server(settings, socket_mode=socket_mode, host=host, port=port)


@cli.command()
@friendly
def healthcheck():
    """Exit 0 when a `serve` process is alive (its heartbeat is fresh), 1 otherwise; for containers."""
    from ..service.liveness import heartbeat_age

    age = heartbeat_age(_settings())
    if age is None or age > 120:
        click.echo("gad-bot: no live `serve` process (heartbeat " + ("missing" if age is None else f"{age:.0f}s old") + ").", err=True)
        sys.exit(1)
    click.echo(f"ok (heartbeat {age:.0f}s old)")


@cli.command()
@click.option("--at", "at", metavar="ISO-8601-TIME", help="Deliver what is due at this instant (default: now); "
              "with --dry-run it may be in the future.")
@click.option("--dry-run", is_flag=True, help="Print each subscription's digest as it would be posted (at --at, "
              "default now), whatever the ledger says; post nothing, record nothing.")
@click.option("--channel", "channels", multiple=True, metavar="CHANNEL_ID",
              help="Only this channel's subscription (repeatable).")
@click.option("--json", "as_json", is_flag=True, help="Print the outcome as JSON (with each digest's text and blocks).")
@friendly
def digest(at, dry_run, channels, as_json):
    """Deliver every weekly digest due now (or --at) that has not been delivered yet, then exit."""
    from ..digests.digest import parse_at, run_due_digests, slack_client_factory
    from ..render.blocks import blocks_to_text

    settings = _settings()
    engine = _engine()
    client_factory = slack_client_factory(settings) if settings.slack_bot_token else None  # none: nothing asked
    results = run_due_digests(engine, client_factory, at=parse_at(at) if at else None,
                              teams=(lambda: _teams(engine)) if settings.slack_bot_token else None,
                              dry_run=dry_run, channels=channels or None)
    if as_json:
        click.echo(json.dumps([r.to_dict() for r in results], indent=2, default=str))
    else:
        for result in results:
            click.echo(result.line())
            if dry_run and result.blocks:
                click.echo("")
                click.echo("    " + blocks_to_text(result.blocks).rstrip().replace("\n", "\n    ").replace("    \n", "\n"))
                click.echo("")
        if not results:
            click.echo("no subscription" + (" in " + ", ".join(channels) if channels else "") if dry_run
                       else "no digest is due")
    if any(r.state in ("failed", "unknown") for r in results):
        sys.exit(1)


@cli.command("release-digest")
@click.argument("channel")
@click.argument("week", required=False, metavar="[WEEK]")
@friendly
def release_digest(channel, week):
    """Let the next run post CHANNEL's digest that a lost answer (or a kill -9 mid-post) left `unknown`.

    Look in the channel first: a digest that reached it must not be released, or it is posted twice.
    WEEK is the period's first day (YYYY-MM-DD, as `/gad subscriptions` shows it); needed only when the
    channel has several unknown digests.
    """
    from ..digests.digest import Ledger, release_words

    engine = _engine()
    click.echo(release_words(Ledger(engine.index), channel, _parse_week(week) if week else None,
                             engine.settings.digest_grace_hours))


def _parse_week(text: str):
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise QueryError(f"`{text}` is not a day; give the week's first day as YYYY-MM-DD, as "
                         "`/gad subscriptions` shows it.") from None


@cli.command()
@click.option("--all", "every", is_flag=True, help="A line for every repository (past 50, the counts and the "
                                                   "failing ones).")
@friendly
def status(every):
    """Whether serve runs, its queue, workers and jobs, each repository's sync, disk space, versions; exit 1 on a problem."""
    from .status import gather, render

    found = gather(_settings(), _engine)
    click.echo(render(found, every=every))
    if found.problems:  # a damaged index, a full disk, serve not ready: a cron job or a monitor sees it
        sys.exit(1)


@cli.command()
@click.option("--fix", is_flag=True, help="First remove orphan mirrors and what killed clones and fetches left.")
@friendly
def doctor(fix):
    """Check tokens, scopes, mode, data directory, mirrors and schedules; exit 1 when something needs fixing."""
    from .doctor import check_data_dir, run_checks
    from .slack import web_client

    settings = _settings()
    where = check_data_dir(settings)
    # a data directory it cannot create, read or write (another user's, a read-only mount): that one line, not a
    # crash opening the index there
    if not where.ok and not where.warning:
        checks = [where]
    else:
        # doctor never crashes: an index it cannot open (damaged, on a full disk, written by a newer gad-bot) is one
        # FAIL line among the checks that do not need it, never a traceback
        engine, opening = None, None
        try:
            engine = _engine()
        except Exception as error:
            opening = error
        if fix and engine is not None:
            removed = engine.sweep_mirrors()
            click.echo(f"removed {len(removed)} leftover(s) under {settings.mirrors_dir}"
                       + "".join(f"\n  {path.relative_to(settings.mirrors_dir)}" for path in removed))
        checks = run_checks(settings, engine, lambda: web_client(settings), opening_error=opening)
    failing = [c for c in checks if not c.ok and not c.warning]
    try:
        for check in checks:
            click.echo(check.line())
        click.echo(f"{len(failing)} problem(s) to fix" if failing else "everything needed is in place")
        sys.stdout.flush()
    except BrokenPipeError:  # `gad-bot doctor | head`: the reader left; the exit code still tells cron
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    sys.exit(1 if failing else 0)


@cli.command()
@click.argument("path", type=click.Path(dir_okay=False, writable=True))
@click.option("--force", is_flag=True, help="Overwrite PATH if it exists.")
@friendly
def backup(path, force):
    """Write a consistent copy of the index to PATH while the bot runs (mirrors can be re-fetched)."""
    from pathlib import Path

    target = Path(path).expanduser()
    if target.exists() and not force:
        raise QueryError(f"{target} already exists; choose another path or add --force to overwrite it.")
    if target.exists():
        target.unlink()
    engine = _engine()
    engine.index.backup(target)
    click.echo(f"backed up the index to {target} ({target.stat().st_size:,} bytes); to restore it: stop gad-bot, "
               f"run `gad-bot restore {target}`, start gad-bot")


@cli.command()
@click.argument("path", type=click.Path(dir_okay=False))
@friendly
def restore(path):
    """Put a `gad-bot backup` file in place of the index (gad-bot serve must be stopped); the old index is kept aside."""
    from pathlib import Path

    from ..store.index import Index, restore_index
    from ..service.liveness import ServeLock

    settings = _settings()
    with ServeLock.acquire(settings, doing="restore the index"):  # no serve may start meanwhile
        restored = restore_index(Path(path).expanduser(), settings.index_path)
        index = Index(settings.index_path)  # migrations, if the backup is older than this gad-bot
        try:
            if not index.integrity_ok():
                raise ConfigError(f"the restored index fails SQLite's integrity check; the one it replaced is "
                                  f"{restored.kept}: move it back, and try an older backup.")
            schema = index.schema_version()
        finally:
            index.close()
    kept = f"; the index it replaced is kept as {restored.kept} (delete it once all is well)" if restored.kept else ""
    click.echo(f"restored the index from {path} ({restored.size:,} bytes, integrity ok, schema {schema}){kept}. "
               "Start gad-bot again; `gad-bot sync` fetches any mirror that is missing.")


def main() -> None:
    # libgit2, SQLite and the fetch child create files with 0666 & ~umask and take no mode of their
    # own: every gad-bot process therefore creates its files for the service user only (0600/0700),
    # whatever umask it was started with (docs/operations.md).
    os.umask(0o077)
    cli(prog_name="gad-bot")


if __name__ == "__main__":
    main()
