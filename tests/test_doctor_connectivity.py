"""`doctor` walks every object (connectivity, not just refs), and `repos` stops calling a mirror with
missing objects ok (issue 20, part 2). The damage is made by hand: a loose blob deleted from a real repository."""

from __future__ import annotations

from datetime import datetime, timezone

from bot.config import Settings
from bot.engine.engine import Engine
from bot.engine.rows import RepoSummary
from bot.faces.doctor import check_mirrors
from bot.render.text import render_repos_text
from tests.gitbuild import RepoBuilder


def test_a_missing_blob_is_found_named_and_shown_until_it_is_back(tmp_path):
    b = RepoBuilder(tmp_path / "web")
    b.commit(name="Ann", email="ann@example.com", date="2024-01-02T10:00",
             files={"src/a.c": "int a;\n", "docs/b.c": "int lost;\n"})
    engine = Engine.open(Settings.from_env({"GAD_DATA_DIR": str(tmp_path / "data")}))
    engine.track(str(b.path), "web", in_place=True)
    (repo,) = engine.repos()
    now = datetime.now(timezone.utc)
    assert [c.ok for c in check_mirrors(engine, now)] == [True] and engine.damage(repo) is None

    lost = b.repo.create_blob(b"int lost;\n")  # the blob docs/b.c holds (same bytes, same id)
    loose = b.path / ".git" / "objects" / str(lost)[:2] / str(lost)[2:]
    kept = loose.read_bytes()
    loose.unlink()
    (check,) = check_mirrors(engine, now)  # refs still read fine: only the object walk sees it
    assert not check.ok and not check.warning
    assert f"missing blob {lost}" in check.what and "web: mirror is missing objects" in check.what
    assert "git fsck" in check.fix  # in place: gad-bot does not own the copy, so no --reclone
    shown = render_repos_text([RepoSummary.of(r, missing_objects=engine.damage(r)) for r in engine.repos()])
    flat = "".join(shown.split())  # the status column folds
    assert "missingobjects:" in flat and f"missingblob{lost}" in flat and " ok " not in shown

    loose.write_bytes(kept)  # repaired: the next check finds it whole and `repos` says ok again
    assert [c.ok for c in check_mirrors(engine, now)] == [True] and engine.damage(repo) is None
    shown = render_repos_text([RepoSummary.of(r, missing_objects=engine.damage(r)) for r in engine.repos()])
    assert "missing objects" not in shown and " ok " in shown
