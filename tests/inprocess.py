"""`gad-bot COMMAND` run inside the test's own process, for tests whose subject is what a command does, not the
process it runs in.

A `gad-bot` process costs the suite ~0.3 s of CPU before it does anything (an interpreter, click, the engine's
imports), and `sync` or `track` ~0.4 s more for a fork server of its own; ~400 of them were a quarter of the
suite's CPU. Here a command runs through the same click group `main()` calls, with the same environment (the
whole of it: what the test gives, nothing else of the test process's), working directory and umask, and gives
back what a process would: the exit status, stdout and stderr. What it cannot show is what only a process shows
(its start-up, signals, kill -9, a read-only data directory seen through another user, what its children print
on their own): tests of those start `python -m bot.faces.cli` (`process=True` in the helpers that call this).

Its workers and fetch children are forked from this process's fork server, whose environment is the test
process's (git's configuration blanked, as every command's here) and whose umask is main()'s: a test whose
children must see another environment runs the command as a process. The server is started here, before the
command's environment is put in place: started by the command, it would keep that command's environment (its data
directory, its tokens, an SSL_CERT_FILE in a tmp_path since deleted) for every later command of this pytest worker,
and a test looking for processes that name its data directory would find it. Each command also runs in a context of
its own, as a process starts with one: its `face` (bot/errors.py) does not outlive it.
"""

from __future__ import annotations

import contextvars
import logging
import os
import subprocess
import sys
from pathlib import Path


def gad_bot(args: list[str], env: dict[str, str], cwd: Path, *, process: bool = False,
            timeout: float = 120) -> subprocess.CompletedProcess:
    """`gad-bot *args` with exactly `env` in `cwd`: in this process (run_here), or with process=True as
    `python -m bot.faces.cli`, for a test of what only a process shows."""
    if not process:
        return run_here(args, env, cwd=cwd)
    return subprocess.run([sys.executable, "-m", "bot.faces.cli", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)


def run_here(args: list[str], env: dict[str, str], cwd: Path | None = None) -> subprocess.CompletedProcess:
    """`gad-bot *args` in this process, with exactly `env` as its environment, in `cwd` (default: unchanged)."""
    from click.testing import CliRunner

    from bot.faces.cli import cli

    _fork_server_of_this_process()
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    before_cwd, before_umask = os.getcwd(), os.umask(0o077)  # main() sets this umask before the click group
    blanked = {name: None for name in os.environ if name not in env}  # the command sees env and nothing else
    try:
        if cwd is not None:
            os.chdir(cwd)
        result = contextvars.Context().run(CliRunner(catch_exceptions=False).invoke, cli, args,
                                           env={**blanked, **env}, prog_name="gad-bot")
    finally:
        os.chdir(before_cwd)
        os.umask(before_umask)
        for handler in list(root.handlers):  # the command's logging setup wrote to its own stderr, now closed
            root.removeHandler(handler)
        for handler in handlers:
            root.addHandler(handler)
        root.setLevel(level)
    return subprocess.CompletedProcess(["gad-bot", *args], result.exit_code, result.stdout, result.stderr)


def _fork_server_of_this_process() -> None:
    """Start this process's fork server (and multiprocessing's resource tracker), if none runs, with the test
    process's environment as every command here gets it (tests/gitbuild.py's git_env, no GAD_ or SLACK_ setting)
    and main()'s umask, as a gad-bot process starts its own."""
    from multiprocessing import forkserver

    from bot.spawning import worker_context
    from tests.gitbuild import git_env

    worker_context()
    wanted = {k: v for k, v in git_env().items() if not k.startswith(("SLACK_", "GAD_"))}
    saved = dict(os.environ)
    umask = os.umask(0o077)
    try:
        for name in [name for name in os.environ if name not in wanted]:
            del os.environ[name]
        os.environ.update(wanted)
        forkserver.ensure_running()
    finally:
        os.umask(umask)
        for name in [name for name in os.environ if name not in saved]:
            del os.environ[name]
        os.environ.update(saved)
