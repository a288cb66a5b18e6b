"""`vs:cocomo`: Basic COCOMO (organic mode unless `cocomo:MODE` says otherwise) from the physical source lines at the head of the scope.

    sloc = an established counter (SLOCCount, as in the original 2GAD study, else cloc)
           run over the files of the tree at the head of the scope, cached per tree id
    COCOMO person-months = 2.4 * KSLOC ** 1.05      (the formula SLOCCount prints; organic mode, the default)
                         = 3.0 * KSLOC ** 1.12      (semidetached), 3.6 * KSLOC ** 1.20 (embedded)
    2GAD person-months   = 2GAD person-days / 19    (METRIC.md "Units": COCOMO's 152-hour month)
    ratio                = 2GAD person-months / COCOMO person-months

stdlib only, and below the engine: git is read through the `Mirror` methods `tree_of` and
`export_files` of the heads the engine passes down, the cache through `Index.db`. See docs/cocomo.md.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import logging
import math
import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

from ..confine import ExportLimitError, ExportLimits, Limits
from ..errors import GadError, MirrorError
from ..metric import DAYS_PER_PERSON_MONTH, Cocomo, Report
from ..scratch import scratch_directory

if TYPE_CHECKING:
    from ..store.index import Index
    from .query import Query, Scope

log = logging.getLogger(__name__)

# Basic COCOMO (Boehm 1981): person-months = a x KSLOC^b, with (a, b) by the project's mode. Organic (small
# teams, familiar work) is what SLOCCount prints and stays the default; `cocomo:semidetached|embedded` asks
# for the others.
MODES = {"organic": (2.4, 1.05), "semidetached": (3.0, 1.12), "embedded": (3.6, 1.20)}
DEFAULT_MODE = "organic"
EFFORT_FACTOR, EFFORT_EXPONENT = MODES[DEFAULT_MODE]


def formula(mode: str = DEFAULT_MODE) -> str:
    """'person-months = 2.4 x KSLOC^1.05' for a mode."""
    factor, exponent = MODES[mode]
    return f"person-months = {factor:g} x KSLOC^{exponent:.2f}"


FORMULA = formula()

DEFAULT_TIMEOUT_SECONDS = 600
TREE_DIR = "tree"  # where a tree's files are written inside a counter's scratch directory

INSTALL_HINT = ("Counting source lines for `vs:cocomo` needs SLOCCount or cloc on the gad-bot server and neither "
                "is installed; ask the operator to run `apt-get install sloccount` (Debian/Ubuntu; or install "
                "`cloc`) and try again.")
# The one line an answer carries instead of a COCOMO figure when no counter is installed.
NO_COUNTER_NOTE = ("vs:cocomo: no COCOMO figure, because the gad-bot server has no line counter; the operator "
                   "enables it with `apt-get install sloccount` (or cloc), see docs/cocomo.md.")


class NoCounterError(GadError):
    """Neither SLOCCount nor cloc is installed."""

# The cache of line counts: one row per (tree, counter). Migration 4 ("cocomo_cache") in bot/store/index.py.
# tree_id is the tree's hex id, followed by the path filters when the count was restricted to some
# paths (see `tree_key`); counter is the counter's name and version, so an upgrade recounts.
MIGRATION_SQL = """CREATE TABLE cocomo_cache (
            tree_id TEXT NOT NULL,
            counter TEXT NOT NULL,
            sloc INTEGER NOT NULL,
            counted_at TEXT NOT NULL,
            PRIMARY KEY (tree_id, counter)) WITHOUT ROWID"""


# -- arithmetic ----------------------------------------------------------------
def basic_cocomo_person_months(sloc: int, mode: str = DEFAULT_MODE) -> float:
    """Basic COCOMO: a x KSLOC^b person-months for the mode (organic 2.4/1.05 is SLOCCount's 'Development Effort
    Estimate')."""
    if sloc < 0:
        raise ValueError("SLOC cannot be negative")
    factor, exponent = MODES[mode]
    return factor * (sloc / 1000) ** exponent


def compare(two_gad_person_days: int, counter: str, sloc: int, mode: str = DEFAULT_MODE) -> Cocomo:
    """COCOMO beside 2GAD, both in person-months (19 person-days each); ratio = 2GAD / COCOMO (NaN when COCOMO is 0)."""
    cocomo_pm = basic_cocomo_person_months(sloc, mode)
    two_gad_pm = two_gad_person_days / DAYS_PER_PERSON_MONTH
    ratio = two_gad_pm / cocomo_pm if cocomo_pm > 0 else math.nan
    return Cocomo(counter=counter, sloc=sloc, person_months=cocomo_pm, two_gad_person_months=two_gad_pm, ratio=ratio,
                  mode=mode)


def footnote(cocomo: Cocomo, where: str = "the head of the default branch", *, repos: int = 1,
             period: bool = False) -> str:
    """The answer's footnote: the formula, the counter, where lines were counted, the unit conversion."""
    summed = f", summed over the heads of {repos} repositories" if repos > 1 else ""
    printed = " (as SLOCCount prints it)" if cocomo.mode == DEFAULT_MODE else ""
    text = (f"COCOMO: basic, {cocomo.mode} mode, {formula(cocomo.mode)}{printed}, from {cocomo.sloc:,} physical "
            f"source lines counted by {cocomo.counter} at {where}{summed}; 2GAD converted at 1 person-month = "
            f"{DAYS_PER_PERSON_MONTH} person-days (152 h); ratio = 2GAD / COCOMO.")
    if period:
        text += " The lines are today's, at the head; 2GAD covers only the chosen period."
    return text


# -- counters ------------------------------------------------------------------
@dataclass(frozen=True)
class Counter:
    """An installed line counter."""

    kind: str  # "sloccount" or "cloc"
    path: str  # the executable
    name: str  # shown in the answer and part of the cache key, e.g. "SLOCCount 2.26"


@functools.lru_cache(maxsize=8)
def _version(path: str, mtime: float) -> str | None:
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30,
                             stdin=subprocess.DEVNULL).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    found = re.search(r"\d+(?:\.\d+)+", out)
    return found.group(0) if found else None


def detect_counter() -> Counter:
    """SLOCCount if on PATH (what the original 2GAD study used), else cloc; else GadError saying how to install one."""
    for kind, label in (("sloccount", "SLOCCount"), ("cloc", "cloc")):
        path = shutil.which(kind)
        if path:
            try:
                mtime = os.stat(path).st_mtime
            except OSError:
                continue
            version = _version(path, mtime)
            return Counter(kind, path, f"{label} {version}" if version else label)
    raise NoCounterError(INSTALL_HINT)


def _run(args: list[str], cwd: Path, timeout: float) -> subprocess.CompletedProcess:
    """Run a counter confined (bot.confine: memory, CPU, file size, processes), with no shell, in its own
    process group so that a timeout kills its helpers too (SLOCCount forks many)."""
    env = {"PATH": os.environ.get("PATH", os.defpath), "HOME": str(cwd), "TMPDIR": str(cwd), "LC_ALL": "C"}
    limits = Limits(cpu_seconds=max(1, math.ceil(timeout)))
    with subprocess.Popen(limits.command(args), cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, errors="replace", start_new_session=True) as process:
        try:
            stdout, stderr = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            process.communicate()
            raise
    return subprocess.CompletedProcess(args, process.returncode, stdout, stderr)


_SLOCCOUNT_TOTAL = re.compile(r"^Total Physical Source Lines of Code \(SLOC\)\s*=\s*([\d,]+)\s*$", re.M)
_SLOCCOUNT_EFFORT = re.compile(
    r"^Development Effort Estimate, Person-Years \(Person-Months\)\s*=\s*([\d,.]+)\s*\(([\d,.]+)\)\s*$", re.M)


def parse_sloccount(output: str) -> int | None:
    """The physical SLOC total SLOCCount printed ('... (SLOC) = 1,234'); 0 for 'SLOC total is zero'; else None."""
    found = _SLOCCOUNT_TOTAL.search(output)
    if found:
        return int(found.group(1).replace(",", ""))
    if "SLOC total is zero" in output:
        return 0
    return None


def parse_sloccount_effort(output: str) -> tuple[float, float] | None:
    """SLOCCount's own COCOMO figure: (person-years, person-months) as printed, or None."""
    found = _SLOCCOUNT_EFFORT.search(output)
    if not found:
        return None
    return float(found.group(1).replace(",", "")), float(found.group(2).replace(",", ""))


def parse_cloc(output: str) -> int | None:
    """SUM.code of `cloc --json` (cloc prints `{}` when it finds no source at all); None when unreadable."""
    start = output.find("{")
    if start < 0:
        return None
    try:
        data = json.loads(output[start:])
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    summary = data.get("SUM", {})
    total = summary.get("code", 0) if isinstance(summary, dict) else None
    return total if isinstance(total, int) and not isinstance(total, bool) else None


def run_counter(counter: Counter, workdir: Path, tree: str = TREE_DIR, timeout: float = DEFAULT_TIMEOUT_SECONDS) -> int:
    """Physical SLOC of the files in `workdir/tree` by `counter`, run in `workdir`.

    Only names gad-bot made reach the counter's command line: the directory is named relative to
    `workdir`, and the files in it were written under made names by `Mirror.export_files`.
    """
    if counter.kind == "sloccount":
        data_dir = workdir / "slocdata"  # SLOCCount empties its data directory: never the sources
        data_dir.mkdir()
        args = [counter.path, "--datadir", "slocdata", "--", tree]
    else:
        args = [counter.path, "--json", "--quiet", "--", tree]
    started = time.monotonic()
    try:
        done = _run(args, workdir, timeout)
    except subprocess.TimeoutExpired:
        raise GadError(f"Counting source lines with {counter.name} took longer than {timeout:g} seconds, so there "
                       "is no COCOMO figure; ask again without `vs:cocomo`, or with `path:DIR` for a part of the tree.") from None
    except OSError as error:
        raise GadError(f"{counter.name} could not be run ({error.strerror or error}); ask the operator to "
                       "check its installation.") from None
    sloc = parse_sloccount(done.stdout) if counter.kind == "sloccount" else parse_cloc(done.stdout)
    if sloc is None or (done.returncode != 0 and sloc != 0):
        # Its output may name files of the repository: the log gets it, the user only the exit status.
        log.warning("%s failed (exit %s): %s", counter.name, done.returncode, (done.stderr or done.stdout)[-2000:])
        raise GadError(f"{counter.name} failed to count the source lines (exit {done.returncode}); ask the operator "
                       "to check its installation and gad-bot's log.")
    log.info("%s counted %d SLOC in %.1f s", counter.name, sloc, time.monotonic() - started)
    return sloc


# -- the cache -----------------------------------------------------------------
class SlocCache:
    """SLOC per (tree, counter) in the index's `cocomo_cache` table (migration 4)."""

    def __init__(self, index: "Index"):
        self.index = index

    def get(self, tree_id: str, counter: str) -> int | None:
        row = self.index.db.execute("SELECT sloc FROM cocomo_cache WHERE tree_id = ? AND counter = ?",
                                    (tree_id, counter)).fetchone()
        return None if row is None else int(row[0])

    def put(self, tree_id: str, counter: str, sloc: int) -> None:
        self.index.db.execute(
            "INSERT INTO cocomo_cache (tree_id, counter, sloc, counted_at) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (tree_id, counter) DO UPDATE SET sloc = excluded.sloc, counted_at = excluded.counted_at",
            (tree_id, counter, int(sloc), datetime.now(timezone.utc).isoformat(timespec="seconds")))


def ensure_table(index: "Index") -> None:
    """Create the cache table when migration 4 has not (for tests, and for an index older than the wiring)."""
    if not index.db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'cocomo_cache'").fetchone():
        index.db.execute(MIGRATION_SQL)


# -- counting a tree -----------------------------------------------------------
def tree_key(tree_id: str, paths: Iterable[str] = (), exclude_paths: Iterable[str] = ()) -> str:
    """The cache key: the tree id, plus the path filters when the count is restricted ('<tree> path:src path:!docs')."""
    words = [f"path:{p}" for p in sorted(set(paths))] + [f"path:!{p}" for p in sorted(set(exclude_paths))]
    return " ".join([tree_id, *words])


def _limit_sentence(error: ExportLimitError, where: str) -> str:
    amount = {"files": f"more than {error.limit:,} files",
              "bytes": f"more than {error.limit / 1024 ** 2:,.0f} MiB of files",
              "seconds": f"more files than can be read in {error.limit:g} seconds"}[error.what]
    return (f"The tree at {where} holds {amount}, more than gad-bot counts lines in, so there is no COCOMO figure; "
            "ask for a part of it with `path:DIR vs:cocomo`, or without `vs:cocomo`.")


def count_sloc(mirror, tip: bytes, cache: SlocCache | None, *, counter: Counter | None = None,
               paths: Iterable[str] = (), exclude_paths: Iterable[str] = (),
               timeout: float = DEFAULT_TIMEOUT_SECONDS, workdir: Path | None = None,
               limits: ExportLimits | None = None, where: str = "the head") -> tuple[str, int]:
    """(counter name, physical SLOC) of the tree at commit `tip`, from the cache when that tree was counted before.

    `mirror` needs `tree_of(tip)` and `export_files(tip, dest, limits, paths=, exclude_paths=)`
    (bot.store.mirrors.mirror.Mirror). `paths` keep only those paths, `exclude_paths` drop them (the query's
    `path:` filters): only those files are read out of git. `limits` cap the files, bytes and time
    of that export (a tree bomb gets one sentence); `timeout` caps the counter.
    """
    counter = counter or detect_counter()
    paths, exclude_paths = tuple(paths), tuple(exclude_paths)
    key = tree_key(mirror.tree_of(tip), paths, exclude_paths)
    if cache is not None:
        cached = cache.get(key, counter.name)
        if cached is not None:
            return counter.name, cached
    limits = limits or ExportLimits(seconds=timeout)
    with scratch_directory(workdir) as scratch:
        tree = scratch / TREE_DIR
        tree.mkdir()
        try:
            mirror.export_files(tip, tree, limits, paths=paths, exclude_paths=exclude_paths)
        except ExportLimitError as error:
            raise GadError(_limit_sentence(error, where)) from None
        sloc = run_counter(counter, scratch, TREE_DIR, timeout)
    if cache is not None:
        cache.put(key, counter.name, sloc)
    return counter.name, sloc


# -- the engine's side ---------------------------------------------------------
def where_words(scope: "Scope", paths: Iterable[str] = (), exclude_paths: Iterable[str] = ()) -> str:
    """Where the lines were counted, for the footnote: 'the head of the default branch, under src'."""
    if scope.kind == "branch" and scope.branch != "HEAD":
        text = f"the tip of branch {scope.branch}"
    else:
        text = "the head of the default branch"
    paths, exclude_paths = tuple(paths), tuple(exclude_paths)
    if paths:
        text += ", under " + ", ".join(paths)
    if exclude_paths:
        text += ", excluding " + ", ".join(exclude_paths)
    return text


@dataclass(frozen=True)
class Head:
    """A tree to count lines in: its repository's name (for messages), the mirror and the commit.

    The engine finds heads (the default branch, `branch:NAME`, a range's end) and passes them down,
    so this module never reaches back into the engine.
    """

    name: str
    mirror: object  # bot.store.mirrors.mirror.Mirror: tree_of(tip), export_files(tip, dest, limits, ...)
    tip: bytes


def measure(heads: Iterable[Head], query: "Query", cache: SlocCache | None, workdir: Path | None,
            timeout: float = DEFAULT_TIMEOUT_SECONDS) -> tuple[str, int]:
    """(counter name, SLOC summed over the heads); identical trees (forks) are counted once."""
    counter = detect_counter()
    seen: set[str] = set()
    total = 0
    for head in heads:
        key = tree_key(head.mirror.tree_of(head.tip), query.paths, query.exclude_paths)
        if key in seen:
            continue
        seen.add(key)
        try:
            _, sloc = count_sloc(head.mirror, head.tip, cache, counter=counter, paths=query.paths,
                                 exclude_paths=query.exclude_paths, timeout=timeout, workdir=workdir,
                                 where=f"the head of `{head.name}`")
        except MirrorError as error:  # the mirror cannot say which repository it is: name it, and its repair
            said = str(error).replace("--reclone NAME", f"--reclone {head.name}")
            raise MirrorError(f"`{head.name}`: {said[:1].lower()}{said[1:]}", operator_detail=error.operator_detail) \
                from None
        total += sloc
    return counter.name, total


def with_cocomo(heads: Iterable[Head], query: "Query", report: Report, cache: SlocCache | None,
                workdir: Path | None, timeout: float = DEFAULT_TIMEOUT_SECONDS) -> Report:
    """The report with `cocomo` set and the COCOMO footnote added (what Engine.report calls for `vs:cocomo`).

    With no source lines at all, or no line counter installed, there is nothing to compare with: the
    report keeps its 2GAD figures and says so in one note instead.
    """
    heads = list(heads)
    try:
        counter, sloc = measure(heads, query, cache, workdir, timeout)
    except NoCounterError:
        return dataclasses.replace(report, notes=(*report.notes, NO_COUNTER_NOTE))
    where = where_words(query.scope, query.paths, query.exclude_paths)
    if query.range:
        where = where.replace("the head of the default branch", f"{query.range.end} (the end of the range)", 1)
    if sloc == 0:
        note = (f"vs:cocomo: {counter} found no source lines at {where}, so basic COCOMO predicts nothing "
                "to compare 2GAD with.")
        return dataclasses.replace(report, notes=(*report.notes, note))
    cocomo = compare(report.two_gad, counter, sloc, query.cocomo_mode)
    note = footnote(cocomo, where, repos=len(heads), period=query.since is not None or query.until is not None)
    return dataclasses.replace(report, cocomo=cocomo, notes=(*report.notes, note))
