"""Bulk reading of history through the git binary: every commit once (`git log`), and the paths each
non-merge commit changed (`git diff-tree --stdin`).

pygit2 keeps the mirrors, refs, fetch and mailmap (bot/store/mirrors/); reading a whole history is the one
job where git itself is the physical limit, and streaming its output beats driving libgit2 from Python
by a wide margin (measured at 1,000,000 commits: `git log` 7.3 s against 63 s for a pygit2 revwalk, and
`git diff-tree` ~30 us a commit against 120-340 us for libgit2's tree diff). This module owns the
`git` subprocesses and nothing else: it parses their output into typed chunks; bot/store/index.py stores them.

git runs with a blank environment of its own: no system or global config, no replacement objects
(libgit2 never applied them either; a figure is about the commits as written), ASCII locale.
"""

from __future__ import annotations

import binascii
import os
import re
import secrets
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import MirrorError

# Author dates gad-bot will not believe: git writes 0 for an unparseable date, and no time zone is
# further than 14 hours from UTC. Such commits count in `skipped`, never on a made-up day.
MAX_OFFSET_MINUTES = 14 * 60
LAST_PLAUSIBLE_DAY = 47482  # 2099-12-31 in epoch days
BAD_DAY = -(2**31)
_ZONE = re.compile(rb"^([+-])(\d\d)([0-5]\d)$")

OID_BYTES = 20
_READ = 1 << 20

# The `Co-authored-by:` trailers of a commit as git parses them (its trailer block, continuation lines
# unfolded), the values only, separated by \x01. Parsing every message's trailer block costs git ~1 s of
# CPU per million commits in `git log` (+12 %): a first walk leaves them to the paths phase's
# `git diff-tree`, which parses each commit anyway (docs/benchmarks.md has the figures before and after).
COAUTHOR_TRAILERS = "%(trailers:key=Co-authored-by,valueonly,unfold,separator=%x01)"
COAUTHOR_SEPARATOR = b"\x01"
# A stranger's commit may name any number of co-authors; past this many per commit the rest are ignored,
# so one message cannot grow the index without bound (a real commit names a handful).
MAX_COAUTHORS = 64
_COAUTHOR = re.compile(rb"^\s*(.*?)\s*<([^<>]*)>\s*$")


class GitMissingError(MirrorError):
    pass


# Found once, when gad-bot starts: the operator's PATH then is the one that counts (a test or a
# cocomo counter may narrow PATH later).
_GIT = shutil.which("git")
_PATH = os.environ.get("PATH", "/usr/bin:/bin")


def git_binary() -> str:
    found = _GIT or shutil.which("git")
    if not found:
        raise GitMissingError("gad-bot reads history with the `git` command, which is not installed here; "
                              "install git (e.g. `apt-get install git`) and try again.")
    return found


MIN_GIT = (2, 32)  # GIT_CONFIG_GLOBAL (a blank host configuration) appeared in git 2.32


def git_version() -> tuple[int, ...] | None:
    """The installed git's version, or None when there is no git."""
    try:
        out = subprocess.run([git_binary(), "--version"], capture_output=True, text=True, timeout=10).stdout
    except (MirrorError, OSError, subprocess.SubprocessError):
        return None
    found = re.search(r"(\d+)\.(\d+)(?:\.(\d+))?", out)
    return tuple(int(g) for g in found.groups() if g is not None) if found else None


def git_env(git_dir: Path) -> dict[str, str]:
    """The environment every git child runs in: this repository, no host configuration."""
    return {"PATH": _PATH, "GIT_DIR": str(git_dir), "LC_ALL": "C",
            "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_NO_REPLACE_OBJECTS": "1",
            "GIT_TERMINAL_PROMPT": "0", "HOME": os.devnull}


def maintain(git_dir: Path, timeout: float = 1800) -> str | None:
    """git's own housekeeping of a mirror when git thinks it is due: `git gc --auto` repacks once there
    are more than gc.autoPackLimit packs (50; each fetch adds one) or gc.auto loose objects (6,700),
    and prunes what nothing reaches after gc.pruneExpire (2 weeks). Not detached: the caller holds the
    repository's lock meanwhile, and runs in a sync worker or the CLI, never in the serving process.
    None when done (or not due), else a sentence saying why not (the sync itself stands)."""
    try:
        run = subprocess.run([git_binary(), "-c", "gc.autoDetach=false", "gc", "--auto", "--quiet"],
                             env=git_env(git_dir), capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return f"git gc took over {int(timeout)} s and was stopped"
    except (MirrorError, OSError) as error:
        return str(error)
    if run.returncode != 0:
        return f"git gc failed: {run.stderr.decode(errors='replace').strip()[:300]}"
    return None


def missing_objects(git_dir: Path, timeout: float = 600) -> list[str] | None:
    """What `git fsck --connectivity-only` finds missing in a repository ('missing blob 1f2e...'), at most
    five lines; [] when every object reachable from its refs is there; None when git took over `timeout`.

    Refs alone can look fine while a blob they reach is gone (a copied mirror, a disk fault); only a
    walk of every object finds it. The walk reads no file contents: seconds for most repositories."""
    try:
        run = subprocess.run([git_binary(), "fsck", "--connectivity-only", "--no-dangling", "--no-progress"],
                             env=git_env(git_dir), capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None
    text = (run.stdout + run.stderr).decode("utf-8", "replace").splitlines()
    found = [line.strip() for line in text if line.startswith(("missing ", "broken link"))]
    if run.returncode and not found:  # fsck failed without naming an object: say what it said
        found = [line.strip() for line in text if line.strip()][:1] or [f"git fsck exited with {run.returncode}"]
    return found[:5]


def zone_minutes(zone: bytes) -> int | None:
    """Minutes east of UTC for a `+hhmm` zone git recorded, or None when it is not a real zone."""
    match = _ZONE.match(zone)
    if not match:
        return None
    minutes = int(match.group(2)) * 60 + int(match.group(3))
    if minutes > MAX_OFFSET_MINUTES:
        return None
    return -minutes if match.group(1) == b"-" else minutes


def author_day(raw_date: bytes, zones: dict[bytes, int | None]) -> int:
    """The author's own calendar day (epoch days) from git's raw `SECONDS +ZONE`, or BAD_DAY."""
    seconds, _, zone = raw_date.partition(b" ")
    if zone in zones:
        minutes = zones[zone]
    else:
        minutes = zones[zone] = zone_minutes(zone)
    if minutes is None or not seconds.isdigit():
        return BAD_DAY
    when = int(seconds)
    if when <= 0:
        return BAD_DAY
    day = (when + minutes * 60) // 86400
    return day if day <= LAST_PLAUSIBLE_DAY else BAD_DAY


@dataclass
class CommitChunk:
    """Up to a chunk's worth of commits in walk order, as `git log` gave them."""

    oids: bytes  # n x 20 raw ids
    parent_counts: bytes  # n bytes (merges of more than 255 parents do not exist in practice; capped)
    parent_oids: bytes  # sum(parent_counts) x 20, in order
    identity_index: list[int]  # per commit, an index into `identities`
    identities: list[tuple[str, str]]  # distinct raw (name, e-mail) in this chunk, authors' and co-authors'
    days: np.ndarray  # int32 per commit, the author's day or BAD_DAY
    # `Co-authored-by:` trailers (METRIC.md rule 7), sparse: the few commits that carry them. Entry i names
    # identity `coauthor_index[i]` on commit `coauthor_rows[i]` (ascending, a commit's entries together).
    coauthor_rows: list[int] = field(default_factory=list)
    coauthor_index: list[int] = field(default_factory=list)
    coauthors_read: bool = True  # False: the walk did not read trailers (the paths phase does)

    def __len__(self) -> int:
        return len(self.identity_index)


def _decode(raw: bytes) -> str:
    # git re-encodes commits that declare another encoding to UTF-8; what is still not UTF-8 is shown
    # with replacement characters, as pygit2 did before.
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("utf-8", "replace")


class _Drain(threading.Thread):
    """Collect a child's stderr without letting a full pipe stall it."""

    def __init__(self, stream):
        super().__init__(daemon=True)
        self.stream, self.text = stream, b""

    def run(self) -> None:
        self.text = self.stream.read()[-4000:]


def _fail(what: str, code: int, stderr: bytes) -> MirrorError:
    last = (stderr.decode("utf-8", "replace").strip().splitlines() or [f"exit {code}"])[-1][:300]
    lowered = last.lower()
    if "no space left" in lowered or "disk quota exceeded" in lowered:
        return MirrorError(f"The disk is full ({last}); free space where gad-bot keeps its data (GAD_DATA_DIR) "
                           "and run the sync again: indexing goes on from where it stopped.")
    if any(m in lowered for m in ("bad object", "corrupt", "missing", "inflate", "packfile", "unable to read",
                                  "does not point to a valid object")):
        return MirrorError(f"The mirror is damaged ({last}); re-clone it with `gad-bot sync --reclone NAME`.")
    return MirrorError(f"{what} failed: {last}.")


def read_commits(git_dir: Path, include: Iterable[str], exclude: Iterable[str] = (), *,
                 chunk_size: int = 50_000, no_walk: bool = False, coauthors: bool = True,
                 scratch_dir: Path | None = None) -> Iterator[CommitChunk]:
    """Every commit reachable from `include` but not from `exclude` (hex ids), once, in chunks, in
    git's walk order (bot/store/indexer.py keeps the walk's frontier from the chunks' parents). With
    `no_walk`, exactly the commits `include` lists, in that order. With coauthors=False the chunks
    carry no trailers (`coauthors_read` False): `read_changed_paths` reads them later."""
    include = list(dict.fromkeys(include))
    if not include:
        return
    trailers = COAUTHOR_TRAILERS if coauthors else ""  # the record keeps its last (empty) line either way
    args = [git_binary(), "log", "--stdin", "--no-use-mailmap", "--no-show-signature", "--no-decorate",
            "--no-color", "-z", "--date=raw", f"--format=%H %P%n%an%n%ae%n%ad%n{trailers}",
            *(["--no-walk=unsorted"] if no_walk else [])]
    output = _GrowingFile(scratch_dir)
    try:
        git = _GitChild(git_dir, args, output.file, include, exclude)
    except BaseException:
        output.close()
        raise
    output.child = git.process
    zones: dict[bytes, int | None] = {}
    cut_off: MirrorError | None = None
    try:
        for chunk in _parse_log(output, zones, chunk_size):
            chunk.coauthors_read = coauthors
            yield chunk
    except MirrorError as error:
        cut_off = error
    finally:
        code = git.stop()
        output.close()
    # When git failed by itself (a full disk, a damaged pack), its reason says more than the cut-off
    # record it left; when gad-bot stopped it over odd output, that output is the reason.
    if code != 0 and not git.killed:
        raise git.failure("Reading the history with git log", code)
    if cut_off is not None:
        raise cut_off


class _GitChild:
    """A git child fed ids on stdin (`^ID` for those to hide), writing into a file, its stderr kept for
    the sentence if it fails. Both children here (git log, git diff-tree) are run and reaped this way."""

    def __init__(self, git_dir: Path, args: list[str], output, include: Iterable[str], exclude: Iterable[str] = ()):
        self.process = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=output, stderr=subprocess.PIPE,
                                        env=git_env(git_dir), close_fds=True)
        self.killed = False
        self.drain = _Drain(self.process.stderr)
        self.drain.start()
        self.feeder = threading.Thread(target=_feed, args=(self.process.stdin, include, exclude), daemon=True)
        self.feeder.start()

    def stop(self) -> int:
        """Kill git if it still runs (the reader stopped early or failed), reap it; its exit status."""
        if self.process.poll() is None:
            self.killed = True
            self.process.kill()
        code = self.process.wait()
        self.drain.join(timeout=5)
        self.feeder.join(timeout=5)
        return code

    def failure(self, what: str, code: int) -> MirrorError:
        return _fail(what, code, self.drain.text)


class _GrowingFile:
    """git's output, read as git writes it into an unnamed temporary file.

    Not a pipe: at a million commits, git spends 2-2.6 s more writing `git log` into a pipe (even a
    1 MiB one, emptied by a thread) than into a file, where it runs as fast as into /dev/null; and a
    file never fills, so git never waits while gad-bot stores a chunk. The file has no name (deleted
    on creation where the system allows, and in any case when closed), so a crash leaves nothing.
    It takes ~140 bytes a commit until the walk ends (200 MB for the kernel), so callers put it in
    `scratch_dir`, the data directory (disk), rather than a /tmp that may be memory (tmpfs).
    """

    POLL_SECONDS = 0.004

    def __init__(self, scratch_dir: Path | None = None):
        self.file = tempfile.TemporaryFile(prefix="gad-git-", dir=scratch_dir)
        self.position = 0
        self.child: subprocess.Popen | None = None

    def read(self, size: int = _READ) -> bytes:
        """The next bytes git wrote; b"" once git has exited and everything it wrote was read."""
        fd = self.file.fileno()
        while True:
            exited = self.child is None or self.child.poll() is not None  # before the read: no write after
            data = os.pread(fd, size, self.position)
            if data:
                self.position += len(data)
                return data
            if exited:
                return b""
            time.sleep(self.POLL_SECONDS)

    def close(self) -> None:
        self.file.close()


def _feed(stdin, include: list[str], exclude: Iterable[str]) -> None:
    try:
        stdin.write("".join(f"{h}\n" for h in include).encode() + "".join(f"^{h}\n" for h in exclude).encode())
        stdin.close()
    except (BrokenPipeError, OSError):
        pass  # git died early; its exit status says why


def _parse_log(stream, zones: dict[bytes, int | None], chunk_size: int) -> Iterator[CommitChunk]:
    """The hot loop: per commit, a few slices and appends; ids and dates are decoded per chunk, in bulk."""
    heads: list[bytes] = []  # "ID PARENT..." as git wrote it
    identity_index: list[int] = []
    identity_ids: dict[bytes, int] = {}
    dates: list[bytes] = []
    coauthor_rows: list[int] = []
    coauthor_index: list[int] = []
    buffer = b""
    append_head, append_identity, append_date = heads.append, identity_index.append, dates.append

    while True:
        data = stream.read(_READ)
        if not data:
            break
        records = (buffer + data).split(b"\0")
        buffer = records.pop()
        for record in records:
            # "ID PARENTS\nNAME\nEMAIL\nDATE\nTRAILERS": names and e-mails hold no newline (git strips them)
            first = record.find(b"\n")
            last = record.rfind(b"\n")
            date_at = record.rfind(b"\n", 0, last)
            if first < 0 or date_at <= first:
                continue  # not a record git writes; nothing to count
            append_head(record[:first])
            raw_identity = record[first + 1:date_at]
            number = identity_ids.get(raw_identity)
            if number is None:
                number = identity_ids[raw_identity] = len(identity_ids)
            append_identity(number)
            append_date(record[date_at + 1:last])
            if last + 1 < len(record):  # the rare commit with co-authors
                _coauthors(record[last + 1:], len(heads) - 1, identity_ids, coauthor_rows, coauthor_index)
            if len(heads) >= chunk_size:
                yield _chunk(heads, identity_index, identity_ids, dates, zones, coauthor_rows, coauthor_index)
                heads, identity_index, identity_ids, dates, coauthor_rows, coauthor_index = [], [], {}, [], [], []
                append_head, append_identity, append_date = heads.append, identity_index.append, dates.append
    if buffer:
        raise MirrorError("git log stopped in the middle of a commit; try the sync again.")
    if heads:
        yield _chunk(heads, identity_index, identity_ids, dates, zones, coauthor_rows, coauthor_index)


def parse_coauthor(value: bytes) -> tuple[bytes, bytes] | None:
    """(name, e-mail) of one `Co-authored-by:` value, `Name <e-mail>` as git check-mailmap reads it; None
    for a value without an e-mail in angle brackets (no e-mail, no person)."""
    match = _COAUTHOR.match(value)
    if match is None or not match.group(2).strip():
        return None
    return match.group(1), match.group(2).strip()


def _coauthors(trailers: bytes, row: int, identity_ids: dict[bytes, int], rows: list[int], index: list[int]) -> None:
    """Add a commit's co-author identities (each once) to the chunk's sparse lists."""
    seen: set[int] = set()
    for value in trailers.split(COAUTHOR_SEPARATOR)[:MAX_COAUTHORS]:
        parsed = parse_coauthor(value)
        if parsed is None:
            continue
        raw_identity = parsed[0] + b"\n" + parsed[1]
        number = identity_ids.get(raw_identity)
        if number is None:
            number = identity_ids[raw_identity] = len(identity_ids)
        if number not in seen:
            seen.add(number)
            rows.append(row)
            index.append(number)


def _identities(identity_ids: dict[bytes, int]) -> list[tuple[str, str]]:
    """(name, e-mail) by number from raw `NAME\nE-MAIL` keys numbered as first seen."""
    identities = [("", "")] * len(identity_ids)
    for raw, number in identity_ids.items():
        name, _, email = raw.partition(b"\n")
        identities[number] = (_decode(name), _decode(email))
    return identities


def _chunk(heads: list[bytes], identity_index: list[int], identity_ids: dict[bytes, int], dates: list[bytes],
           zones: dict[bytes, int | None], coauthor_rows: list[int], coauthor_index: list[int]) -> CommitChunk:
    oids, counts, parents = _split_heads(heads)
    return CommitChunk(oids, counts, parents, identity_index, _identities(identity_ids), _days(dates, zones),
                       coauthor_rows, coauthor_index)


def _split_heads(heads: list[bytes]) -> tuple[bytes, bytes, bytes]:
    """Ids, parent counts and parent ids from `%H %P` lines: 40 hex digits each, space-separated, so a
    line's length gives its number of parents and one unhexlify decodes the whole chunk."""
    lengths = np.fromiter(map(len, heads), np.int64, len(heads))
    counts = np.maximum(lengths - 40, 0) // 41
    raw = binascii.unhexlify(b"".join(heads).replace(b" ", b""))
    ids = np.frombuffer(raw, np.uint8).reshape(-1, OID_BYTES)
    if len(ids) != len(heads) + int(counts.sum()):
        raise MirrorError("git log wrote commit ids in an unexpected form; try the sync again.")
    starts = np.zeros(len(heads), np.int64)
    np.cumsum(counts[:-1] + 1, out=starts[1:])
    is_commit = np.zeros(len(ids), bool)
    is_commit[starts] = True
    parents = ids[~is_commit]
    if counts.max(initial=0) > 255:  # cap the count at a byte: keep a huge octopus merge's first 255 parents
        rank = np.arange(len(ids)) - np.repeat(starts, counts + 1)
        parents = ids[~is_commit & (rank <= 255)]
        counts = np.minimum(counts, 255)
    return ids[is_commit].tobytes(), counts.astype(np.uint8).tobytes(), parents.tobytes()


def _days(dates: list[bytes], zones: dict[bytes, int | None]) -> np.ndarray:
    """Each commit's author day from git's raw `SECONDS +ZONE`, parsed in bulk (C), or BAD_DAY."""
    joined = b" ".join(dates)
    numbers = np.zeros(0, np.int64)
    if joined.count(b" ") == 2 * len(dates) - 1:  # "SECONDS ZONE" each: one space inside, one between
        try:
            numbers = np.fromstring(joined, dtype=np.int64, sep=" ")
        except ValueError:  # text that is no number
            pass
    if len(numbers) != 2 * len(dates):  # an empty or odd date somewhere: one at a time for this chunk
        return np.array([author_day(d, zones) for d in dates], np.int32)
    seconds, zone = numbers[0::2], numbers[1::2]
    hours, minutes = np.abs(zone) // 100, np.abs(zone) % 100
    offset = np.sign(zone) * (hours * 60 + minutes)
    valid = (seconds > 0) & (minutes < 60) & (hours * 60 + minutes <= MAX_OFFSET_MINUTES)
    days = (seconds + offset * 60) // 86400
    valid &= days <= LAST_PLAUSIBLE_DAY
    # A zone git printed as "+9900" parses as 9900 (99 hours): invalid above; "-0000" is UTC.
    return np.where(valid, days, BAD_DAY).astype(np.int32)


@dataclass
class ChangedPaths:
    """Per commit of a list, in the order asked: the paths it changed against its first parent (all of
    them for a root commit, none for a merge), and its `Co-authored-by:` identities, sparse as in
    CommitChunk (entry i names `identities[coauthor_index[i]]` on commit `coauthor_rows[i]`)."""

    paths: list[list[bytes]]  # raw bytes as git stores them
    identities: list[tuple[str, str]] = field(default_factory=list)
    coauthor_rows: list[int] = field(default_factory=list)
    coauthor_index: list[int] = field(default_factory=list)


# Ends the id in each commit's header line of `git diff-tree --format`; the trailers follow it.
_HEADER_END = b"\x02"


def read_changed_paths(git_dir: Path, hex_oids: list[str], scratch_dir: Path | None = None) -> ChangedPaths:
    """`git diff-tree -r --name-only --root` of each commit, and its co-author trailers. A merge lists no
    paths (git diffs no merge without -m: a merge's own changes are not what `git log -- PATH` counts)
    but its trailers count. Both sides of a rename count, as in `git log -- PATH`.

    Each commit's header is a per-run random nonce, its id and its trailers: a file name in a stranger's
    repository cannot pass for the header of the next commit (a child's file may spell its parent's id)."""
    if not hex_oids:
        return ChangedPaths([])
    nonce = secrets.token_hex(8).encode()
    args = [git_binary(), "diff-tree", "--stdin", "-r", "--name-only", "--root", "--always", "-z",
            "--no-renames", "--no-ext-diff", "--no-textconv",
            f"--format={nonce.decode()}%H%x02{COAUTHOR_TRAILERS}"]
    with tempfile.TemporaryFile(prefix="gad-git-", dir=scratch_dir) as output:  # a file, not a pipe: see _GrowingFile
        git = _GitChild(git_dir, args, output, hex_oids)
        try:
            git.process.wait()
        finally:
            code = git.stop()
        output.seek(0)
        out = output.read() if code == 0 else b""
    if code != 0:
        raise git.failure("Listing changed paths with git diff-tree", code)
    paths, trailers = _split_changed(out, hex_oids, nonce)
    identity_ids: dict[bytes, int] = {}
    rows: list[int] = []
    index: list[int] = []
    for row, found in enumerate(trailers):
        if found:
            _coauthors(found, row, identity_ids, rows, index)
    return ChangedPaths(paths, _identities(identity_ids), rows, index)


def _split_changed(out: bytes, hex_oids: list[str], nonce: bytes) -> tuple[list[list[bytes]], list[bytes]]:
    """Split `diff-tree --always -z --format=NONCE%H\x02TRAILERS` output into per-commit path lists and
    trailer values.

    Every commit asked for is printed, in order, as its header, then, when it changed paths, "\n" and
    its paths, all NUL-separated. A token before that "\n" belongs to the header (a NUL inside a
    hand-made message cuts it short): it is no path.
    """
    tokens = out.split(b"\0")
    if tokens and tokens[-1] == b"":
        tokens.pop()
    paths: list[list[bytes]] = []
    trailers: list[bytes] = []
    expected = [h.encode() for h in hex_oids]
    start, end = len(nonce), len(nonce) + 40
    position = 0
    current: list[bytes] | None = None
    listing = False  # whether the current commit's paths have begun
    for token in tokens:
        if token.startswith(nonce):
            if position >= len(expected) or token[start:end] != expected[position] \
                    or token[end:end + 1] != _HEADER_END:
                raise MirrorError("git diff-tree answered in an unexpected form; try the sync again.")
            current, listing = [], False
            paths.append(current)
            trailers.append(token[end + 1:])
            position += 1
        elif current is None:
            raise MirrorError("git diff-tree answered in an unexpected form; try the sync again.")
        elif listing:
            current.append(token)
        elif token.startswith(b"\n"):
            current.append(token[1:])
            listing = True
    if position != len(expected):
        raise MirrorError("git diff-tree left out commits it was asked about; try the sync again.")
    return paths, trailers
