"""`gad_sync_failing{repo}` becomes 1 when a repository's last sync failed, and 0 again once one succeeds: the
alert an operator sets on it (docs/operations.md) must fire. tests/test_health.py sees it only at 0.

The scrape is what serve's GET /metrics answers (bot/metrics.py's exposition, fed by bot/service/health.py's
snapshot of the index), read back with Prometheus' own parser."""

from __future__ import annotations

from bot import metrics
from bot.config import Settings
from bot.engine.engine import Engine
from bot.service.health import Health
from tests.gitbuild import RepoBuilder
from tests.test_health import samples


def scrape() -> dict[tuple[str, tuple], float]:
    body, _ = metrics.exposition()
    return samples(body.decode())


def test_a_failed_sync_sets_gad_sync_failing_to_one_until_a_sync_succeeds(tmp_path, start_pool):
    web = RepoBuilder(tmp_path / "web")
    web.commit(date="2024-01-02")
    api = RepoBuilder(tmp_path / "api")
    api.commit(date="2024-01-03")
    settings = Settings.from_env({"GAD_DATA_DIR": str(tmp_path / "data")})
    engine = Engine.open(settings)
    engine.track(str(web.path), "web")
    engine.track(str(api.path), "api")
    metrics.watch(Health(settings, engine, start_pool(settings, workers=1)).snapshot)

    found = scrape()
    assert (found[("gad_sync_failing", (("repo", "api"),))], found[("gad_sync_failing", (("repo", "web"),))]) == (0, 0)
    moved = api.path.rename(tmp_path / "api-away")  # the upstream is gone for a while
    (failed,) = engine.sync(["api"])
    assert failed.error
    found = scrape()
    assert found[("gad_sync_failing", (("repo", "api"),))] == 1
    assert found[("gad_sync_failing", (("repo", "web"),))] == 0
    lag = found[("gad_sync_lag_seconds", (("repo", "api"),))]
    assert lag >= 0  # still the time since its last success, the track

    moved.rename(api.path)
    (synced,) = engine.sync(["api"])
    assert synced.error is None
    assert scrape()[("gad_sync_failing", (("repo", "api"),))] == 0
