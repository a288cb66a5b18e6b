"""The mirror store: bare git mirrors on local disk, and everything gad-bot reads from git.

pygit2 lives here and nowhere else. A mirror fetches every ref (`+refs/*:refs/*`) with
prune, so it follows upstream exactly: deleted refs disappear, rewound branches move back.
"""

from __future__ import annotations

import hashlib
import errno
import fcntl
import logging
import os
import re
import shutil
import socket
import time
import zlib
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import pygit2
from pygit2.enums import FetchPrune

from ..confine import ExportLimitError, ExportLimits
from ..errors import MirrorError, SourceError
from ..metric import ascii_lower
from .sources import SourcePolicy, redact

if TYPE_CHECKING:
    from .egress import GuardProxy

log = logging.getLogger(__name__)

MIRROR_REFSPEC = "+refs/*:refs/*"
# Temporary files and lock files older than this are what a killed clone or fetch left: one still running in
# another process (it may be the CLI's, beside serve's) writes them more recently than that.
LEFTOVER_SECONDS = 3600
DEFAULT_SCOPE_PREFIXES = ("refs/heads/", "refs/tags/")


Progress = Callable[[str, int, int], None]  # (phase, done, total)

# libgit2 keeps up to 256 MiB of parsed objects by default; gad-bot reads few objects through it
# (refs, the mailmap, trees for vs:cocomo), so a small cache costs no speed and saves memory.
pygit2.settings.cache_max_size(64 * 1024 * 1024)


class _Callbacks(pygit2.RemoteCallbacks):
    """Credentials from the operator's settings, progress, and limits on time and size."""

    def __init__(self, url: str, https_tokens: dict[str, str], ssh_key: Path | None,
                 progress: Progress | None, deadline: float | None, max_bytes: int | None):
        super().__init__()
        self._url, self._tokens, self._ssh_key = url, https_tokens, ssh_key
        self._progress, self._deadline, self._max_bytes = progress, deadline, max_bytes
        self._tried_credentials = False

    def credentials(self, url, username_from_url, allowed_types):
        if self._tried_credentials:  # libgit2 asks again after a refusal; do not loop forever
            raise MirrorError("The remote refused the configured credentials; check GAD_HTTPS_TOKENS or GAD_SSH_KEY.")
        self._tried_credentials = True
        if _origin(url) != _origin(self._url):
            # a redirect led elsewhere: a host's token goes to the source that names that host,
            # never to a stranger's source that sends the fetch there (a confused deputy)
            raise MirrorError(f"{redact(self._url)} sent the fetch to another host that asks for credentials; "
                              "gad-bot gives a host's token only to sources that name that host: track that "
                              "host's URL instead.")
        host = (urlsplit(url).hostname or "").lower()
        if allowed_types & pygit2.enums.CredentialType.USERPASS_PLAINTEXT and host in self._tokens:
            return pygit2.UserPass("gad-bot", self._tokens[host])
        if allowed_types & pygit2.enums.CredentialType.SSH_KEY and self._ssh_key:
            return pygit2.Keypair(username_from_url or "git", str(self._ssh_key) + ".pub", str(self._ssh_key), "")
        raise MirrorError("The repository needs credentials; the operator can set GAD_HTTPS_TOKENS "
                          "(HTTPS) or GAD_SSH_KEY (ssh) for its host.")

    def transfer_progress(self, stats):
        # libgit2 calls this once per object; look at the clock and report only every 512 calls.
        self._calls = getattr(self, "_calls", 0) + 1
        if self._calls % 512 and stats.received_objects != stats.total_objects:
            return
        if self._deadline is not None and time.monotonic() > self._deadline:
            raise MirrorError("The fetch took longer than GAD_FETCH_TIMEOUT_SECONDS allows; try again later "
                              "or raise the limit.")
        if self._max_bytes is not None and stats.received_bytes > self._max_bytes:
            raise MirrorError("The repository is larger than GAD_MAX_MIRROR_MB allows; the operator can raise the limit.")
        if self._progress:
            self._progress("fetch", stats.received_objects + stats.indexed_deltas,
                           stats.total_objects + stats.total_deltas)


def has_credentials(url: str, https_tokens: dict[str, str], ssh_key: Path | None) -> bool:
    """Whether fetches of `url` may carry the operator's credentials (a token for its host, the ssh key, or a
    password in the URL): what they bring may be private, so such a repository starts visible to admins only."""
    scheme, host, _ = _origin(url)
    if scheme == "ssh":
        return ssh_key is not None
    if scheme in ("https", "http"):
        return host in https_tokens or bool(urlsplit(url).password or urlsplit(url).username)
    return False


def _origin(url: str) -> tuple[str, str, int | None]:
    """Scheme, host and port of a URL (the port spelled out), the unit credentials belong to."""
    scp = re.fullmatch(r"(?:[^@/]+@)?([^/:]+):(?!//).*", url)  # git@host:path, ssh's short form
    if scp and "://" not in url:
        return "ssh", scp.group(1).lower(), 22
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        port = None
    scheme = parts.scheme.lower()
    return scheme, (parts.hostname or "").lower(), port or {"https": 443, "http": 80, "ssh": 22}.get(scheme)


@dataclass
class FetchLimits:
    https_tokens: dict[str, str]
    ssh_key: Path | None = None
    timeout_seconds: int | None = None
    max_bytes: int | None = None


def set_network_timeouts(seconds: int) -> None:
    """Make a stalled server fail instead of hanging forever (process-wide libgit2 options)."""
    try:
        pygit2.option(pygit2.enums.Option.SET_SERVER_CONNECT_TIMEOUT, min(seconds, 60) * 1000)
        pygit2.option(pygit2.enums.Option.SET_SERVER_TIMEOUT, min(seconds, 300) * 1000)
    except (AttributeError, ValueError, pygit2.GitError):  # older libgit2: no such options
        pass


def mirror_dir_name(name: str) -> str:
    """A directory name for a repository name: readable, safe on every file system, and (128 bits of SHA-256 of the
    whole name) not one another name can be made to share. The readable part is cut at 60 characters and maps
    `/` and `_` alike, so the hash alone tells names apart: 32 bits of it were found colliding in seconds (issue
    31). MirrorStore._reserve still checks that the directory is free and named by no repository."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._") or "repo"
    return f"{safe[:60]}-{hashlib.sha256(name.encode()).hexdigest()[:32]}.git"


# An absolute path up to and including a mirror's directory (or its staging one): libgit2 names
# files by absolute path, and the data directory is the server's business, not the reader's.
_MIRROR_PREFIX = re.compile(r"(?:/[^/\s'\"]+)*/(?:\.incoming-)?[^/\s'\"]+\.git(?:/|(?=['\"\s]|$))")


def _describe(error: Exception) -> str:
    """libgit2's or the OS's words on one line, bounded, with the path of the mirror left out
    ('refs/heads/x' rather than '/srv/gad/mirrors/web-1a2b3c4d.git/refs/heads/x')."""
    text = str(error).strip().rstrip(".") or error.__class__.__name__
    return _MIRROR_PREFIX.sub(lambda m: "" if m.group().endswith("/") else "the mirror", text.splitlines()[0])[:300]


class Mirror:
    """One repository on disk, read through pygit2."""

    def __init__(self, path: Path):
        self.path = path
        try:
            self.repo = pygit2.Repository(str(path))
        except (pygit2.GitError, KeyError) as error:
            raise MirrorError(f"The mirror at {path} cannot be opened ({_describe(error)}); "
                              "re-clone it with `gad-bot sync --reclone NAME`.", operator_detail=True) from None

    # -- network -------------------------------------------------------------
    def set_origin(self, url: str) -> None:
        """Fetch from `url` from now on (a repository renamed or transferred on its forge)."""
        self.repo.remotes.set_url("origin", url)

    def fetch(self, limits: FetchLimits, progress: Progress | None = None, guard: SourcePolicy | None = None) -> None:
        """Fetch every ref with prune, then point HEAD at the remote's default branch.

        A network fetch runs in a child process that is killed at GAD_FETCH_TIMEOUT_SECONDS: a
        server that trickles its answer, or a libgit2 that loops, cannot hold a sync (and the
        repository's lock) forever. What a killed fetch leaves (temporary packs, ref locks) is
        swept under the repository's lock before the next one. With `guard` (sources typed in
        Slack), every connection the fetch makes is checked against that policy (`_guarded`).
        """
        self.check_loose_objects()
        try:
            remote = self.repo.remotes["origin"]
        except (KeyError, ValueError):
            raise MirrorError("This mirror has no `origin` remote; re-clone it with `gad-bot sync --reclone NAME`.") from None
        if guard is None and _copy_local(remote.url, self.repo, self.path):
            return
        _fetch_in_child(self.path, limits, progress, guard)

    def fetch_here(self, limits: FetchLimits, progress: Progress | None = None, guard: SourcePolicy | None = None) -> None:
        """The fetch itself, in this process (the child's half of `fetch`)."""
        remote = self.repo.remotes["origin"]
        # libgit2's tag auto-following would never move an existing tag; the mirror refspec moves
        # every ref, tags included, so auto-following is switched off.
        config = self.repo.config
        if "remote.origin.tagopt" not in config or config["remote.origin.tagopt"] != "--no-tags":
            config["remote.origin.tagopt"] = "--no-tags"
            remote = self.repo.remotes["origin"]  # re-read with the new setting
        deadline = time.monotonic() + limits.timeout_seconds if limits.timeout_seconds else None

        def callbacks() -> _Callbacks:  # one per connection: each may ask for credentials once
            return _Callbacks(remote.url, limits.https_tokens, limits.ssh_key, progress, deadline, limits.max_bytes)

        with _guarded(remote.url, guard, limits) as proxy:
            via = proxy.url if proxy is not None else None
            try:
                remote.fetch(callbacks=callbacks(), prune=FetchPrune.PRUNE, proxy=via)
                heads = remote.list_heads(callbacks=callbacks(), proxy=via)
            except (MirrorError, pygit2.GitError, OSError, ValueError, KeyError) as error:
                if guard is not None and urlsplit(remote.url).scheme == "ssh":
                    # one sentence whatever libssh2 met: its words would tell an open port from a
                    # closed one, or an ssh server from another, to whoever typed the address
                    raise MirrorError(f"Fetching from {_redacted(remote.url)} over ssh failed: the host could "
                                      "not be reached, or refused the connection or gad-bot's key (GAD_SSH_KEY); "
                                      "check the address, or ask the operator.") from None
                if isinstance(error, MirrorError):
                    raise
                if proxy is not None and proxy.refusals:  # libgit2 itself only says "unexpected status code: 403"
                    raise MirrorError(f"Fetching from {_redacted(remote.url)} was stopped where a redirect or a "
                                      f"DNS answer led it: {proxy.refusals[0]}") from None
                if _is_local_damage(error):
                    raise MirrorError(f"The mirror is damaged ({_describe(error)}); re-clone it with "
                                      "`gad-bot sync --reclone NAME`.") from None
                if _says_no_such_repository(error):
                    raise MirrorError(f"Fetching from {_redacted(remote.url)} failed: {GONE_UPSTREAM} "
                                      f"({_describe(error)}): it was deleted or moved, or gad-bot's credentials no "
                                      "longer read it; untrack it, or track its new URL.") from None
                raise MirrorError(f"Fetching from {_redacted(remote.url)} failed: {_describe(error)}.") from None
        for head in heads:
            if head.name == "HEAD" and head.symref_target and head.symref_target in self.repo.references:
                if self.repo.references["HEAD"].target != head.symref_target:
                    self.repo.set_head(head.symref_target)
                break
        else:
            self._guess_head()

    def clear_stale_locks(self) -> list[Path]:
        """Delete lock files a killed fetch left. Only call this while holding the repository's own
        lock (Tracking._repo_lock): then no gad-bot process can be writing this mirror."""
        removed = []
        for pattern in ("refs/**/*.lock", "packed-refs.lock", "HEAD.lock", "config.lock", "index.lock",
                        "objects/pack/*.lock"):
            for lock in self.path.glob(pattern):
                try:
                    lock.unlink()
                    removed.append(lock)
                except OSError:
                    pass
        return removed

    def _guess_head(self) -> None:
        """Without an advertised HEAD, keep HEAD on an existing branch (main, then master, then any)."""
        current = self.head_ref()
        if current:
            return
        branches = sorted(r for r in self.repo.references if r.startswith("refs/heads/"))
        for candidate in ("refs/heads/main", "refs/heads/master", *branches):
            if candidate in self.repo.references:
                self.repo.set_head(candidate)
                return

    def check_loose_objects(self, limit: int = 20_000) -> None:
        """Refuse a mirror with a truncated loose object: libgit2 1.9 loops forever inflating one.

        Mirrors keep almost everything in packs (libgit2 checks those itself); loose objects come
        from copying a local repository, so there are few. Beyond `limit` the check is skipped.
        """
        objects = self.path / "objects"
        loose = [p for p in objects.glob("[0-9a-f][0-9a-f]/*") if len(p.name) == 38]
        if len(loose) > limit:
            return
        for path in loose:
            try:
                inflater = zlib.decompressobj()
                inflater.decompress(path.read_bytes())
                complete = inflater.eof
            except (zlib.error, OSError):
                complete = False
            if not complete:
                raise MirrorError(f"The mirror is damaged: object {path.parent.name}{path.name} is truncated or "
                                  "unreadable; re-clone it with `gad-bot sync --reclone NAME`.")

    # -- refs ----------------------------------------------------------------
    def head_ref(self) -> str | None:
        """The default branch's full ref name, if HEAD points at an existing branch."""
        try:
            head = self.repo.references["HEAD"]
        except KeyError:
            return None
        target = head.target
        if isinstance(target, str):
            return target if target in self.repo.references else None
        return None  # detached HEAD: no default branch

    def ref_tips(self) -> dict[str, bytes]:
        """Every ref under refs/ peeled to the commit it names.

        Refs that lead to a tree or a blob are skipped, as `git log --all` skips them (git.git's
        `junio-gpg-pub` tag names a blob, the kernel's `v2.6.11-tree` a tree); a tag of a tag is
        followed to the end. A ref naming an object that cannot be read means a damaged mirror,
        never "this ref is gone": treating it as gone would silently drop history from every figure.
        """
        tips: dict[str, bytes] = {}
        for name in self.repo.references:
            if not name.startswith("refs/"):
                continue
            try:
                target = self.repo.references[name].resolve().target
            except (KeyError, pygit2.GitError):
                continue  # a dangling symbolic ref names nothing
            commit = self._peel_to_commit(name, target)
            if commit is not None:
                tips[name] = commit
        head = self.head_ref()
        if head and head in tips:
            tips["HEAD"] = tips[head]
        return tips

    def _peel_to_commit(self, name: str, target: pygit2.Oid) -> bytes | None:
        """The commit a ref's object leads to through any number of tags; None for a tree or blob."""
        seen = 0
        while True:
            try:
                obj = self.repo[target]
            except (KeyError, pygit2.GitError, ValueError) as error:
                raise MirrorError(f"The mirror is damaged: {name} points at an object it cannot read "
                                  f"({_describe(error)}); re-clone it with `gad-bot sync --reclone NAME`.") from None
            if isinstance(obj, pygit2.Commit):
                return obj.id.raw
            if not isinstance(obj, pygit2.Tag):
                return None  # a tree or a blob: no history behind it
            seen += 1
            if seen > 64:  # a cycle of tags cannot be written, but a damaged object store can fake one
                raise MirrorError(f"The mirror is damaged: {name} is a chain of more than 64 tags; re-clone it "
                                  "with `gad-bot sync --reclone NAME`.")
            target = obj.target

    def branch_tip(self, branch: str) -> bytes | None:
        """The commit a branch (short or full name, or HEAD) points at, or None."""
        tips = self.ref_tips()
        for candidate in (branch, f"refs/heads/{branch}", f"refs/remotes/origin/{branch}", f"refs/tags/{branch}"):
            if candidate in tips:
                return tips[candidate]
        return None

    def branches(self) -> list[str]:
        return sorted(r.removeprefix("refs/heads/") for r in self.repo.references if r.startswith("refs/heads/"))

    # -- history -------------------------------------------------------------
    def estimate_commits(self, samples: int = 4000) -> int | None:
        """About how many commits the mirror holds, for progress only (None when unknown).

        Counting exactly is a walk as long as the index's own; instead the type byte of a few
        thousand packed objects, sampled through the pack index, gives the share of commits
        (within a few per cent), times the number of packed objects. Deltified objects count as
        non-commits: git does not deltify commits.
        """
        import mmap
        import random
        import struct

        total = 0.0
        rng = random.Random(0)
        for idx_path in (self.path / "objects" / "pack").glob("pack-*.idx"):
            pack_path = idx_path.with_suffix(".pack")
            try:
                with open(idx_path, "rb") as idx_file, open(pack_path, "rb") as pack_file:
                    idx = mmap.mmap(idx_file.fileno(), 0, access=mmap.ACCESS_READ)
                    if idx[:8] != b"\xfftOc\x00\x00\x00\x02":
                        continue  # a version 1 index: rare and old; leave the estimate to the others
                    count = struct.unpack(">I", idx[8 + 255 * 4:8 + 256 * 4])[0]
                    if not count:
                        continue
                    offsets_at = 8 + 256 * 4 + count * 24
                    large_at = offsets_at + count * 4
                    picks = [rng.randrange(count) for _ in range(min(samples, count))]
                    commits = 0
                    for pick in picks:
                        offset = struct.unpack(">I", idx[offsets_at + 4 * pick:offsets_at + 4 * pick + 4])[0]
                        if offset & 0x80000000:
                            position = large_at + 8 * (offset & 0x7FFFFFFF)
                            offset = struct.unpack(">Q", idx[position:position + 8])[0]
                        pack_file.seek(offset)
                        kind = (pack_file.read(1) or b"\x00")[0] >> 4 & 7
                        commits += kind == 1
                    total += count * commits / len(picks)
            except (OSError, ValueError, struct.error):
                continue
        loose = sum(1 for p in (self.path / "objects").glob("[0-9a-f][0-9a-f]/*") if len(p.name) == 38)
        estimate = int(total) + loose // 3  # loose objects: a commit with its tree and a blob or so
        return estimate or None

    def commits_not_in(self, tips: list[bytes], indexed: Callable[[bytes], bool]) -> list[bytes]:
        """The commits `tips` reach without passing through an `indexed` one, tips first (raw ids).

        An incremental walk as `git log NEW --not OLD` pays for git's painting of OLD down to the
        oldest new commit's base: a pull request opened on a three-year-old commit, hidden behind
        570 tags, cost 6.8 s for 4 commits on the 1M history. Stopping at commits the index already
        holds reads only the new commits (their parents' ids, through libgit2), whatever their age.
        """
        found: list[bytes] = []
        seen: set[bytes] = set()
        stack = [t for t in dict.fromkeys(tips) if not indexed(t)]
        seen.update(stack)
        try:
            while stack:
                oid = stack.pop()
                found.append(oid)
                for parent in self.repo[pygit2.Oid(raw=oid)].parent_ids:
                    raw = parent.raw
                    if raw not in seen and not indexed(raw):
                        seen.add(raw)
                        stack.append(raw)
        except (KeyError, pygit2.GitError, ValueError) as error:
            raise MirrorError(f"The mirror is damaged ({_describe(error)}); re-clone it with "
                              "`gad-bot sync --reclone NAME`.") from None
        return found

    def has_commit(self, oid: bytes) -> bool:
        try:
            return isinstance(self.repo.get(pygit2.Oid(raw=oid)), pygit2.Commit)
        except (ValueError, pygit2.GitError):
            return False

    # -- trees ---------------------------------------------------------------
    def tree_of(self, tip: bytes) -> str:
        """The id of the tree at a commit (the cache key for anything computed from files)."""
        return str(self.repo[pygit2.Oid(raw=tip)].peel(pygit2.Tree).id)

    def export_files(self, tip: bytes, dest: Path, limits: ExportLimits, *, paths: tuple[str, ...] = (),
                     exclude_paths: tuple[str, ...] = ()) -> int:
        """Write the files of the commit's tree under `paths` (all when empty), less `exclude_paths`, into `dest`.

        Every file is written flat under a name gad-bot makes, its number and its extension
        (`17.c`), never under the name a stranger chose: names reach line counters whose helpers
        pass them through /bin/sh. A blob is written once per extension (both SLOCCount and cloc
        count identical files once), so a tree that repeats one blob costs one file. Symlinks,
        submodules and blobs over `limits.max_file_bytes` are skipped. Raises ExportLimitError when
        the files, bytes or time asked exceed `limits`, MirrorError when an object is missing.
        Returns the number of files written.
        """
        included = tuple(p.encode("utf-8", "surrogateescape") for p in paths)
        excluded = tuple(p.encode("utf-8", "surrogateescape") for p in exclude_paths)
        deadline = time.monotonic() + limits.seconds
        written_files = written_bytes = 0
        seen: set[tuple[bytes, bytes]] = set()
        try:
            root = self.repo[pygit2.Oid(raw=tip)].peel(pygit2.Tree)
            stack: list[tuple[pygit2.Tree, bytes]] = [(root, b"")]
            while stack:
                tree, prefix = stack.pop()
                if time.monotonic() > deadline:
                    raise ExportLimitError("seconds", limits.seconds)
                for entry in tree:
                    path = prefix + entry.raw_name
                    if _under_any(path, excluded):
                        continue
                    if entry.filemode == pygit2.enums.FileMode.TREE:
                        if not included or _under_any(path, included) or any(i.startswith(path + b"/") for i in included):
                            stack.append((self.repo[entry.id], path + b"/"))
                        continue
                    if entry.filemode not in (pygit2.enums.FileMode.BLOB, pygit2.enums.FileMode.BLOB_EXECUTABLE):
                        continue
                    if included and not _under_any(path, included):
                        continue
                    extension = safe_extension(entry.raw_name)
                    if (entry.id.raw, extension) in seen:
                        continue
                    seen.add((entry.id.raw, extension))
                    blob = self.repo[entry.id]
                    if blob.size > limits.max_file_bytes:
                        continue
                    if written_files + 1 > limits.max_files:
                        raise ExportLimitError("files", limits.max_files)
                    if written_bytes + blob.size > limits.max_bytes:
                        raise ExportLimitError("bytes", limits.max_bytes)
                    (dest / f"{written_files}{extension.decode('ascii')}").write_bytes(blob.data)
                    written_files += 1
                    written_bytes += blob.size
        except KeyError as error:  # libgit2 could not find an object the tree names
            raise MirrorError(f"The mirror lacks object {_missing_id(error)} of the tree it counts lines in; "
                              "re-clone it with `gad-bot sync --reclone NAME`.") from None
        except pygit2.GitError as error:
            raise MirrorError(f"The mirror could not read the tree it counts lines in ({_describe(error)}); "
                              "re-clone it with `gad-bot sync --reclone NAME`.") from None
        return written_files

    # -- identity ------------------------------------------------------------
    def mailmap_blob(self) -> tuple[str | None, bytes]:
        """The `.mailmap` on the default branch's tree: (blob id, contents), or (None, b'')."""
        head = self.head_ref()
        if not head:
            return None, b""
        try:
            tree = self.repo.references[head].peel(pygit2.Commit).tree
            entry = tree[".mailmap"]
            blob = self.repo[entry.id]
        except (KeyError, pygit2.GitError, ValueError):
            return None, b""
        if not isinstance(blob, pygit2.Blob):
            return None, b""
        return str(blob.id), blob.data


_SAFE_EXTENSION = re.compile(rb"\.[A-Za-z0-9_+]{1,15}")


def safe_extension(name: bytes) -> bytes:
    """The last extension of a file name when it is plain letters, digits, `_` or `+` (`.c`, `.C`, `.c++`), else b''."""
    dot = name.rfind(b".")
    if dot <= 0:  # no extension, or a dot file (`.bashrc` has none)
        return b""
    extension = name[dot:]
    return extension if _SAFE_EXTENSION.fullmatch(extension) else b""


def _under_any(path: bytes, prefixes: tuple[bytes, ...]) -> bool:
    return any(path == prefix or path.startswith(prefix + b"/") for prefix in prefixes)


def _missing_id(error: KeyError) -> str:
    found = re.search(r"[0-9a-f]{40,64}", str(error))
    return found.group(0)[:12] if found else "(unknown)"


class Mailmap:
    """A parsed .mailmap; `resolve(name, email)` gives the canonical (name, email).

    git matches mailmap names and e-mails case-insensitively (ASCII letters); libgit2 1.9 matches
    e-mails exactly, so `<new@x> <OLD@X>` would miss commits by old@x. Both sides are therefore
    ASCII-lower-cased before libgit2 sees them; what comes back is lower-case, which is all the
    metric uses (people are lower-cased e-mails, bots are matched case-insensitively).
    """

    def __init__(self, data: bytes):
        self._map = pygit2.Mailmap.from_buffer(data.lower()) if data else None  # bytes.lower(): ASCII only

    def resolve(self, name: str, email: str) -> tuple[str, str]:
        if self._map is None:
            return name, email
        try:
            return self._map.resolve(ascii_lower(name), ascii_lower(email))
        except (ValueError, pygit2.GitError):
            return name, email


# A sync whose source answers this has nothing to retry: `gad-bot doctor` fails on it at once (is_gone_upstream).
GONE_UPSTREAM = "the source says there is no such repository"
# What servers say for a repository that is not there: smart HTTP's status, git daemon's and the forges' words.
_NO_SUCH_REPOSITORY = ("status code: 404", "status code: 410", "no such repository", "repository not found",
                       "could not be found", "does not appear to be a git repository")


def _says_no_such_repository(error: Exception) -> bool:
    text = str(error).lower()
    return any(marker in text for marker in _NO_SUCH_REPOSITORY)


def is_gone_upstream(last_error: str | None) -> bool:
    """Whether a recorded sync error is the source saying the repository is not there (see `fetch_here`)."""
    return bool(last_error) and GONE_UPSTREAM in last_error


def _is_local_damage(error: Exception) -> bool:
    """Whether a fetch failed on the mirror's own objects (not on the network or the remote)."""
    text = str(error).lower()
    return isinstance(error, KeyError) or any(
        marker in text for marker in ("object not found", "packfile", "pack file", "inflate", "corrupt",
                                      "missing object", "failed to parse", "bad object"))


@contextmanager
def _guarded(url: str, guard: SourcePolicy | None, limits: FetchLimits) -> Iterator["GuardProxy | None"]:
    """The proxy every connection of a guarded https:// fetch goes through (None when unguarded).

    ssh:// has no redirects, and libssh2 takes no proxy: its host is checked here, once, before
    the fetch, but libssh2 resolves it again itself, so only hosts the operator named exactly in
    GAD_ALLOWED_HOSTS are fetched over ssh from Slack (see docs/operations.md).
    """
    if guard is None:
        yield None
        return
    from .egress import ConnectRefused, GuardProxy
    from .sources import check_connect

    parts = urlsplit(url)
    if parts.scheme not in ("https", "ssh") or not parts.hostname:
        raise MirrorError(f"{_redacted(url)} was typed in Slack, where only https:// (and ssh:// with GAD_SSH_KEY) "
                          "sources are allowed; track it again from the command line if it is meant to be fetched.")

    def check(host: str, port: int) -> list[str]:
        try:
            return check_connect(host, port, guard)
        except SourceError as refused:
            raise ConnectRefused(str(refused)) from None

    if parts.scheme == "ssh":
        from .sources import check_ssh_host

        try:
            check_ssh_host(parts.hostname, parts.port or 22, guard)
        except SourceError as refused:
            raise MirrorError(f"Fetching from {_redacted(url)} was stopped: {refused}") from None
        yield None
        return
    connect_timeout = min(limits.timeout_seconds, 60) if limits.timeout_seconds else 60
    with GuardProxy(check, connect_timeout=connect_timeout) as proxy:
        yield proxy


def _child_request(limits: FetchLimits, guard: SourcePolicy | None, **what) -> dict:
    return {**what, "https_tokens": limits.https_tokens,
            "ssh_key": str(limits.ssh_key) if limits.ssh_key else None,
            "timeout": limits.timeout_seconds, "max_bytes": limits.max_bytes,
            # the policy's lists; the child resolves names with the system resolver
            "guard": None if guard is None else {"allowed": list(guard.allowed_hosts),
                                                 "denied": list(guard.denied_hosts), "ssh": guard.allow_ssh}}


def fetch_many(paths: list[Path], limits: FetchLimits, guard: SourcePolicy | None,
               done: Callable[[int, str | None], None]) -> None:
    """Fetch each mirror of `paths` with prune, as `Mirror.fetch` does, one after the other (the caller holds each
    repository's lock, or owns the new mirror, until `done` says it is finished). `done(i, error or None)` is called
    as each finishes; each fetch is its own child with the whole GAD_FETCH_TIMEOUT_SECONDS."""
    for number, path in enumerate(paths):
        try:
            _fetch_in_child(path, limits, None, guard)
        except MirrorError as error:
            done(number, str(error).splitlines()[0] if str(error) else "The fetch failed.")
        else:
            done(number, None)


# -- the fetch child -------------------------------------------------------------------------------
# A network fetch runs in a child process: killed at its deadline (a trickling server or a looping
# libgit2 cannot hold a sync, or the repository's lock, forever), its memory its own. Starting a new
# interpreter for it (Python + pygit2: ~0.4 s of CPU) cost more than fetching a small repository, so
# the children are forked by multiprocessing's fork server, a clean interpreter started once per
# process with this module (and pygit2) imported, before libgit2 has any thread or open repository:
# each fork starts ready to fetch. Secrets travel pickled through the server's pipes, never on a
# command line.

_CHILD_PRELOAD = [f"{__package__}.forkserved"]  # this module, and no second run of the main script in each child


def _child_context():
    import multiprocessing

    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(_CHILD_PRELOAD)  # read once, when this process's fork server starts
    return context


def _fetch_in_child(path: Path, limits: FetchLimits, progress: Progress | None, guard: SourcePolicy | None) -> None:
    """Run Mirror.fetch_here in a child process; kill it when the deadline passes."""
    context = _child_context()
    request = _child_request(limits, guard, path=str(path))
    ours, theirs = context.Pipe(duplex=True)  # duplex: the child watches it for this process's end
    child = context.Process(target=_child_main, args=(theirs, request), name="gad-bot fetch", daemon=False)
    child.start()
    theirs.close()
    deadline = time.monotonic() + limits.timeout_seconds if limits.timeout_seconds else None
    outcome: list[str] = []
    fetched = False  # the child says so: its exit code is no witness (below)
    try:
        while True:
            if not ours.poll(None if deadline is None else max(0.0, deadline - time.monotonic())):
                child.kill()
                raise MirrorError(f"The fetch timed out: it took longer than GAD_FETCH_TIMEOUT_SECONDS "
                                  f"({limits.timeout_seconds} s) allows; try again later or raise the limit.")
            try:
                kind, *rest = ours.recv()
            except (EOFError, OSError):  # the child ended (its end of the pipe closed)
                break
            if kind == "P" and progress:
                progress(*rest)
            elif kind == "E":
                outcome.append(rest[0])
            elif kind == "D":
                fetched = True
        child.join(timeout=None if deadline is None else max(1.0, deadline - time.monotonic()))
        if child.exitcode is None:  # the pipe closed but the child lingers: the deadline holds for it too
            child.kill()
            raise MirrorError(f"The fetch timed out: it took longer than GAD_FETCH_TIMEOUT_SECONDS "
                              f"({limits.timeout_seconds} s) allows; try again later or raise the limit.")
    finally:
        ours.close()
        child.join()
        exitcode = child.exitcode
        child.close()
    if outcome:
        raise MirrorError(outcome[-1])
    # Only the child's own "done" counts: multiprocessing reads a forkserver child's exit code from a socket, and
    # Process.start in another lane's thread may read it first (its _cleanup polls every child): this thread then
    # sees 255 for a fetch that succeeded (1 in 300 clones of bench_forge.py).
    if not fetched:
        raise MirrorError(f"The fetch stopped unexpectedly (exit {exitcode}).")


def _end_with_requester(channel) -> None:
    """A fetch child must not outlive the process that asked for it (kill -9 of a sync, say): that process
    never writes to `channel`, so a read of it ends only when its end closes, and then this child ends too.
    (Its parent is the fork server, which ends only once every child has: PR_SET_PDEATHSIG cannot tell.)"""
    import threading

    def watch() -> None:
        try:
            while True:
                channel.recv_bytes()
        except (EOFError, OSError):
            os._exit(4)

    threading.Thread(target=watch, name="requester", daemon=True).start()


def _child_main(channel, request: dict) -> None:
    """A fetch child: fetch the mirror of `request`; progress and the error, if any, go to `channel`."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)  # libgit2's or Python's words never reach serve's log (they may name a source's URL)
    os.close(devnull)
    _end_with_requester(channel)
    limits = FetchLimits(request["https_tokens"], Path(request["ssh_key"]) if request["ssh_key"] else None,
                         request["timeout"], request["max_bytes"])
    if limits.timeout_seconds:
        set_network_timeouts(limits.timeout_seconds)

    def progress(phase: str, done: int, total: int) -> None:
        channel.send(("P", phase, done, total))

    guard = request.get("guard")
    policy = None if guard is None else SourcePolicy(tuple(guard["allowed"]), tuple(guard["denied"]), guard["ssh"])
    try:
        Mirror(Path(request["path"])).fetch_here(limits, progress, policy)
        channel.send(("D",))
    except MirrorError as error:
        channel.send(("E", str(error).splitlines()[0] if str(error) else "The fetch failed."))
    except (pygit2.GitError, OSError, ValueError) as error:
        channel.send(("E", f"The fetch failed: {_describe(error)}."))
    # the channel stays open until the process ends: the watching thread reads it


def _redacted(url: str) -> str:
    return redact(url)


class MirrorStore:
    """The directory of bare mirrors."""

    def __init__(self, root: Path, limits: FetchLimits, locks: Path | None = None,
                 named: Callable[[], Iterable[Path] | None] | None = None):
        self.root = root
        self.locks = locks or root.parent / "locks"  # the data directory's, beside each repository's own lock
        self.limits = limits  # the fetch child applies them (set_network_timeouts, its deadline)
        # the mirror paths the index names (None: it cannot be read): a directory one of them names is never
        # given to another repository, nor removed for one (see _reserve and remove)
        self.named = named

    def _named_count(self, path: Path) -> int | None:
        """How many repositories the index says have their mirror at `path` (None: the index cannot say)."""
        if self.named is None:
            return 0
        paths = self.named()
        if paths is None:
            return None
        mine = os.path.abspath(path)
        return sum(1 for named in paths if os.path.abspath(named) == mine)

    def _reserve(self, name: str) -> Path:
        """A new, empty directory for `name`'s mirror, made here: mirror_dir_name(name) when it is free, else the same
        with -2, -3, ... A directory that exists (another repository's mirror, or leftovers) is never taken nor
        removed, and neither is a path the index names for a repository whose directory went missing. mkdir is
        the claim: two clones of one name at once get one directory each."""
        self.root.mkdir(parents=True, exist_ok=True, mode=0o700)
        named = self.named() if self.named is not None else ()
        taken = {os.path.abspath(path) for path in named or ()}
        first = mirror_dir_name(name)
        for number in range(1, 1000):
            final = self.root / (first if number == 1 else f"{first[:-len('.git')]}-{number}.git")
            if os.path.abspath(final) in taken:
                continue
            try:
                final.mkdir(mode=0o700)
            except FileExistsError:
                continue
            return final
        raise MirrorError(f"No free directory for the mirror of `{name}` under {self.root}; run `gad-bot doctor`.",
                          operator_detail=True)

    def _staging_for(self, final: Path) -> Path:
        """A staging directory of its own for a clone into `final` (never another clone's: each is made here)."""
        import tempfile

        return Path(tempfile.mkdtemp(prefix=".incoming-", suffix=f"-{final.name}", dir=self.root))

    @staticmethod
    def _unreserve(final: Path) -> None:
        """Give back a reserved directory a clone did not fill (rmdir: only ever an empty one)."""
        try:
            final.rmdir()
        except OSError:
            pass

    def create(self, source: str, name: str, progress: Progress | None = None, *, replace: Path | None = None,
               guard: SourcePolicy | None = None) -> Path:
        """Clone a bare mirror of every ref of `source`; on any failure nothing is left behind.

        With `replace`, the fresh clone goes to a new directory and the (damaged) old one is removed
        once the clone is complete. A new path matters: libgit2 caches pack files by path. With
        `guard`, every connection is checked against that policy (see `Mirror.fetch`).
        """
        final = self._reserve(f"{name}@{time.time_ns()}" if replace else name)
        staging = None
        try:
            staging = self._staging_for(final)
            repo = _staged_mirror(source, staging)
            if guard is not None or not _copy_local(source, repo, staging):
                Mirror(staging).fetch(self.limits, progress, guard)
            staging.rename(final)  # onto the empty directory reserved for it: rename(2) replaces an empty one
            if replace is not None and (self._named_count(replace) or 0) <= 1:  # its own; never one another names
                self._remove_tree(replace)
        except MirrorError:
            self._drop(staging, final)
            raise
        except (pygit2.GitError, OSError, ValueError) as error:
            self._drop(staging, final)
            raise MirrorError(f"Cloning {_redacted(source)} failed: {_describe(error)}.") from None
        return final

    def _drop(self, staging: Path | None, final: Path) -> None:
        """What a failed clone made: its own staging directory, and the reserved directory while still empty."""
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)
        self._unreserve(final)

    def create_many(self, items: list[tuple[str, str]], done: Callable[[int, Path | None, str | None], None], *,
                    guard: SourcePolicy | None = None) -> None:
        """Clone a bare mirror of each (network source, name), as `create` does, one after another;
        `done(i, path, None)` or `done(i, None, error)` as each finishes (nothing is left of a failed one)."""
        staged: list[tuple[int, Path, Path]] = []
        for number, (source, name) in enumerate(items):
            final = staging = None
            try:
                final = self._reserve(name)
                staging = self._staging_for(final)
                _staged_mirror(source, staging)
                staged.append((number, staging, final))
            except (pygit2.GitError, OSError, ValueError, MirrorError) as error:
                if final is not None:
                    self._drop(staging, final)
                done(number, None, str(error) if isinstance(error, MirrorError)
                     else f"Cloning {_redacted(source)} failed: {_describe(error)}.")

        def fetched(i: int, error: str | None) -> None:
            number, staging, final = staged[i]
            if error is None:
                try:
                    staging.rename(final)
                except OSError as failure:
                    error = f"Cloning {_redacted(items[number][0])} failed: {_describe(failure)}."
            if error is not None:
                self._drop(staging, final)
            done(number, None if error else final, error)

        if staged:
            fetch_many([staging for _, staging, _ in staged], self.limits, guard, fetched)

    @contextmanager
    def creating(self) -> Iterator[None]:
        """Held (shared) from the clone of a new mirror until the index names it: track, reclone, an organization's
        clones. `sweep` takes it exclusively before it calls anything an orphan, so a mirror on its way into the
        index is never one (a kill -9 in between leaves a true orphan, swept later)."""
        with self._creation_lock(fcntl.LOCK_SH):
            yield

    @contextmanager
    def _creation_lock(self, how: int) -> Iterator[bool]:
        self.locks.mkdir(parents=True, exist_ok=True, mode=0o700)
        with open(self.locks / "mirrors.lock", "a") as handle:
            try:
                fcntl.flock(handle, how)
            except BlockingIOError:
                yield False
                return
            try:
                yield True
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def leftovers(self, named: Callable[[], Iterable[Path] | None] | None = None) -> list[Path]:
        """What `sweep` would remove now."""
        with self._creation_lock(fcntl.LOCK_EX | fcntl.LOCK_NB) as alone:
            return self._leftovers(named() if named is not None and alone else None, alone)

    def _leftovers(self, named: Iterable[Path] | None, alone: bool, older_than: float = LEFTOVER_SECONDS) -> list[Path]:
        """What interrupted work left under the mirrors: temporary packs and lock files older than `older_than` seconds
        (a fetch still running in some process writes them now), `.keep` files of git processes of this host that are
        gone, and, `alone` (no mirror is being created: see `creating`), staging directories of clones and, given the
        mirror paths the index names, orphan mirrors. A staging directory's own time says nothing while its clone
        runs (its files are written below it) or waits its turn among an organization's clones."""
        if not self.root.is_dir():
            return []
        cutoff = time.time() - older_than
        found = [entry for entry in self.root.iterdir()
                 if alone and entry.name.startswith(".incoming-") and _older(entry, cutoff)]
        # git's tmp_pack_, tmp_idx_, tmp_obj_...; libgit2's pack_git2_ and tmp_object_git2_; _copy_whole's tmp_copy_
        for pattern in ("*/objects/**/tmp_*", "*/objects/pack/pack_git2_*", "*/objects/pack/*.lock",
                        "*/refs/**/*.lock", "*/*.lock"):
            found += [path for path in self.root.glob(pattern) if path.is_file() and _older(path, cutoff)]
        found += [keep for keep in self.root.glob("*/objects/pack/pack-*.keep") if _dead_keep(keep)]
        if named is not None:
            known = {os.path.abspath(path) for path in named}
            found += [entry for entry in sorted(self.root.iterdir())
                      if not entry.name.startswith(".") and entry.is_dir() and not entry.is_symlink()
                      and os.path.abspath(entry) not in known]
        return found

    def sweep(self, named: Callable[[], Iterable[Path] | None] | None = None) -> list[Path]:
        """Remove the `leftovers`; orphan mirrors only given `named` (the mirror paths the index names, read once no
        mirror is being created; None when they cannot be known) and only when no track is creating one now (then
        they wait for the next sweep)."""
        with self._creation_lock(fcntl.LOCK_EX | fcntl.LOCK_NB) as alone:
            found = self._leftovers(named() if named is not None and alone else None, alone)
            removed: list[Path] = []
            for path in found:
                try:
                    if path.is_dir():
                        shutil.rmtree(path)
                    else:
                        path.unlink()
                except FileNotFoundError:
                    pass  # its own process finished with it meanwhile
                except OSError as error:
                    log.warning("could not remove %s: %s", path, error.strerror)
                    continue
                removed.append(path)
        if removed:
            log.info("removed %d leftover(s) under %s: %s", len(removed), self.root,
                     ", ".join(str(p.relative_to(self.root)) for p in removed[:10]))
        return removed

    def remove(self, path: Path) -> None:
        """Remove a mirror no repository names any more (untracked, or a track that failed). One the index still
        names for a repository is kept, whoever asks (and so is every one while the index cannot be read): the
        sweep removes it once it is an orphan."""
        count = self._named_count(path)
        if count is None or count > 0:
            log.warning("kept the mirror %s: %s", path.name, "the index cannot be read" if count is None
                        else "another repository's mirror is there")
            return
        self._remove_tree(path)

    def _remove_tree(self, path: Path) -> None:
        if path.resolve().is_relative_to(self.root.resolve()) and path.exists():
            shutil.rmtree(path)


def _older(path: Path, cutoff: float) -> bool:
    try:
        return path.stat().st_mtime < cutoff
    except OSError:
        return False  # gone meanwhile


# What git writes into the .keep file of a pack it is receiving (`index-pack --keep`); removed once the refs are updated.
_KEEP_LINE = re.compile(rb"(?:fetch-pack|receive-pack|index-pack) (\d+) on (\S+)")


def _dead_keep(keep: Path) -> bool:
    """A .keep that git left while receiving a pack, naming a process of this host that no longer runs: the pack is
    whole, but kept packs are never repacked. A .keep an operator wrote (any other text) is theirs."""
    try:
        match = _KEEP_LINE.fullmatch(keep.read_bytes()[:200].strip())
    except OSError:
        return False
    if match is None or match.group(2).decode(errors="replace") != socket.gethostname():
        return False
    try:
        os.kill(int(match.group(1)), 0)
    except ProcessLookupError:
        return True
    except (OSError, OverflowError):
        return False
    return False


def _staged_mirror(source: str, staging: Path) -> pygit2.Repository:
    """A new, empty bare mirror of `source` at `staging` (every ref, no tag auto-following), for the service user only."""
    repo = pygit2.init_repository(str(staging), bare=True)
    repo.remotes.create("origin", source, MIRROR_REFSPEC)
    repo.config["remote.origin.mirror"] = True
    repo.config["remote.origin.tagopt"] = "--no-tags"
    _make_private(staging)  # libgit2 used the umask; the config holds the source URL
    return repo


def _copy_whole(path: Path, target: Path) -> None:
    """Copy an object file so that `target` is whole or absent: a copy cut short (a full disk) leaves
    only its temporary file, which is removed; git would read a truncated object as a damaged mirror."""
    temporary = target.with_name(f"tmp_copy_{target.name}")
    try:
        shutil.copy2(path, temporary)
        os.chmod(temporary, 0o400)
        os.replace(temporary, target)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def _write_failure(error: OSError, mirror_path: Path, source: str) -> str:
    """One sentence naming the real cause of a failed write into a mirror."""
    if error.errno in (errno.ENOSPC, errno.EDQUOT):
        return (f"The disk holding {mirror_path.parent} is full: copying new objects from {redact(source)} stopped "
                "(the mirror is kept as it was). Free space there (`gad-bot doctor` shows how much is left); "
                "the next sync picks up where this one would have.")
    return (f"Writing new objects from {redact(source)} into {mirror_path} failed ({error.strerror}); the mirror is kept "
            "as it was. Check that the data directory is writable, then sync again.")


def _copy_local(source: str, mirror: pygit2.Repository, mirror_path: Path) -> bool:
    """Fetch from a local repository the way `git clone --mirror --local` does: hard-link the object
    files the mirror lacks (copy across file systems), then make every ref match the source's,
    deleting those the source no longer has (prune). libgit2's local transport would instead build
    a new pack with a delta search: minutes for a million commits, seconds for a thousand.
    A source that borrows objects (`objects/info/alternates`, as `git clone --shared`/`--reference`
    and forge object pools make) lends them to the mirror too, through the same object directories
    made absolute, as `git clone --local` does. False when not a local path: the caller fetches."""
    if "://" in source or not Path(source).expanduser().exists():
        return False
    try:
        origin = pygit2.Repository(str(Path(source).expanduser()))
    except (pygit2.GitError, KeyError):
        return False
    objects = Path(origin.path) / "objects"
    if _share_alternates(objects, mirror_path / "objects"):
        mirror = pygit2.Repository(str(mirror_path))  # libgit2 reads alternates when it opens the repository
    # Packs first (with their .idx after the .pack), then loose objects, so that no ref below can
    # name an object the mirror cannot read yet.
    candidates = sorted(objects.glob("pack/pack-*.pack")) + sorted(objects.glob("pack/pack-*.idx")) + \
        [p for p in objects.glob("[0-9a-f][0-9a-f]/*") if len(p.name) == 38]
    added: list[Path] = []
    try:
        for path in candidates:
            target = mirror_path / "objects" / path.relative_to(objects)
            if target.exists():
                continue
            target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            try:
                os.link(path, target)  # the same file as the source's: its mode is the source's
            except OSError:
                _copy_whole(path, target)
            added.append(target)
    except OSError as error:
        # A full disk (or any write error) midway: take back what this fetch added, so the mirror is
        # exactly as it was; the sync is recorded as failed, with back-off, in one sentence.
        for target in reversed(added):
            target.unlink(missing_ok=True)
        raise SourceError(_write_failure(error, mirror_path, source)) from None
    wanted = {name for name in origin.references if name.startswith("refs/")}
    targets = {name: origin.references[name].target for name in wanted}  # a symbolic ref (str) stays symbolic
    if not any(n.startswith("refs/") for n in mirror.references):
        # A new mirror: every direct ref in one packed-refs file, as `git clone --local` does; one
        # loose file per ref (libgit2's way) cost 0.3 s for git.git's 4,000 refs.
        direct = sorted((n, t) for n, t in targets.items() if not isinstance(t, str))
        text = "# pack-refs with: sorted \n" + "".join(f"{t} {n}\n" for n, t in direct)
        with os.fdopen(os.open(mirror_path / "packed-refs", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as out:
            out.write(text)  # private whatever the umask, as every file of the mirror
        mirror = pygit2.Repository(str(mirror_path))
    for name, target in targets.items():
        if name not in mirror.references or mirror.references[name].target != target:
            mirror.references.create(name, target, force=True)
    for name in [n for n in mirror.references if n.startswith("refs/") and n not in wanted]:
        mirror.references.delete(name)
    head = origin.references.get("HEAD")
    if head is not None and isinstance(head.target, str) and head.target in mirror.references:
        if mirror.references["HEAD"].target != head.target:
            mirror.set_head(head.target)
    else:
        Mirror(mirror_path)._guess_head()
    return True


def _share_alternates(source_objects: Path, mirror_objects: Path) -> bool:
    """Point the mirror at the object directories the source borrows from; True when that changed."""
    listed = source_objects / "info" / "alternates"
    borrowed: list[str] = []
    if listed.exists():
        for line in listed.read_text(errors="replace").splitlines():
            line = line.strip()
            if line and not line.startswith("#"):
                borrowed.append(str((source_objects / line).resolve()))  # relative lines are relative to objects/
    target = mirror_objects / "info" / "alternates"
    wanted = "".join(f"{b}\n" for b in borrowed)
    current = target.read_text(errors="replace") if target.exists() else ""
    if current == wanted:
        return False
    target.parent.mkdir(parents=True, exist_ok=True)
    if wanted:
        target.write_text(wanted)
    else:
        target.unlink()
    return True


def _make_private(root: Path) -> None:
    """Directories 0700, files 0600 under `root` (a new mirror: nothing in it is shared yet)."""
    os.chmod(root, 0o700)
    for where, dirs, files in os.walk(root):
        for name in dirs:
            os.chmod(os.path.join(where, name), 0o700)
        for name in files:
            os.chmod(os.path.join(where, name), 0o600)


def open_local(path: str) -> Path:
    """The git directory of a local repository (bare or not), or SourceError.

    A path inside a work tree (`report .` from a subdirectory) gives the repository's own git directory,
    so that the same repository is known whichever of its directories is named."""
    where = Path(path[len("file://"):] if path.lower().startswith("file://") else path).expanduser()
    if not where.exists():
        raise SourceError(f"`{path}` does not exist; give the path of a repository or of a bare mirror.")
    discovered = pygit2.discover_repository(str(where.resolve()))
    if not discovered:
        raise SourceError(f"`{path}` is not a git repository; give the path of a repository or of a bare mirror.")
    return Path(discovered)

