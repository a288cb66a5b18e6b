"""Limits on what a stranger's content may take: a tree's export (`ExportLimits`), and a program run
under resource limits (`Limits`: `python -m bot.confine LIMITS -- PROGRAM ARGS...`).

A line counter reads files a stranger wrote; it gets no shell from gad-bot, and this wrapper caps
what it can take before it execs it: address space, CPU seconds, file size, processes. The limits
are set here, in a fresh interpreter, and not through `preexec_fn`, which is unsafe in a process
with threads (serve and its workers have several).

stdlib only.
"""

from __future__ import annotations

import os
import resource
import sys
from dataclasses import dataclass

from .errors import GadError

# RLIMIT_NPROC counts every process of the user, so the cap is "those already running plus this
# many": enough for SLOCCount's per-file children (it runs them one after another), not a fork bomb.
EXTRA_PROCESSES = 64


@dataclass(frozen=True)
class Limits:
    """What one confined program may take."""

    memory_bytes: int = 2 * 1024 ** 3
    cpu_seconds: int = 600
    file_bytes: int = 256 * 1024 ** 2  # SLOCCount writes its per-file data under its own directory
    extra_processes: int = EXTRA_PROCESSES

    def command(self, program: list[str]) -> list[str]:
        """The argv that runs `program` under these limits (no shell anywhere)."""
        return [sys.executable, "-m", "bot.confine", str(self.memory_bytes), str(self.cpu_seconds),
                str(self.file_bytes), str(self.extra_processes), "--", *program]


@dataclass(frozen=True)
class ExportLimits:
    """How much of a tree `export_files` may write: a tree bomb (one blob under 300,000 names, or
    1 GB of zeros that pack into kilobytes) is cut off with one sentence, not a full disk."""

    max_files: int = 300_000
    max_bytes: int = 1024 ** 3
    seconds: float = 600
    max_file_bytes: int = 2_000_000  # larger files are generated or vendored data, not source


class ExportLimitError(GadError):
    """A tree holds more than `ExportLimits` lets gad-bot write; `what` is files, bytes or seconds."""

    def __init__(self, what: str, limit: float):
        self.what, self.limit = what, limit
        super().__init__(f"export stopped at {limit:,} {what}")


def _processes_of_this_user() -> int:
    uid = os.getuid()
    count = 0
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                if entry.stat().st_uid == uid:
                    count += 1
            except OSError:
                continue
    return count


def _cap(kind: int, value: int) -> None:
    """Lower a limit to `value` (never raise it: a tighter limit set by the operator stays)."""
    _, hard = resource.getrlimit(kind)
    if hard != resource.RLIM_INFINITY:
        value = min(value, hard)
    resource.setrlimit(kind, (value, value))


def main(argv: list[str]) -> None:
    try:
        separator = argv.index("--")
        memory, cpu, fsize, extra = (int(value) for value in argv[:separator])
        program = argv[separator + 1:]
    except ValueError:
        sys.exit("usage: python -m bot.confine MEMORY CPU FSIZE EXTRA_PROCESSES -- PROGRAM [ARGS...]")
    if not program:
        sys.exit("bot.confine: no program to run")
    _cap(resource.RLIMIT_AS, memory)
    _cap(resource.RLIMIT_CPU, cpu)
    _cap(resource.RLIMIT_FSIZE, fsize)
    _cap(resource.RLIMIT_CORE, 0)
    if os.path.isdir("/proc"):
        _cap(resource.RLIMIT_NPROC, _processes_of_this_user() + extra)
    os.execv(program[0], program)  # an absolute path found by shutil.which: no PATH search, no shell


if __name__ == "__main__":
    main(sys.argv[1:])
