"""Build git repositories in code: explicit signatures, dates, offsets, refs and trees."""

from __future__ import annotations

import subprocess
from datetime import datetime, timezone, timedelta
from pathlib import Path

import pygit2


def when(text: str, offset_minutes: int = 0) -> tuple[int, int]:
    """(unix time, offset) for a wall-clock time `text` (YYYY-MM-DD[THH:MM]) in a zone `offset_minutes` east of UTC."""
    local = datetime.fromisoformat(text if "T" in text else text + "T12:00")
    moment = local.replace(tzinfo=timezone(timedelta(minutes=offset_minutes)))
    return int(moment.timestamp()), offset_minutes


class RepoBuilder:
    """A repository with helpers to write commits, branches, tags and merges."""

    def __init__(self, path: Path, bare: bool = False):
        self.path = Path(path)
        self.repo = pygit2.init_repository(str(path), bare=bare, initial_head="main")
        self._files: dict[str, dict[str, bytes]] = {}  # commit hex -> files
        self.counter = 0

    def _tree(self, files: dict[str, bytes]) -> pygit2.Oid:
        nested: dict = {}
        for path, data in files.items():
            node = nested
            *dirs, leaf = path.split("/")
            for d in dirs:
                node = node.setdefault(d, {})
            node[leaf] = data

        def write(node: dict) -> pygit2.Oid:
            builder = self.repo.TreeBuilder()
            for name, value in sorted(node.items()):
                if isinstance(value, dict):
                    builder.insert(name, write(value), pygit2.enums.FileMode.TREE)
                else:
                    builder.insert(name, self.repo.create_blob(value), pygit2.enums.FileMode.BLOB)
            return builder.write()

        return write(nested)

    def tip(self, ref: str) -> pygit2.Oid | None:
        ref = ref if ref.startswith("refs/") else f"refs/heads/{ref}"
        try:
            return self.repo.references[ref].peel(pygit2.Commit).id
        except KeyError:
            return None

    def commit(self, ref: str = "main", *, name: str = "Ann", email: str = "ann@example.com",
               date: str = "2024-01-02T12:00", offset: int = 0, parents: list | None = None,
               files: dict[str, str | bytes | None] | None = None, committer_date: str | None = None,
               message: str | None = None) -> pygit2.Oid:
        """A commit on `ref` (branch name or full ref) by name <email> at local time `date` in zone `offset` minutes."""
        full = ref if ref.startswith("refs/") else f"refs/heads/{ref}"
        if parents is None:
            tip = self.tip(full)
            parents = [tip] if tip is not None else []
        base = dict(self._files.get(str(parents[0]), {})) if parents else {}
        self.counter += 1
        changes = files if files is not None else {f"file{self.counter % 7}.txt": f"change {self.counter}"}
        for path, data in changes.items():
            if data is None:
                base.pop(path, None)
            else:
                base[path] = data.encode() if isinstance(data, str) else data
        tree = self._tree(base)
        author = pygit2.Signature(name, email, *when(date, offset))
        committer = pygit2.Signature(name, email, *when(committer_date or date, offset))
        oid = self.repo.create_commit(full, author, committer, message or f"commit {self.counter}\n", tree, parents)
        self._files[str(oid)] = base
        return oid

    def raw_commit(self, ref: str, author_line: str, parents: list | None = None) -> pygit2.Oid:
        """A commit whose author line is written verbatim (for impossible dates)."""
        full = ref if ref.startswith("refs/") else f"refs/heads/{ref}"
        if parents is None:
            tip = self.tip(full)
            parents = [tip] if tip is not None else []
        tree = self._tree(dict(self._files.get(str(parents[0]), {})) if parents else {"x": b"x"})
        lines = [f"tree {tree}"] + [f"parent {p}" for p in parents] + [
            f"author {author_line}", "committer C <c@example.com> 1700000000 +0000", "", "raw", ""]
        oid = self.repo.odb.write(pygit2.enums.ObjectType.COMMIT, "\n".join(lines).encode())
        self.repo.references.create(full, oid, force=True)
        self._files[str(oid)] = self._files.get(str(parents[0]), {}) if parents else {"x": b"x"}
        return oid

    def branch(self, name: str, target) -> None:
        self.repo.references.create(f"refs/heads/{name}", target, force=True)

    def tag(self, name: str, target, annotated: bool = False) -> None:
        if annotated:
            self.repo.create_tag(name, target, pygit2.enums.ObjectType.COMMIT,
                                 pygit2.Signature("T", "t@example.com", 1700000000, 0), "tag\n")
        else:
            self.repo.references.create(f"refs/tags/{name}", target, force=True)

    def set_ref(self, ref: str, target) -> None:
        self.repo.references.create(ref, target, force=True)

    def delete_ref(self, ref: str) -> None:
        self.repo.references.delete(ref if ref.startswith("refs/") else f"refs/heads/{ref}")

    def set_head(self, branch: str) -> None:
        self.repo.set_head(f"refs/heads/{branch}")

    def merge(self, into: str, other, **kwargs) -> pygit2.Oid:
        return self.commit(into, parents=[self.tip(into), other], **kwargs)

    def git(self, *args: str) -> str:
        """Run real git in this repository (the oracle), with the host's config blanked."""
        return subprocess.run(["git", "-c", "mailmap.blob=HEAD:.mailmap", *args], cwd=self.path, check=True, capture_output=True, text=True,
                              env=git_env()).stdout


def git_env() -> dict[str, str]:
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL="/dev/null", HOME="/nonexistent", LC_ALL="C")
    return env


def oracle_gad(path: Path, *, scope: str = "default", mailmap: bool = True, bots: bool = False,
               since: str | None = None, until: str | None = None) -> int:
    """METRIC.md's git one-liner, run for real: the number of distinct (person, day) pairs."""
    return len(oracle_pairs(path, scope=scope, mailmap=mailmap, bots=bots, since=since, until=until))


def oracle_pairs(path: Path, *, scope: str = "default", mailmap: bool = True, bots: bool = False,
                 since: str | None = None, until: str | None = None) -> set[tuple[bytes, bytes]]:
    """The distinct (person, day) pairs git's one-liner counts (several repositories: union them)."""
    revs = {"default": ["--branches", "--tags"], "head": ["HEAD"], "all": ["--all"]}[scope]
    fmt = "%aN%x00%aE%x00%ad" if mailmap else "%an%x00%ae%x00%ad"
    # Mailmap from the default branch's tree, as for a bare mirror (our builders have no work tree).
    args = ["git", "-c", "mailmap.blob=HEAD:.mailmap", "log", "--use-mailmap" if mailmap else "--no-mailmap", *revs, f"--format={fmt}", "--date=short"]
    if since:
        args.append(f"--since-as-filter={since}T00:00")  # note: filters on committer date; tests avoid relying on it
    out = subprocess.run(args, cwd=path, check=True, capture_output=True, env=git_env()).stdout
    pairs = set()
    for line in out.splitlines():
        if not bots and b"[bot]" in line.lower():
            continue
        _, email, day = line.split(b"\x00")
        pairs.add((email.lower(), day))
    return pairs
