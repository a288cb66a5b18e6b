"""Forge webhooks through the real path: a signed delivery over loopback HTTP -> `gad-bot serve` (a real
process) -> a sync in a worker process fetching from `git http-backend` -> a report at Slack's
response_url that counts the pushed commit, its figure from git (tests/gitbuild.py oracle_gad).

One forge site (tests/faults GitHttpServer) hosts a repository per forge kind, tracked by URL
through the CLI; one `serve` takes all three forges' webhooks (GAD_WEBHOOK_SECRETS names the host).
Deliveries are shaped as each forge documents them (tests/forgehooks.py).
"""

from __future__ import annotations

import functools
import http.client
import json
import os
import re
import signal
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import pygit2
import pytest

from bot.config import Settings
from bot.faces.webhooks import HookEvent, parse_event, repo_key, signed_hosts
from tests.faults import GitHttpServer, Serve, figures, free_port, track_here, wait_port
from tests.forgehooks import CREATED, PUSH, ForgeRepo, delivery, github_repository, post
from tests.forgestub import ForgeStub
from tests.gitbuild import RepoBuilder, oracle_gad, oracle_pairs
from tests.slackstub import SlackStub

SECRET = "webhook-secret-0123456789abcdef"
PATHS = {"github": "acme/web", "gitlab": "group/sub/api", "gitea": "org/lib"}


def figure(serve: Serve, stub: SlackStub, name: str, label: str) -> int:
    """The 2GAD figure of `name` over all its history, as a report through serve says it."""
    serve.post(stub.slash_fields(f"{name} since:2000-01", response_name=label))
    text = json.dumps(stub.wait_for_response(label, timeout=15))
    found = re.search(r"2GAD ([\d,]+) person-days", text)
    assert found, text
    return int(found.group(1).replace(",", ""))


def figure_reaches(serve: Serve, stub: SlackStub, name: str, expected: int, label: str, seconds: float = 30) -> list[int]:
    """Ask for `name`'s figure until it is `expected` (or `seconds` pass): every figure seen."""
    seen: list[int] = []
    started = time.monotonic()
    while time.monotonic() - started < seconds:
        seen.append(figure(serve, stub, name, f"{label}-{len(seen)}"))
        if seen[-1] == expected:
            break
        time.sleep(0.2)
    return seen


@dataclass
class Site:
    git: GitHttpServer
    stub: SlackStub
    serve: Serve
    data: Path
    upstreams: dict[str, RepoBuilder]

    def repo(self, forge: str) -> ForgeRepo:
        return ForgeRepo(f"http://127.0.0.1:{self.git.port}", PATHS[forge])

    def hook(self, forge: str) -> str:
        return f"{self.serve.url}/hooks/{forge}"

    def figure(self, name: str, label: str) -> int:
        return figure(self.serve, self.stub, name, label)

    def push(self, forge: str, who: str, day: str) -> tuple[str, str]:
        upstream = self.upstreams[forge]
        before = str(upstream.tip("main"))
        after = str(upstream.commit(name=who.title(), email=f"{who}@example.com", date=day))
        return before, after

    def log_lines(self, fragment: str) -> list[str]:
        return [line for line in self.serve.stderr.splitlines() if fragment in line]

    def wait_lines(self, fragment: str, count: int, seconds: float = 15) -> list[str]:
        """The log lines holding `fragment`, once there are at least `count` (each request serve answers writes its
        one line before the answer; the file may show it a moment later)."""
        deadline = time.monotonic() + seconds
        while len(lines := self.log_lines(fragment)) < count and time.monotonic() < deadline:
            time.sleep(0.05)
        return lines


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    base = tmp_path_factory.mktemp("hooks")
    upstreams = {}
    for forge, path in PATHS.items():
        upstream = RepoBuilder(base / "srv" / f"{path}.git", bare=True)
        upstream.commit(name="Ann", email="ann@example.com", date="2024-01-02")
        upstream.commit(name="Bob", email="bob@example.com", date="2024-01-03")
        upstreams[forge] = upstream
    data = base / "data"
    with GitHttpServer(base / "srv") as git, SlackStub() as stub:
        for forge, path in PATHS.items():
            track_here(git.url(path + ".git"), forge, data)
        with Serve(data, stub, logs=base / "logs", GAD_WEBHOOK_SECRETS=f"127.0.0.1={SECRET},other.example=x-{SECRET}",
                   GAD_REPORT_WORKERS="1") as serve:
            yield Site(git, stub, serve, data, upstreams)
            assert serve.stop(signal.SIGTERM) == 0
        assert "Traceback" not in serve.stderr
        assert "SECRET-DESCRIPTION-IN-BODY" not in serve.stderr + serve.stdout


@pytest.mark.parametrize("forge", list(PATHS))
def test_a_push_is_in_reports_within_seconds(site, forge):
    assert site.figure(forge, f"{forge}-before") == 2 * oracle_gad(site.upstreams[forge].path) == 4
    before, after = site.push(forge, "cy", "2026-12-01")
    expected = 2 * oracle_gad(site.upstreams[forge].path)
    assert expected == 6  # Cy's day is new: three (person, day) pairs
    body, headers = delivery(forge, PUSH[forge](site.repo(forge), before, after), SECRET,
                             instance=f"http://127.0.0.1:{site.git.port}")
    status, text = post(site.hook(forge), body, headers)
    assert (status, text.strip()) == (202, "sync scheduled")
    seen = figure_reaches(site.serve, site.stub, forge, expected, f"{forge}-after", seconds=20)
    assert seen[-1] == expected, seen
    assert len(site.log_lines(f"sync of {forge} scheduled")) == 1


def test_pushes_during_a_sync_are_one_more_sync(tmp_path):
    """Leading-edge debounce through serve: a first push's sync starts at once (its fetch reaches the forge, whose
    answers the test holds); three more pushes while it runs are one more sync after it, not three and not none;
    the report counts all four.

    Serve's own periodic sync would supply a second sync too (its first run is 30 s after the start; here at once,
    GAD_FIRST_SYNC_SECONDS=0, rather than waiting out a timer): the test first waits for that run to be over (the first sync of each repository, which nothing else asks for), so that the
    next is 12 hours away and every sync after it is the pushes'. Serve runs on one CPU, so one sync worker takes
    the jobs in turn: once a push to another repository, made after the two syncs, is synced, a third sync of
    `web` would have been too."""
    web = RepoBuilder(tmp_path / "srv" / "acme" / "web.git", bare=True)
    web.commit(name="Ann", email="ann@example.com", date="2024-01-02")
    other = RepoBuilder(tmp_path / "srv" / "acme" / "other.git", bare=True)
    other.commit(name="Bob", email="bob@example.com", date="2024-01-03")
    data = tmp_path / "data"
    with GitHttpServer(tmp_path / "srv") as git, SlackStub() as stub:
        for name in ("web", "other"):
            track_here(git.url(f"acme/{name}.git"), name, data)
        with Serve(data, stub, logs=tmp_path / "logs", GAD_WEBHOOK_SECRETS=f"127.0.0.1={SECRET}",
                   GAD_REPORT_WORKERS="1", GAD_FIRST_SYNC_SECONDS="0", cpus={min(os.sched_getaffinity(0))}) as serve:
            site = Site(git, stub, serve, data, {})

            def push(builder: RepoBuilder, path: str, who: str, day: str) -> None:
                before = str(builder.tip("main"))
                after = str(builder.commit(name=who.title(), email=f"{who}@example.com", date=day))
                repo = ForgeRepo(f"http://127.0.0.1:{git.port}", path)
                body, headers = delivery("github", PUSH["github"](repo, before, after), SECRET)
                assert post(f"{serve.url}/hooks/github", body, headers) == (202, "sync scheduled\n")

            # serve's first periodic sync, at its start: over once it has synced both (nothing else asks yet)
            for name in ("web", "other"):
                assert site.wait_lines(f"sync of repo {name}: ", 1, seconds=120), serve.stderr[-3000:]
            synced = len(site.log_lines("sync of repo web: ok"))
            asked = len(git.requests)
            git.hold()
            try:
                for n in range(4):
                    push(web, "acme/web", f"pusher{n}", f"2026-11-0{n + 1}")
                    deadline = time.monotonic() + 30  # no debounce to wait out; a loaded machine may be slow to fork
                    while n == 0 and len(git.requests) == asked and time.monotonic() < deadline:
                        time.sleep(0.02)
                    assert len(git.requests) > asked, "the first push's sync did not reach the forge"
            finally:
                git.release()
            syncs = site.wait_lines("sync of repo web: ok", synced + 2, seconds=60)[synced:]
            assert len(syncs) == 2, syncs
            assert ", 4 new commits" in syncs[0] and ", 0 new commits" in syncs[1], syncs
            # a later push to another repository, synced by the one worker after anything asked before it
            others = len(site.log_lines("sync of repo other: ok"))
            push(other, "acme/other", "cy", "2026-11-05")
            assert len(site.wait_lines("sync of repo other: ok", others + 1, seconds=60)) == others + 1
            assert site.log_lines("sync of repo web: ok")[synced:] == syncs  # no third
            expected = 2 * oracle_gad(web.path)
            assert expected == 10  # Ann's day and the four pushers'
            assert figure(serve, stub, "web", "coalesced") == expected
            assert serve.stop(signal.SIGTERM) == 0
        assert "Traceback" not in serve.stderr


def test_a_push_during_its_repositorys_sync_is_one_more_sync_in_the_queue(tmp_path):
    """The sync queue alone (one spawned worker): a job held in the worker until the test opens a gate; three
    requests for it meanwhile are one more job after it; a later request for another repository runs next, and
    then nothing is left."""
    from bot.service.syncs import SyncQueue

    gate = tmp_path / "gate"
    settings = Settings.from_env({"GAD_DATA_DIR": str(tmp_path / "data")})
    done = []
    queue = SyncQueue(settings, workers=1, debounce=0, runner=functools.partial(gated_job, str(gate)),
                      on_done=done.append)
    queue.start()
    try:
        queue.request_repo("web")
        deadline = time.monotonic() + 60
        while not (tmp_path / "started-web").exists():
            assert time.monotonic() < deadline, "the first sync never started"
            time.sleep(0.02)
        for _ in range(3):
            queue.request_repo("web")
        gate.touch()
        deadline = time.monotonic() + 60
        while len(done) < 2:
            assert time.monotonic() < deadline, [d.job.name for d in done]
            time.sleep(0.02)
        queue.request_repo("other")  # one worker: it runs after anything asked before it
        while "other" not in [d.job.name for d in done]:
            assert time.monotonic() < deadline, [d.job.name for d in done]
            time.sleep(0.02)
        assert queue.pending() == 0
    finally:
        queue.shutdown()
    assert [d.job.name for d in done] == ["web", "web", "other"]


def gated_job(gate_path: str, job):
    """A sync runner that says it started (a file) and waits for the file `gate_path` (module level: pickled by
    name; functools.partial names the gate, as a worker sees the environment its fork server started with)."""
    from pathlib import Path

    from bot.service.syncs import SyncDone

    gate = Path(gate_path)
    (gate.parent / f"started-{job.name}").touch()
    while not gate.exists():
        time.sleep(0.01)
    return SyncDone(job)


@pytest.mark.parametrize("forge", list(PATHS))
def test_forged_delivery_is_401_with_one_log_line_and_schedules_nothing(site, forge):
    before, after = site.push(forge, "di", "2026-12-02")
    payload = PUSH[forge](site.repo(forge), before, after)
    scheduled = len(site.log_lines(f"sync of {forge} scheduled"))
    body, headers = delivery(forge, payload, "not-the-secret")
    assert post(site.hook(forge), body, headers)[0] == 401
    # a good signature over other bytes is as forged as a bad one
    body, headers = delivery(forge, payload, SECRET)
    if forge != "gitlab":  # GitLab's token does not cover the body
        assert post(site.hook(forge), body.replace(b"main", b"mane"), headers)[0] == 401
    unsigned = {k: v for k, v in headers.items() if "Signature" not in k and "Token" not in k}
    refusals = len(site.log_lines(f"refused a webhook to /hooks/{forge}: 401"))
    assert post(site.hook(forge), body, unsigned)[0] == 401
    # the last request's one line is in: any line of these requests (a refusal, or a sync scheduled) is written
    refused = site.wait_lines(f"refused a webhook to /hooks/{forge}: 401", refusals + 1)
    assert len(refused) == (3 if forge != "gitlab" else 2), refused
    assert len(site.log_lines(f"sync of {forge} scheduled")) == scheduled


def deliveries_scraped(site: Site) -> dict[tuple[str, str], float]:
    """gad_webhook_deliveries_total by (forge, status), from serve's GET /metrics, read with Prometheus' parser."""
    from tests.test_health import get, samples

    status, _, text = get(site.serve.url + "/metrics")
    assert status == 200, text
    return {(dict(labels)["forge"], dict(labels)["status"]): value for (name, labels), value in samples(text).items()
            if name == "gad_webhook_deliveries_total"}


def test_metrics_count_webhook_deliveries_by_forge_and_status(site):
    """What /metrics says of deliveries (issue 21, part 2): one accepted and one forged delivery, counted as such."""
    before_push, after_push = site.push("github", "ed", "2026-12-03")
    body, headers = delivery("github", PUSH["github"](site.repo("github"), before_push, after_push), SECRET,
                             instance=f"http://127.0.0.1:{site.git.port}")
    before = deliveries_scraped(site)
    assert post(site.hook("github"), body, {**headers, "X-Hub-Signature-256": "sha256=" + "0" * 64})[0] == 401
    assert post(site.hook("github"), body, headers)[0] == 202
    after = deliveries_scraped(site)
    changed = {key: after[key] - before.get(key, 0) for key in after if after[key] != before.get(key, 0)}
    assert changed == {("github", "401"): 1, ("github", "202"): 1}, (before, after)


@pytest.mark.parametrize("forge", list(PATHS))
def test_a_replayed_delivery_is_refused(site, forge):
    before, after = site.push(forge, "ed", "2026-12-03")
    body, headers = delivery(forge, PUSH[forge](site.repo(forge), before, after), SECRET)
    scheduled = len(site.log_lines(f"sync of {forge} scheduled"))
    assert post(site.hook(forge), body, headers)[0] == 202
    replays = len(site.log_lines(f"refused a webhook to /hooks/{forge}: 409"))
    status, text = post(site.hook(forge), body, headers)
    assert status == 409 and "already received" in text
    assert len(site.wait_lines(f"refused a webhook to /hooks/{forge}: 409", replays + 1)) == replays + 1
    assert len(site.log_lines(f"sync of {forge} scheduled")) == scheduled + 1
    # the ids are in the database, not in serve's memory
    import sqlite3

    with sqlite3.connect(site.data / "index.sqlite") as db:
        ids = {row[0] for row in db.execute("SELECT delivery FROM webhook_deliveries")}
    assert (headers.get("X-GitHub-Delivery") or headers.get("X-Gitlab-Event-UUID") or headers["X-Gitea-Delivery"]) in ids


def delivery_id_of(headers: dict[str, str]) -> str:
    return headers.get("X-GitHub-Delivery") or headers.get("X-Gitlab-Event-UUID") or headers["X-Gitea-Delivery"]


@pytest.mark.parametrize("forge", list(PATHS))
def test_a_body_replayed_under_a_new_delivery_id_is_a_duplicate(site, forge):
    """The forges sign the body only: the same signed body under a fresh delivery id is answered 200 "duplicate"
    within the hour, with one log line, and schedules no second sync."""
    before, after = site.push(forge, "fay", "2026-12-04")
    payload = PUSH[forge](site.repo(forge), before, after)
    body, headers = delivery(forge, payload, SECRET)
    scheduled = len(site.log_lines(f"sync of {forge} scheduled"))
    assert post(site.hook(forge), body, headers) == (202, "sync scheduled\n")
    replayed, replay_headers = delivery(forge, payload, SECRET)  # the same bytes, a new id
    assert replayed == body and delivery_id_of(replay_headers) != delivery_id_of(headers)
    assert post(site.hook(forge), replayed, replay_headers) == (200, "duplicate: the same body was accepted within "
                                                                     "the hour\n")
    deadline = time.monotonic() + 10  # the line is written before the answer; the file may lag a moment
    while not site.log_lines(delivery_id_of(replay_headers)) and time.monotonic() < deadline:
        time.sleep(0.05)
    (line,) = site.log_lines(delivery_id_of(replay_headers))
    assert "duplicate of a body accepted within the hour" in line, line
    assert len(site.log_lines(f"sync of {forge} scheduled")) == scheduled + 1


def test_a_body_replayed_under_fresh_ids_adds_no_row_to_the_index(site):
    """Each replay of a captured body under a new delivery id was answered "duplicate" but its id was kept for
    30 days first: a replayer grew the index by a row a request (200 bytes, at whatever rate it sends). A
    duplicate keeps nothing; a repeated id still answers 409."""
    import sqlite3

    before, after = site.push("github", "hal", "2026-12-05")
    payload = PUSH["github"](site.repo("github"), before, after)
    body, headers = delivery("github", payload, SECRET)
    assert post(site.hook("github"), body, headers) == (202, "sync scheduled\n")

    def rows() -> int:
        with sqlite3.connect(site.data / "index.sqlite") as db:
            return db.execute("SELECT count(*) FROM webhook_deliveries").fetchone()[0]

    kept = rows()
    for _ in range(20):
        assert post(site.hook("github"), *delivery("github", payload, SECRET))[0] == 200
    assert rows() == kept
    assert post(site.hook("github"), body, headers)[0] == 409  # the first id, again


def test_two_bodies_replayed_in_turn_under_fresh_ids_add_no_row_a_request(site):
    """A body repeated after another one for its repository is taken as a new push (GitLab's bodies hold no
    time), so two captured bodies posted in turn each schedule a sync (the queue runs them one at a time). Only
    a body not seen within the hour keeps its delivery id: the index does not grow a row a request."""
    import sqlite3

    def rows() -> tuple[int, int]:
        with sqlite3.connect(site.data / "index.sqlite") as db:
            return (db.execute("SELECT count(*) FROM webhook_deliveries").fetchone()[0],
                    db.execute("SELECT count(*) FROM webhook_bodies").fetchone()[0])

    a, b = site.push("github", "ida", "2026-12-05")
    forward, back = (PUSH["github"](site.repo("github"), a, b), PUSH["github"](site.repo("github"), b, a))
    kept = rows()
    for _ in range(10):
        for payload in (forward, back):
            assert post(site.hook("github"), *delivery("github", payload, SECRET)) == (202, "sync scheduled\n")
    assert rows() == (kept[0] + 2, kept[1] + 2)


def webhook_rows(data: Path) -> dict[str, int]:
    """Rows of every table a webhook request may write to (meta: the last time each host was heard from)."""
    import sqlite3

    with sqlite3.connect(data / "index.sqlite") as db:
        return {table: db.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
                for table in ("webhook_deliveries", "webhook_bodies", "meta")}


@pytest.mark.parametrize("forge", list(PATHS))
def test_a_body_that_does_nothing_replayed_under_fresh_ids_grows_no_table(site, forge):
    """Issue 31: one captured signed `ping`, replayed under fresh delivery ids, added a row each to
    webhook_deliveries (1,000 replays: +376 KB, kept 30 days): a ping was exempt from the body check, and its id
    was kept. So were the ids of events gad-bot ignores (an issue comment, a push to a repository it does not
    track), each once an hour. Replays of any of them now answer as the first did and keep nothing; doctor still
    says when the host was last heard from."""
    from bot.engine.engine import Engine
    from bot.faces.doctor import check_webhooks

    stranger = ForgeRepo(f"http://127.0.0.1:{site.git.port}", PATHS[forge] + "-untracked")
    bodies = [(delivery(forge, {"zen": "Design for failure.", "hook_id": 7,
                                "repository": github_repository(site.repo(forge))["repository"]},
                        SECRET, event="ping" if forge != "gitlab" else "Push Hook")[0], "ping", (200, "pong\n")),
              (delivery(forge, PUSH[forge](stranger, "3" * 40, "4" * 40), SECRET)[0], None,
               (202, "ignored: not a tracked repository\n")),
              (delivery(forge, {"action": "created", "issue": {"number": 1},
                                "repository": github_repository(site.repo(forge))["repository"]} if forge != "gitlab"
                        else {"object_kind": "issue", "event_type": "issue",
                              "project": PUSH["gitlab"](site.repo(forge), "1" * 40, "2" * 40)["project"]}, SECRET,
                        event="issues" if forge != "gitlab" else "Issue Hook")[0], "issues" if forge != "gitlab"
               else "Issue Hook", (202, "ignored: not a push or repository event\n"))]
    if forge == "gitlab":  # GitLab sends no ping: a test delivery is a push
        bodies = bodies[1:]
    for body, event, answer in bodies:
        assert post(site.hook(forge), *delivery(forge, body, SECRET, event=event)) == answer  # the first
        before = webhook_rows(site.data)
        for _ in range(25):
            assert post(site.hook(forge), *delivery(forge, body, SECRET, event=event)) == answer
        assert webhook_rows(site.data) == before, event
    engine = Engine.open(Settings.from_env({"GAD_DATA_DIR": str(site.data),
                                            "GAD_WEBHOOK_SECRETS": f"127.0.0.1={SECRET}"}))
    (line,) = [check.line() for check in check_webhooks(engine, datetime.now(timezone.utc))]
    assert line.startswith("[ok  ] webhooks from 127.0.0.1: the last arrived ") and line.endswith(("just now",
                                                                                                   "1 minute ago"))


def test_an_ignored_body_replayed_every_hour_grows_no_table(tmp_path):
    """The hour a digest is kept bounds a duplicate, not a replay: a captured push to a repository gad-bot does not
    track, posted again under a fresh id every 61 minutes, kept a delivery id (30 days) and a digest each time
    (720 rows a month from one body). Asking for nothing, it now keeps nothing, whenever it comes."""
    from datetime import timedelta

    from bot.engine.engine import Engine
    from bot.faces.webhooks import WebhookFace

    settings = Settings.from_env({"GAD_DATA_DIR": str(tmp_path / "data"), "GAD_WEBHOOK_SECRETS": f"github.com={SECRET}"})
    engine = Engine.open(settings)
    now = [datetime(2026, 12, 4, 12, 0, tzinfo=timezone.utc)]
    face = WebhookFace(settings, engine, Scheduled(), clock=lambda: now[0])
    payload = PUSH["github"](ForgeRepo("https://github.com", "someone/else"), "1" * 40, "2" * 40)
    body, _ = delivery("github", payload, SECRET)
    counts = []
    for _ in range(6):
        headers = delivery("github", body, SECRET)[1]
        answer = face.handle("github", {k.lower(): v for k, v in headers.items()}, body)
        assert (answer.status, answer.text) == (202, "ignored: not a tracked repository")
        counts.append(webhook_rows(tmp_path / "data"))
        now[0] += timedelta(minutes=61)
    assert counts == [counts[0]] * 6


def test_a_replayed_body_is_a_duplicate_after_serve_restarts_too(tmp_path):
    """The digests are in the index, as the delivery ids are: a serve started again still knows the body."""
    upstream = RepoBuilder(tmp_path / "srv" / "org" / "lib.git", bare=True)
    upstream.commit(name="Ann", email="ann@example.com", date="2024-01-02")
    before = str(upstream.tip("main"))
    after = str(upstream.commit(name="Cy", email="cy@example.com", date="2026-12-01"))
    data = tmp_path / "data"
    with GitHttpServer(tmp_path / "srv") as git, SlackStub() as stub:
        track_here(git.url("org/lib.git"), "lib", data)
        payload = PUSH["gitea"](ForgeRepo(f"http://127.0.0.1:{git.port}", "org/lib"), before, after)
        for run, expected in (("first", (202, "sync scheduled\n")),
                              ("second", (200, "duplicate: the same body was accepted within the hour\n"))):
            with Serve(data, stub, logs=tmp_path / run, GAD_WEBHOOK_SECRETS=f"127.0.0.1={SECRET}") as serve:
                body, headers = delivery("gitea", payload, SECRET)  # a new delivery id each time
                assert post(f"{serve.url}/hooks/gitea", body, headers) == expected, run
                assert serve.stop(signal.SIGTERM) == 0
            assert "Traceback" not in serve.stderr


def test_a_body_is_a_duplicate_for_its_own_host_within_the_hour_only(tmp_path):
    """The window and the host, on the index the digests are kept in: the same digest 59 minutes later from the
    same host is a duplicate; from another host, or 61 minutes later, it is new."""
    from datetime import timedelta

    from bot.engine.engine import Engine
    from bot.faces.webhooks import REPEATED_BODY_SECONDS

    index = Engine.open(Settings.from_env({"GAD_DATA_DIR": str(tmp_path / "data")})).index
    hour = timedelta(seconds=REPEATED_BODY_SECONDS)
    assert hour == timedelta(hours=1)
    now = datetime(2026, 12, 4, 12, 0, tzinfo=timezone.utc)
    digest = "ab" * 32
    assert index.record_webhook_body("github.com", digest, now, hour)
    assert not index.record_webhook_body("github.com", digest, now + timedelta(minutes=59), hour)
    assert index.record_webhook_body("git.corp.example", digest, now + timedelta(minutes=59), hour)
    assert index.record_webhook_body("github.com", digest, now + timedelta(minutes=61), hour)
    # what is out of the hour is forgotten: the table holds an hour of deliveries
    assert index.rows("SELECT host FROM webhook_bodies ORDER BY host") == [{"host": "git.corp.example"},
                                                                            {"host": "github.com"}]


def test_a_body_is_a_duplicate_of_the_last_one_accepted_for_its_repository_only(tmp_path):
    """On the index: web's A->B body, then its B->A body, then A->B again is new (web moved on in between);
    that body once more is a duplicate, and api's bodies, and bodies for no tracked repository, are kept apart."""
    from datetime import timedelta

    from bot.engine.engine import Engine

    index = Engine.open(Settings.from_env({"GAD_DATA_DIR": str(tmp_path / "data")})).index
    hour, now = timedelta(hours=1), datetime(2026, 12, 4, 12, 0, tzinfo=timezone.utc)
    forward, back, other, untracked = "a" * 64, "b" * 64, "c" * 64, "d" * 64
    minute = lambda n: now + timedelta(minutes=n)  # noqa: E731
    assert index.record_webhook_body("gitlab.com", forward, minute(0), hour, repository="web")
    assert index.record_webhook_body("gitlab.com", other, minute(1), hour, repository="api")
    assert index.record_webhook_body("gitlab.com", untracked, minute(1), hour)
    assert index.record_webhook_body("gitlab.com", back, minute(2), hour, repository="web")
    assert index.record_webhook_body("gitlab.com", forward, minute(3), hour, repository="web")
    assert not index.record_webhook_body("gitlab.com", forward, minute(4), hour, repository="web")
    assert not index.record_webhook_body("gitlab.com", other, minute(5), hour, repository="api")
    assert not index.record_webhook_body("gitlab.com", untracked, minute(5), hour)


def test_a_push_whose_body_repeats_an_earlier_one_after_another_push_is_synced(site):
    """GitLab's push body holds no time of the push: main moved A->B, back B->A (a force push), then A->B again is
    sent as the first body byte for byte, under a new delivery id. It is a new push, so it syncs; a replay of the
    body accepted last for the repository is still a duplicate."""
    forge, upstream = "gitlab", site.upstreams["gitlab"]
    instance = f"http://127.0.0.1:{site.git.port}"
    a, b = site.push(forge, "gus", "2026-12-05")  # A -> B: Gus's day is new
    with_gus = 2 * oracle_gad(upstream.path)
    scheduled = len(site.log_lines(f"sync of {forge} scheduled"))

    def send(before: str, after: str) -> tuple[int, str]:
        return post(site.hook(forge), *delivery(forge, PUSH[forge](site.repo(forge), before, after), SECRET,
                                                instance=instance))

    assert send(a, b) == (202, "sync scheduled\n")
    assert figure_reaches(site.serve, site.stub, forge, with_gus, "gus-in")[-1] == with_gus
    upstream.set_ref("refs/heads/main", pygit2.Oid(hex=a))  # forced back: Gus's commit is on no ref
    without_gus = 2 * oracle_gad(upstream.path)
    assert without_gus == with_gus - 2
    assert send(b, a) == (202, "sync scheduled\n")
    assert figure_reaches(site.serve, site.stub, forge, without_gus, "gus-out")[-1] == without_gus
    upstream.set_ref("refs/heads/main", pygit2.Oid(hex=b))  # and forward again: the first push's body, byte for byte
    assert send(a, b) == (202, "sync scheduled\n")
    assert figure_reaches(site.serve, site.stub, forge, with_gus, "gus-back")[-1] == with_gus
    assert send(a, b) == (200, "duplicate: the same body was accepted within the hour\n")  # a replay of the last
    assert len(site.log_lines(f"sync of {forge} scheduled")) == scheduled + 3


@pytest.mark.parametrize("forge", list(PATHS))
def test_an_oversized_delivery_is_413_before_it_is_read(site, forge):
    payload = PUSH[forge](site.repo(forge), "1" * 40, "2" * 40)
    payload["padding"] = "x" * (1 << 20)
    body, headers = delivery(forge, payload, SECRET)
    # Only the headers are sent: the answer comes before a byte of the body is read (the forge's
    # own client would see its upload cut off, as urllib does with a broken pipe).
    connection = http.client.HTTPConnection("127.0.0.1", site.serve.port, timeout=10)
    try:
        connection.putrequest("POST", f"/hooks/{forge}")
        for name, value in {**headers, "Content-Length": str(len(body))}.items():
            connection.putheader(name, value)
        connection.endheaders()
        assert connection.getresponse().status == 413
    finally:
        connection.close()
    assert "padding" not in site.serve.stderr


@pytest.mark.parametrize("forge", list(PATHS))
def test_an_unknown_repository_is_202_and_ignored(site, forge):
    stranger = ForgeRepo(f"http://127.0.0.1:{site.git.port}", PATHS[forge] + "-not-tracked")
    body, headers = delivery(forge, PUSH[forge](stranger, "1" * 40, "2" * 40), SECRET)
    status, text = post(site.hook(forge), body, headers)
    assert (status, text.strip()) == (202, "ignored: not a tracked repository")
    # signed with another host's secret, naming this host's repository: refused
    body, headers = delivery(forge, PUSH[forge](site.repo(forge), "1" * 40, "2" * 40), f"x-{SECRET}")
    status, text = post(site.hook(forge), body, headers)
    assert status == 403 and "another host" in text


def test_paths_and_methods(site):
    body, headers = delivery("github", {"zen": "Keep it logically awesome.", "hook_id": 1}, SECRET, event="ping")
    assert post(site.hook("github"), body, headers) == (200, "pong\n")
    assert post(f"{site.serve.url}/hooks/bitbucket", body, headers)[0] == 404
    body, headers = delivery("github", [1, 2], SECRET)
    assert post(site.hook("github"), body, headers)[0] == 400  # signed, but not what GitHub sends
    body, headers = delivery("github", {"repository": {}}, SECRET, delivery_id="")
    del headers["X-GitHub-Delivery"]
    assert post(site.hook("github"), body, headers)[0] == 400


def test_socket_mode_takes_webhooks_on_their_own_port(tmp_path):
    """Socket Mode has no HTTP server for Slack: GAD_WEBHOOK_PORT serves the hooks (and /healthz)."""
    upstream = RepoBuilder(tmp_path / "srv" / "org" / "lib.git", bare=True)
    upstream.commit(name="Ann", email="ann@example.com", date="2024-01-02")
    data, port = tmp_path / "data", free_port()
    with GitHttpServer(tmp_path / "srv") as git, SlackStub() as stub:
        track_here(git.url("org/lib.git"), "lib", data)
        with Serve(data, stub, socket_mode=True, logs=tmp_path / "logs", GAD_WEBHOOK_SECRETS=f"127.0.0.1={SECRET}",
                   GAD_WEBHOOK_PORT=str(port)) as serve:
            wait_port(port)
            before = str(upstream.tip("main"))
            after = str(upstream.commit(name="Cy", email="cy@example.com", date="2026-12-01"))
            repo = ForgeRepo(f"http://127.0.0.1:{git.port}", "org/lib")
            body, headers = delivery("gitea", PUSH["gitea"](repo, before, after), SECRET)
            assert post(f"http://127.0.0.1:{port}/hooks/gitea", body, headers) == (202, "sync scheduled\n")
            deadline = time.monotonic() + 20
            while figures(data, "lib", ("since:2000-01",))["since:2000-01"][0] != 2 and time.monotonic() < deadline:
                time.sleep(0.2)
            assert figures(data, "lib", ("since:2000-01",))["since:2000-01"][0] == oracle_gad(upstream.path) == 2
            assert serve.stop(signal.SIGTERM) == 0
        assert "Traceback" not in serve.stderr


ORG_OWNERS = {"github": "acme-gh", "gitlab": "acme/platform", "gitea": "acme-tea"}


def test_a_repository_created_in_a_tracked_organization_is_tracked(tmp_path):
    """An organization tracked whole (Engine.track_org) on each forge kind; a repository is created in it and the
    forge says so (GitHub/Gitea `repository` created, a GitLab system hook's project_create): serve has the
    organization listed again in a sync worker, which tracks the new repository; the organization's report
    counts it, its figure from git over the forge's repositories."""
    from bot.engine.engine import Engine

    stubs = {kind: ForgeStub(tmp_path / "srv" / kind, kind).start() for kind in ORG_OWNERS}
    try:
        forges = ",".join(stub.forges_setting for stub in stubs.values())
        data = tmp_path / "data"
        engine = Engine.open(Settings.from_env({"GAD_DATA_DIR": str(data), "GAD_FORGES": forges}))
        orgs = {}
        for kind, stub in stubs.items():
            stub.add(f"{ORG_OWNERS[kind]}/web")
            orgs[kind] = engine.track_org(engine.org_owner(stub.owner_url(ORG_OWNERS[kind]))).org
        engine.index.close()
        with SlackStub() as slack, Serve(data, slack, logs=tmp_path / "logs", GAD_FORGES=forges,
                                         GAD_WEBHOOK_SECRETS=f"127.0.0.1={SECRET}") as serve:
            for kind, stub in stubs.items():
                owner = ORG_OWNERS[kind]
                # a subgroup's project on GitLab: the group tracked whole includes it
                created = f"{owner}/infra/new" if kind == "gitlab" else f"{owner}/new"
                stub.add(created, commits=[("new@acme.example", "2026-11-02"), ("ann@acme.example", "2026-11-03")])
                expected = 2 * len(oracle_pairs(stub.base / f"{owner}/web.git")
                                   | oracle_pairs(stub.base / f"{created}.git"))
                assert figure(serve, slack, orgs[kind], f"{kind}-org-before") == \
                    2 * len(oracle_pairs(stub.base / f"{owner}/web.git")) < expected
                build, event = CREATED[kind]
                body, headers = delivery(kind, build(ForgeRepo(f"http://{stub.host}", created)), SECRET, event=event,
                                         instance=f"http://{stub.host}")
                assert post(f"{serve.url}/hooks/{kind}", body, headers) == (202, "organization sync scheduled\n")
                # listing the organization and tracking the new repository in a worker: give a loaded machine time
                seen = figure_reaches(serve, slack, orgs[kind], expected, f"{kind}-org-after", seconds=120)
                assert seen[-1] == expected, (kind, seen)
            assert serve.stop(signal.SIGTERM) == 0
        assert "Traceback" not in serve.stderr
    finally:
        for stub in stubs.values():
            stub.stop()


def run_queue(tmp_path, requests, count: int, debounce: float) -> list:
    """What a one-worker SyncQueue (in a spawned process, with `record_job` as its runner) finished, in order,
    after `requests(queue)`: once `count` jobs are done, then a sentinel request is done too (the one worker runs it
    after anything asked before it) and nothing is left waiting, not even a debounce timer."""
    from bot.service.syncs import SyncQueue

    settings = Settings.from_env({"GAD_DATA_DIR": str(tmp_path / "data")})
    done = []
    queue = SyncQueue(settings, workers=1, debounce=debounce, runner=record_job, on_done=done.append)
    queue.start()
    try:
        requests(queue)
        deadline = time.monotonic() + 60
        while len(done) < count and time.monotonic() < deadline:
            time.sleep(0.05)
        queue.request_repo("sentinel", delay=0)
        while "sentinel" not in [d.job.name for d in done] and time.monotonic() < deadline:
            time.sleep(0.05)
        assert [d.job.name for d in done][-1:] == ["sentinel"], [d.job.name for d in done]
        assert queue.pending() == 0
    finally:
        queue.shutdown()
    assert all(d.error == "tracked nowhere" for d in done)
    return [d.job.name for d in done][:-1]


def test_a_burst_of_pushes_is_one_sync(tmp_path):
    """Five pushes within the debounce second: one sync (in a spawned worker process), not five."""
    def burst(queue):
        for _ in range(5):
            queue.request_repo("web")
        queue.request_repo("api")

    assert sorted(run_queue(tmp_path, burst, 2, debounce=1.0)) == ["api", "web"]


def test_a_push_goes_before_the_periodic_syncs_queue(tmp_path):
    """One worker busy with the periodic sync's first repository and three more waiting: a push's sync is next."""
    def periodic_then_pushes(queue):
        assert queue.sync_due(["p1", "p2", "p3", "p4"]) == 4
        queue.request_repo("p3", delay=0)  # a push to a repository the periodic sync has queued: moved up
        queue.request_repo("pushed", delay=0)

    assert run_queue(tmp_path, periodic_then_pushes, 5, debounce=0.5) == ["p1", "p3", "pushed", "p2", "p4"]


def record_job(job):
    """A sync runner for the test above (module level: pickled by name into the worker process)."""
    from bot.service.syncs import SyncDone

    return SyncDone(job, error="tracked nowhere")


# -- what a body means, per forge (no server) -------------------------------------------------------

def test_repo_key_names_one_repository_however_it_is_written():
    keys = {repo_key(u) for u in ("https://GitHub.com/Acme/Web.git", "https://github.com/acme/web",
                                   "git@github.com:acme/web.git", "ssh://git@github.com/acme/web.git",
                                   "https://github.com/acme/web/")}
    assert keys == {("github.com", "acme/web")}
    assert repo_key("not a url") is None and repo_key("") is None and repo_key("x" * 5000) is None


def test_gitlab_system_hook_project_create_and_github_rename():
    body = json.dumps({"event_name": "project_create", "name": "new", "path": "new",
                       "path_with_namespace": "group/sub/new", "project_id": 74, "owner_name": "Root"}).encode()
    event = parse_event("gitlab", {"x-gitlab-event": "System Hook", "x-gitlab-event-uuid": "u-1",
                                   "x-gitlab-instance": "https://git.corp.example"}, body)
    assert event == HookEvent("gitlab", "repository", "project_create", "u-1", "git.corp.example", "group/sub",
                              ("https://git.corp.example/group/sub/new",), "git.corp.example")
    renamed = github_repository(ForgeRepo("https://github.com", "acme/web2"), action="renamed")
    renamed["changes"] = {"repository": {"name": {"from": "web"}}}
    event = parse_event("github", {"x-github-event": "repository", "x-github-delivery": "d-1"}, json.dumps(renamed).encode())
    assert event.kind == "repository" and event.action == "renamed" and event.owner == "acme"
    assert ("github.com", "acme/web") in {repo_key(u) for u in event.urls}


def test_signed_hosts_is_the_host_whose_secret_signed():
    body = b'{"a": 1}'
    secrets = {"github.com": "one", "ghe.corp.example": "two"}
    _, headers = delivery("github", {"a": 1}, "two")
    lower = {k.lower(): v for k, v in headers.items()}
    assert signed_hosts("github", lower, body, secrets) == ["ghe.corp.example"]
    assert signed_hosts("github", {**lower, "x-hub-signature-256": "sha256=" + "0" * 64}, body, secrets) == []
    assert signed_hosts("gitlab", {"x-gitlab-token": "one"}, body, secrets) == ["github.com"]
    assert signed_hosts("gitlab", {"x-gitlab-token": "on"}, body, secrets) == []


def test_doctor_says_when_the_last_webhook_arrived(tmp_path):
    from bot.engine.engine import Engine
    from bot.faces.doctor import check_webhooks

    settings = Settings.from_env({"GAD_DATA_DIR": str(tmp_path / "data"),
                                  "GAD_WEBHOOK_SECRETS": "github.com=a,git.corp.example=b"})
    engine = Engine.open(settings)
    now = datetime(2026, 12, 4, 12, 0, tzinfo=timezone.utc)
    from datetime import timedelta

    assert engine.index.record_delivery("d-1", "github.com", now - timedelta(minutes=5), timedelta(days=30))
    lines = [check.line() for check in check_webhooks(engine, now)]
    assert lines == ["[ok  ] webhooks from github.com: the last arrived 5 minutes ago",
                     "[warn] webhooks from git.corp.example: none has arrived yet -- add the webhook on the forge "
                     "(docs/operations.md, 5.3), or remove the host from GAD_WEBHOOK_SECRETS"]


def test_site_of_is_the_host_and_port_gad_forges_names():
    from bot.faces.webhooks import site_of

    assert site_of("https://Git.Corp.example:8443/group/x") == "git.corp.example:8443"
    assert site_of("https://github.com:443/acme/web") == site_of("https://github.com/acme/web") == "github.com"
    assert site_of("http://127.0.0.1:80/a") == "127.0.0.1" and site_of("http://127.0.0.1:3000/a") == "127.0.0.1:3000"
    assert site_of("git@github.com:acme/web.git") == "" and site_of("https://x:notaport/") == ""


@pytest.mark.parametrize("value, secrets", [
    ("GitHub.com = s1 ", {"github.com": "s1"}),
    ("git.corp.example:8443=s2", {"git.corp.example": "s2"}),  # as GAD_FORGES names it: the port is not the key
    ("a.example=x=y", {"a.example": "x=y"}),
])
def test_gad_webhook_secrets_as_an_operator_may_write_it(value, secrets, tmp_path):
    assert dict(Settings.from_env({"GAD_DATA_DIR": str(tmp_path), "GAD_WEBHOOK_SECRETS": value}).webhook_secrets) == secrets


@pytest.mark.parametrize("value", ["github.com", "github.com=", "=hunter2-a", "https://github.com=hunter2-a",
                                   "github.com=hunter2-a,hunter2-b"])
def test_odd_gad_webhook_secrets_are_one_sentence_without_the_secret(value, tmp_path):
    from bot.errors import ConfigError

    with pytest.raises(ConfigError, match="HOST=SECRET pairs") as refused:
        Settings.from_env({"GAD_DATA_DIR": str(tmp_path), "GAD_WEBHOOK_SECRETS": value})
    assert "hunter2" not in str(refused.value)


def test_a_signed_nesting_bomb_is_400_not_a_traceback(site):
    """A body of arrays nested 100,000 deep (200 KB, under the size cap), signed: Python's JSON parser gives up
    with a RecursionError; the answer is a 400 with one log line, never a 500 the forge would retry."""
    body, headers = delivery("github", b"[" * 100_000 + b"]" * 100_000, SECRET)
    refusals = len(site.log_lines("refused a webhook to /hooks/github: 400 (body is not a JSON object"))
    status, text = post(site.hook("github"), body, headers)
    assert status == 400 and "not a JSON object" in text
    assert len(site.wait_lines("refused a webhook to /hooks/github: 400 (body is not a JSON object", refusals + 1)) \
        == refusals + 1  # its one line is in
    assert len(site.log_lines(headers["X-GitHub-Delivery"])) == 0  # nothing of the request in the log
    assert "Traceback" not in site.serve.stderr and "RecursionError" not in site.serve.stderr


class Scheduled:
    """A sync queue that records what it was asked (WebhookFace only calls these two)."""

    def __init__(self):
        self.asked: list[tuple[str, str]] = []

    def request_repo(self, name: str) -> None:
        self.asked.append(("repo", name))

    def request_org(self, name: str) -> None:
        self.asked.append(("org", name))


def test_one_hosts_secret_cannot_speak_for_another_hosts_organization(tmp_path):
    """A delivery signed with evil.example's secret whose clone URL is on evil.example (so the host check passes)
    but whose web URL names a repository of an organization tracked on git.corp.example: nothing is scheduled.
    The same delivery from git.corp.example itself has the organization listed again."""
    from bot.engine.engine import Engine
    from bot.faces.webhooks import WebhookFace
    from bot.store.orgindex import OrgIndex

    settings = Settings.from_env({"GAD_DATA_DIR": str(tmp_path / "data"),
                                  "GAD_WEBHOOK_SECRETS": f"git.corp.example={SECRET},evil.example=evil-{SECRET}"})
    engine = Engine.open(settings)
    OrgIndex(engine.index).add_org("acme", "git.corp.example", "github", "acme", "https://git.corp.example/acme",
                                   False, False)
    queue = Scheduled()
    face = WebhookFace(settings, engine, queue)

    def send(clone_url: str, secret: str):
        payload = github_repository(ForgeRepo("https://git.corp.example", "acme/new"))
        payload["repository"].update(clone_url=clone_url, ssh_url="", git_url="")
        body, headers = delivery("github", payload, secret, event="repository")
        return face.handle("github", {k.lower(): v for k, v in headers.items()}, body)

    answer = send("git@evil.example:acme/new.git", f"evil-{SECRET}")
    assert (answer.status, answer.text) == (202, "ignored: not a tracked repository") and queue.asked == []
    answer = send("https://git.corp.example/acme/new.git", SECRET)
    assert (answer.status, answer.text) == (202, "organization sync scheduled") and queue.asked == [("org", "acme")]


def test_every_secret_is_compared_in_constant_time(monkeypatch):
    """Each configured secret is compared with hmac.compare_digest (its time does not depend on how much of a
    guess is right), a forged signature of the right shape as much as a good one; nothing short-circuits first."""
    import hmac as hmac_module

    compared: list[tuple[bytes | str, bytes | str]] = []
    original = hmac_module.compare_digest

    def spy(a, b):
        compared.append((a, b))
        return original(a, b)

    monkeypatch.setattr(hmac_module, "compare_digest", spy)
    secrets = {"github.com": "one-secret", "ghe.corp.example": "two-secret"}
    body, headers = delivery("github", {"zen": "x"}, "two-secret")
    lower = {k.lower(): v for k, v in headers.items()}
    assert signed_hosts("github", lower, body, secrets) == ["ghe.corp.example"]
    assert len(compared) == 2  # one per secret, the matching one included
    good = lower["x-hub-signature-256"]
    forged = good[:-1] + ("1" if good[-1] == "0" else "0")  # right up to its last digit
    compared.clear()
    assert signed_hosts("github", {**lower, "x-hub-signature-256": forged}, body, secrets) == []
    assert len(compared) == 2
    compared.clear()
    assert signed_hosts("gitlab", {"x-gitlab-token": "two-secreX"}, body, secrets) == []
    assert compared == [(b"two-secreX", b"one-secret"), (b"two-secreX", b"two-secret")]


@pytest.mark.parametrize("size, status", [(2 << 20, 413), (1000, 202)])
def test_a_chunked_delivery_is_held_to_the_same_cap(site, size, status):
    """No Content-Length, the body in chunks: the server's cap (MAX_BODY_BYTES) still holds before the face reads
    it, and a small chunked delivery is taken as any other."""
    payload = PUSH["github"](ForgeRepo(f"http://127.0.0.1:{site.git.port}", "acme/not-tracked"), "1" * 40, "2" * 40)
    payload["padding"] = "p" * size
    body, headers = delivery("github", payload, SECRET)
    connection = http.client.HTTPConnection("127.0.0.1", site.serve.port, timeout=10)
    try:
        connection.request("POST", "/hooks/github", body=iter([body[i:i + 65536] for i in range(0, len(body), 65536)]),
                           headers=headers, encode_chunked=True)
        response = connection.getresponse()
        assert response.status == status, response.read()
    except (BrokenPipeError, ConnectionResetError):
        # waitress answers 413 and closes once the chunks pass the cap; a client still sending may meet the closed
        # connection before it reads that answer (a loaded machine's timing decides): only past the cap
        assert status == 413
    finally:
        connection.close()
    small, small_headers = delivery("github", PUSH["github"](
        ForgeRepo(f"http://127.0.0.1:{site.git.port}", "acme/not-tracked"), "3" * 40, "4" * 40), SECRET)
    assert post(site.hook("github"), small, small_headers)[0] == 202  # serve took it and goes on


def test_deliveries_trickling_in_do_not_hold_up_a_good_one(site):
    """Twenty clients send a delivery's headers and a byte of its body, then nothing (more than the server's 16
    threads): bodies are read whole before the face runs, so no thread waits on them and a good delivery is
    answered at once."""
    import socket

    slow = []
    try:
        for _ in range(20):
            connection = socket.create_connection(("127.0.0.1", site.serve.port), timeout=10)
            connection.sendall(b"POST /hooks/github HTTP/1.1\r\nHost: gad\r\nContent-Type: application/json\r\n"
                               b"Content-Length: 1000\r\n\r\n{")
            slow.append(connection)
        stranger = ForgeRepo(f"http://127.0.0.1:{site.git.port}", "acme/not-tracked")
        body, headers = delivery("github", PUSH["github"](stranger, "1" * 40, "2" * 40), SECRET)
        started = time.monotonic()
        assert post(site.hook("github"), body, headers)[0] == 202
        assert time.monotonic() - started < 5
    finally:
        for connection in slow:
            connection.close()


def test_webhook_secrets_never_reach_the_log_even_at_debug(tmp_path):
    """GitLab sends the secret itself in X-Gitlab-Token: a good delivery, a token one character off, a forged
    GitHub signature and a ping, with serve at its chattiest; neither host's secret is in anything it wrote."""
    upstream = RepoBuilder(tmp_path / "srv" / "group" / "api.git", bare=True)
    upstream.commit(name="Ann", email="ann@example.com", date="2024-01-02")
    data, other = tmp_path / "data", f"other-{SECRET}"
    with GitHttpServer(tmp_path / "srv") as git, SlackStub() as stub:
        track_here(git.url("group/api.git"), "api", data)
        with Serve(data, stub, logs=tmp_path / "logs", GAD_LOG_LEVEL="DEBUG",
                   GAD_WEBHOOK_SECRETS=f"127.0.0.1={SECRET},other.example={other}") as serve:
            repo = ForgeRepo(f"http://127.0.0.1:{git.port}", "group/api")
            for forge, secret, expected in (("gitlab", SECRET, 202), ("gitlab", SECRET[:-1] + "X", 401),
                                            ("gitlab", other, 403), ("github", "not-the-secret", 401)):
                body, headers = delivery(forge, PUSH[forge](repo, "1" * 40, "2" * 40), secret,
                                         instance=f"http://127.0.0.1:{git.port}")
                assert post(f"{serve.url}/hooks/{forge}", body, headers)[0] == expected
            body, headers = delivery("github", {"zen": "Speak like a human.", "hook_id": 1}, SECRET, event="ping")
            assert post(f"{serve.url}/hooks/github", body, headers)[0] == 200
            assert serve.stop(signal.SIGTERM) == 0
        written = serve.stdout + serve.stderr
        assert " DEBUG " in written  # the chattiest level really was on
        assert SECRET not in written and SECRET[:-1] not in written and "Speak like a human" not in written
