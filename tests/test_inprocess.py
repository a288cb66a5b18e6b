"""tests/inprocess.py: a command run in the test's own process leaves nothing of itself behind for later ones."""

from __future__ import annotations

from multiprocessing import forkserver
from pathlib import Path

from bot.errors import current_face
from tests.faults import GitDaemon, cli_env
from tests.gitbuild import RepoBuilder
from tests.inprocess import run_here

ROOT = Path(__file__).resolve().parent.parent


def test_a_commands_face_ends_with_it(tmp_path):
    """The CLI words its messages for a terminal (set_face): a later command, or a Slack message built in this
    thread, starts from the default again, as a new process would."""
    assert current_face() == "slack"
    listed = run_here(["repos", "--json"], cli_env(tmp_path / "data"), cwd=ROOT)
    assert listed.returncode == 0, listed.stderr
    assert current_face() == "slack"


def test_the_fork_server_never_keeps_a_commands_environment_or_umask(tmp_path):
    """The fork server this process's commands fork their children from outlives them: started by a command, it
    would keep that command's data directory (and tokens) in its environment for the rest of the pytest worker."""
    server = forkserver._forkserver
    server._stop()  # whatever an earlier test started: this test's command finds none running
    RepoBuilder(tmp_path / "srv" / "web.git", bare=True).commit(email="ann@example.com", date="2024-01-01")
    with GitDaemon(tmp_path / "srv") as daemon:  # a network source: its clone is a fetch child of the server
        tracked = run_here(["track", daemon.url("web.git"), "--name", "web"],
                           cli_env(tmp_path / "data", GAD_HTTPS_TOKENS="x=tok-secret"), cwd=ROOT)
    assert tracked.returncode == 0, tracked.stderr
    assert server._forkserver_pid is not None, "the track started no fork server: the test would prove nothing"
    environ = Path(f"/proc/{server._forkserver_pid}/environ").read_bytes().split(b"\0")
    assert not [v for v in environ if v.startswith((b"GAD_", b"SLACK_"))], environ
    status = Path(f"/proc/{server._forkserver_pid}/status").read_text()
    assert "Umask:\t0077" in status, status
