"""`vs:cocomo` on a stranger's tree: no file name reaches a shell, no tree fills the disk.

Each test reproduces an attack of the second security review (issue 22): before the fix, a file
named `a$(CMD).l` ran CMD through SLOCCount's lex_count, and a 5 KB pack wrote 300,000 files.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pygit2
import pytest

from bot import scratch
from bot.engine import cocomo
from bot.confine import ExportLimits, Limits
from bot.errors import GadError, MirrorError
from bot.store.mirrors.mirror import Mirror
from bot.engine.query import parse_command, parse_query
from tests.conftest import TODAY
from tests.gitbuild import RepoBuilder, git_env

SLOCCOUNT = shutil.which("sloccount")
needs_sloccount = pytest.mark.skipif(SLOCCOUNT is None, reason="sloccount is not installed (apt-get install sloccount)")

C_FILE = b"int a;\nint b;\n"  # 2 physical source lines
LEX_FILE = b"%{\n#include <stdio.h>\n%}\n%%\n[0-9]+ { return 1; }\n%%\n"  # lex: SLOCCount's lex_count reads it
SQL_FILE = b"select 1;\nselect 2;\n"  # 2
Y_FILE = b"%%\nline: 'x' ;\n%%\n"  # 3


def tree_commit(builder: RepoBuilder, entries: list[tuple[bytes, bytes]]) -> pygit2.Oid:
    """A commit whose tree holds `entries` (raw file name, contents) at its root, built with `git mktree -z`
    so that any bytes (newlines, invalid UTF-8) can be a name, as in a stranger's repository."""
    lines = []
    for name, data in entries:
        blob = builder.repo.create_blob(data)
        lines.append(b"100644 blob " + str(blob).encode() + b"\t" + name + b"\0")
    tree = subprocess.run(["git", "mktree", "-z"], input=b"".join(lines), cwd=builder.path, env=git_env(),
                          capture_output=True, check=True).stdout.strip().decode()
    signature = pygit2.Signature("Ann", "ann@example.com", 1704196800, 0)
    return builder.repo.create_commit("refs/heads/main", signature, signature, "hostile names",
                                      pygit2.Oid(hex=tree), [])


@pytest.fixture
def canary(tmp_path, monkeypatch):
    """A program `gadpwn` on PATH that leaves a file behind when anything runs it."""
    bin_dir = tmp_path / "canary-bin"
    bin_dir.mkdir()
    marker = tmp_path / "PWNED"
    script = bin_dir / "gadpwn"
    script.write_text(f"#!/bin/sh\necho ran >> {marker}\n")
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', os.defpath)}")
    return marker


HOSTILE_NAMES = [
    (b"a$(gadpwn).l", LEX_FILE),
    (b"b`gadpwn`.sql", SQL_FILE),
    (b"c;gadpwn;.c", C_FILE),
    (b"d\ngadpwn\n.y", Y_FILE),
    (b"-e.c", C_FILE + b"int e;\n"),
    (b"f'$(gadpwn)'.l", LEX_FILE + b"x\n"),
    (b"\xff\xfe$(gadpwn).c", C_FILE + b"int g;\nint h;\n"),
    (b"h|gadpwn|.sql", SQL_FILE + b"select 3;\n"),
]


@needs_sloccount
def test_hostile_file_names_never_reach_a_shell(tmp_path, upstream, canary):
    tip = tree_commit(upstream, HOSTILE_NAMES)
    name, sloc = cocomo.count_sloc(Mirror(upstream.path), tip.raw, None, workdir=tmp_path / "work")
    assert not canary.exists(), "a file name ran a command"
    assert name.startswith("SLOCCount") and sloc == benign_count(tmp_path, HOSTILE_NAMES) > 20


def benign_count(tmp_path: Path, entries: list[tuple[bytes, bytes]]) -> int:
    """SLOCCount, run by the test itself, over the same contents under plain names with the same extensions."""
    tree = tmp_path / "benign" / "tree"
    tree.mkdir(parents=True)
    for i, (name, data) in enumerate(entries):
        (tree / f"plain{i}{os.path.splitext(name.decode('latin-1'))[1]}").write_bytes(data)
    (tmp_path / "benign" / "data").mkdir()
    out = subprocess.run([SLOCCOUNT, "--datadir", "data", "tree"], cwd=tmp_path / "benign", capture_output=True,
                         text=True, check=True, env={**os.environ, "HOME": str(tmp_path), "LC_ALL": "C"}).stdout
    return cocomo.parse_sloccount(out)


@needs_sloccount
def test_hostile_names_through_the_engine_and_compare(tmp_path, engine, upstream, canary):
    tree_commit(upstream, HOSTILE_NAMES)
    engine.track(str(upstream.path), "evil")
    report = engine.report(parse_query("evil vs:cocomo".split(), TODAY), TODAY)
    assert report.cocomo is not None and report.cocomo.sloc == benign_count(tmp_path, HOSTILE_NAMES)
    other = RepoBuilder(tmp_path / "other")
    tree_commit(other, [(b"x$(gadpwn).l", LEX_FILE)])
    engine.track(str(other.path), "other")
    rows = engine.compare(parse_command("compare evil other vs:cocomo", TODAY), TODAY)
    assert rows is not None
    assert not canary.exists()
    assert list((engine.settings.data_dir / "tmp").iterdir()) == []  # nothing left behind


def test_made_names_keep_only_a_plain_extension(tmp_path, upstream):
    tip = tree_commit(upstream, [(b"x.c", b"1"), (b"y.C", b"2"), (b"z.c++", b"3"), (b"Makefile", b"4"),
                                 (b".bashrc", b"5"), (b"w.$(id)", b"6"), (b"v.\xff", b"7"), (b"u.tar.gz", b"8")])
    dest = tmp_path / "out"
    dest.mkdir()
    assert Mirror(upstream.path).export_files(tip.raw, dest, ExportLimits()) == 8
    written = {path.read_bytes(): path.name for path in dest.iterdir()}
    extensions = {data: name[len(name.rstrip("0123456789.cCgz+")):] for data, name in written.items()}
    assert {data: os.path.splitext(name)[1] for data, name in written.items()} == {
        b"1": ".c", b"2": ".C", b"3": ".c++", b"4": "", b"5": "", b"6": "", b"7": "", b"8": ".gz"}
    assert all(name[0].isdigit() for name in written.values()) and extensions


def test_one_blob_under_many_names_is_written_once(tmp_path, upstream):
    tip = tree_commit(upstream, [(f"copy{i}.c".encode(), C_FILE) for i in range(2000)])
    dest = tmp_path / "out"
    dest.mkdir()
    assert Mirror(upstream.path).export_files(tip.raw, dest, ExportLimits(max_files=10)) == 1
    assert [p.name for p in dest.iterdir()] == ["0.c"]


@pytest.mark.parametrize("limits, words", [
    (ExportLimits(max_files=50), "more than 50 files"),
    (ExportLimits(max_bytes=2 * 1024 ** 2), "more than 2 MiB of files"),
    (ExportLimits(seconds=0), "more files than can be read in 0 seconds"),
])
def test_a_tree_bomb_is_one_sentence_and_leaves_nothing(tmp_path, upstream, limits, words):
    # 200 distinct files of 64 KiB that pack into a few KB: 12.5 MiB on disk if nothing stopped it
    tip = tree_commit(upstream, [(f"f{i}.c".encode(), f"int x{i};\n".encode() + b"\n" * 65_536) for i in range(200)])
    work = tmp_path / "work"
    with pytest.raises(GadError) as error:
        cocomo.count_sloc(Mirror(upstream.path), tip.raw, None, counter=cocomo.Counter("sloccount", "/bin/false", "x"),
                          workdir=work, limits=limits, where="the head of `bomb`")
    message = str(error.value)
    assert message.startswith(f"The tree at the head of `bomb` holds {words}, more than gad-bot counts lines in")
    assert "`path:DIR vs:cocomo`" in message and "Traceback" not in message
    assert list(work.iterdir()) == []


def test_only_the_paths_asked_are_read_out_of_git(tmp_path, upstream):
    tip = upstream.commit(files={"src/a.c": "int a;\n", "src/net/b.c": "int b;\n", "docs/c.c": "int c;\n",
                                 "big/" + "x" * 10 + ".c": "int d;\n", "srcx/e.c": "int e;\n"})
    mirror = Mirror(upstream.path)

    def export(**filters) -> set[bytes]:
        dest = tmp_path / f"out{len(list(tmp_path.iterdir()))}"
        dest.mkdir()
        mirror.export_files(tip.raw, dest, ExportLimits(max_files=100), **filters)
        return {p.read_bytes() for p in dest.iterdir()}

    assert export(paths=("src",)) == {b"int a;\n", b"int b;\n"}  # not srcx/
    assert export(paths=("src",), exclude_paths=("src/net",)) == {b"int a;\n"}
    assert export(paths=("src/net/b.c", "docs")) == {b"int b;\n", b"int c;\n"}
    assert export(exclude_paths=("src", "big")) == {b"int c;\n", b"int e;\n"}
    assert export(paths=("nowhere",)) == set()


def test_a_missing_blob_names_the_object_and_the_repair(tmp_path, upstream):
    tip = upstream.commit(files={"src/a.c": "int a;\n", "docs/b.c": "int lost;\n"})
    lost = upstream.repo.create_blob(b"int lost;\n")
    (upstream.path / ".git" / "objects" / str(lost)[:2] / str(lost)[2:]).unlink()
    dest = tmp_path / "out"
    dest.mkdir()
    with pytest.raises(MirrorError) as error:
        Mirror(upstream.path).export_files(tip.raw, dest, ExportLimits())
    assert str(error.value) == (f"The mirror lacks object {str(lost)[:12]} of the tree it counts lines in; "
                                "re-clone it with `gad-bot sync --reclone NAME`.")
    # outside the path asked, the missing object is never read
    assert Mirror(upstream.path).export_files(tip.raw, dest, ExportLimits(), paths=("src",)) == 1


def test_the_counter_runs_confined(tmp_path):
    limits = Limits(memory_bytes=512 * 1024 ** 2, cpu_seconds=7, file_bytes=1024 ** 2, extra_processes=5)
    out = subprocess.run(limits.command(["/bin/cat", "/proc/self/limits"]), capture_output=True, text=True,
                         check=True).stdout
    rows = {line[:26].strip(): line[26:].split() for line in out.splitlines()[1:]}
    assert rows["Max address space"][:2] == [str(512 * 1024 ** 2)] * 2
    assert rows["Max cpu time"][:2] == ["7", "7"]
    assert rows["Max file size"][:2] == [str(1024 ** 2)] * 2
    assert rows["Max core file size"][:2] == ["0", "0"]
    assert rows["Max processes"][0] != "unlimited"


def test_a_counter_that_eats_memory_is_stopped(tmp_path):
    limits = Limits(memory_bytes=256 * 1024 ** 2)
    hog = [sys.executable, "-c", "x = bytearray(1024 ** 3); print('allocated')"]
    done = subprocess.run(limits.command(hog), capture_output=True, text=True)
    assert done.returncode != 0 and "allocated" not in done.stdout and "MemoryError" in done.stderr


def test_sweep_removes_what_a_killed_process_left_and_keeps_live_ones(tmp_path):
    parent = tmp_path / "tmp"
    code = ("import sys, time; from pathlib import Path; from bot.scratch import scratch_directory\n"
            "with scratch_directory(Path(sys.argv[1])) as d:\n"
            "    (d / 'big').write_bytes(b'x' * 100000); print(d, flush=True); time.sleep(60)\n")
    child = subprocess.Popen([sys.executable, "-c", code, str(parent)], stdout=subprocess.PIPE, text=True,
                             cwd=Path(__file__).resolve().parents[2])
    orphan = Path(child.stdout.readline().strip())
    child.send_signal(signal.SIGKILL)
    child.wait()
    assert orphan.exists()
    with scratch.scratch_directory(parent) as live:
        assert scratch.sweep(parent) == [orphan]
        assert live.exists() and not orphan.exists()
    assert list(parent.iterdir()) == []


def test_serve_start_sweeps_the_scratch_directory(tmp_path, settings):
    stale = settings.data_dir / "tmp" / "gad-tree-left-by-an-old-version"
    stale.mkdir(parents=True)
    old = time.time() - 2 * scratch.UNLOCKED_GRACE_SECONDS
    os.utime(stale, (old, old))
    from bot.faces.server import sweep_leftovers

    sweep_leftovers(settings)
    assert not stale.exists()
