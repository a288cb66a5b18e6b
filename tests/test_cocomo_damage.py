"""`vs:cocomo` on a mirror that lacks an object (issue 20, part 2): before, a `KeyError` traceback in the CLI and
"Something went wrong" in Slack, even when the missing file lay outside the `path:` asked. Now one sentence names
the repository, the object and the command that repairs it; a `path:` that keeps clear of the damage is answered.
The damage is made by hand: the mirror's pack unpacked into loose objects, and one blob's file deleted."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from bot.config import Settings
from bot.engine.engine import Engine
from bot.faces.slack import build_app
from tests.gitbuild import RepoBuilder, git_env
from tests.slackstub import SlackStub
from tests.test_cli import run
from tests.test_slack import SECRET, all_text, answer, dispatch

pytestmark = pytest.mark.skipif(shutil.which("sloccount") is None and shutil.which("cloc") is None,
                                reason="no line counter installed")


@pytest.fixture
def damaged(tmp_path):
    """web tracked into its own mirror; the mirror then loses the blob of docs/lost.c (src/a.c is whole)."""
    b = RepoBuilder(tmp_path / "web")
    b.commit(email="ann@example.com", date="2024-01-02", files={"src/a.c": "int a;\n", "docs/lost.c": "int lost;\n"})
    data = tmp_path / "data"
    settings = Settings.from_env({"GAD_DATA_DIR": str(data)})
    engine = Engine.open(settings)
    engine.track(str(b.path), "web")
    mirror = engine.repo("web").mirror_path
    packs = sorted((mirror / "objects" / "pack").glob("*.pack"))
    for pack in packs:  # every object loose, so that one of them can go
        moved = pack.with_suffix(".moved")
        pack.rename(moved)
        pack.with_suffix(".idx").unlink()
        subprocess.run(["git", "unpack-objects", "-q"], stdin=moved.open("rb"), cwd=mirror, check=True, env=git_env())
        moved.unlink()
    lost = b.repo.create_blob(b"int lost;\n")
    (mirror / "objects" / str(lost)[:2] / str(lost)[2:]).unlink()
    return engine, data, str(lost)


def test_the_cli_names_the_missing_object_and_the_repair(damaged):
    _, data, lost = damaged
    result = run("report", "web", "vs:cocomo", data=data)
    assert result.returncode != 0 and "Traceback" not in result.stderr and "KeyError" not in result.stderr
    assert result.stderr.strip() == (f"gad-bot: `web`: the mirror lacks object {lost[:12]} of the tree it counts lines in; "
                                     "re-clone it with `gad-bot sync --reclone web`.")
    clear = run("report", "web", "path:src", "vs:cocomo", "--json", data=data)  # the damage lies outside path:src
    assert clear.returncode == 0, clear.stderr


def test_slack_tells_a_member_the_same_sentence(damaged, tmp_path):
    engine, data, lost = damaged
    with SlackStub() as stub:
        settings = Settings.from_env({"GAD_DATA_DIR": str(data), "SLACK_BOT_TOKEN": stub.good_token,
                                      "SLACK_SIGNING_SECRET": SECRET, "SLACK_API_URL": stub.api_url,
                                      "GAD_ADMINS": "UADMIN"})
        app, _ = build_app(settings, engine, socket_mode=False)
        _, name = dispatch(app, stub, "web vs:cocomo")
        shown = all_text(answer(stub, name))
    assert f"`web`: the mirror lacks object {lost[:12]}" in shown and "gad-bot sync --reclone web" in shown
    assert "Something went wrong" not in shown
