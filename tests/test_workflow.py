"""The Workflow Builder step "Effort of a repository": a signed `function_executed` event as Slack sends it
-> Bolt's app.function -> the engine on a real index -> functions.completeSuccess / completeError, called
with the run's own token, as the Slack stand-in receives them.

Figures by hand from tests/test_surfaces.py's `web` (today is Thursday 2026-12-03):
    all history: 8 (person, day) pairs -> 2GAD 16 = 0.84 person-months (19 person-days each), 2 developers, 9 commits
    since:2026-11-23 until:2026-11-29: ann 23rd, ann 24th (twice), bob 24th -> 3 pairs, 2GAD 6, 4 commits
"""

from __future__ import annotations

import pytest
from slack_bolt.request import BoltRequest

from bot.config import Settings
from bot.engine.engine import Engine
from bot.faces.slack import build_app
from tests.slackstub import SlackStub, event_callback, function_executed_event, signed_event
from tests.test_surfaces import API, SECRET, TODAY, WEB, build

RUN_TOKEN = "xwfp-1-workflow-run-token"


@pytest.fixture
def stub():
    with SlackStub() as running:
        running.workflow_tokens.add(RUN_TOKEN)
        yield running


@pytest.fixture
def app(tmp_path, stub):
    settings = Settings.from_env({"GAD_DATA_DIR": str(tmp_path / "data"), "SLACK_BOT_TOKEN": stub.good_token,
                                  "SLACK_SIGNING_SECRET": SECRET, "SLACK_API_URL": stub.api_url})
    engine = Engine.open(settings)
    engine.track(str(build(tmp_path / "web", WEB).path), "web")
    engine.track(str(build(tmp_path / "api", API).path), "api")
    engine.project_add("suite", ["web", "api"])
    app, _ = build_app(settings, engine, socket_mode=False, today=lambda: TODAY)
    return app


def run_step(app, stub, inputs: dict, method: str, count: int = 1):
    event = function_executed_event("effort_of_a_repository", inputs, bot_access_token=RUN_TOKEN)
    body, headers = signed_event(SECRET, event_callback(event))
    response = app.dispatch(BoltRequest(body=body.decode(), headers={k.lower(): v for k, v in headers.items()}))
    assert response.status == 200
    call = stub.wait_for(method, count=count, timeout=15)[-1]
    assert call.token == RUN_TOKEN and call.args["function_execution_id"] == event["function_execution_id"]
    return call.args


def test_the_step_outputs_the_effort_of_a_repository(app, stub):
    outputs = run_step(app, stub, {"repository": "web", "period": ""}, "functions.completeSuccess")["outputs"]
    assert outputs == {"two_gad_person_days": 16, "person_months": 0.84, "developers": 2, "commits": 9,
                       "summary": "web: 2GAD 16 person-days (0.8 person-months), 2 developers, 9 commits, all history"}
    week = run_step(app, stub, {"repository": "web", "period": "since:2026-11-23 until:2026-11-29"},
                    "functions.completeSuccess", count=2)["outputs"]
    assert (week["two_gad_person_days"], week["developers"], week["commits"]) == (6, 2, 4)
    assert week["summary"].endswith(", 2026-11-23 to 2026-11-29")


def test_a_project_counts_as_one(app, stub):
    # ann on 2024-01-02 in both web and api is one person-day; di on 2026-11-25 adds one: 9 pairs, 2GAD 18
    outputs = run_step(app, stub, {"repository": "suite"}, "functions.completeSuccess")["outputs"]
    assert outputs["two_gad_person_days"] == 18 and outputs["developers"] == 3 and outputs["commits"] == 11


@pytest.mark.parametrize("inputs, sentence", [
    ({"repository": "wbe"}, "No repository or project named `wbe` is tracked; did you mean `web`?"),
    ({"repository": "web", "period": "by:person"},
     "`by:person` is not a period; Period takes since: and until:, e.g. `since:2026-07 until:2026-09` or "
     "`since:12w` (empty: all history)."),
    ({"repository": "web api"}, "`web api` is not one repository or project; put one name in Repository (e.g. `web`) "
                                "and the dates in Period."),
    ({"repository": ""}, "The step needs a repository or project: the name of one gad-bot tracks (`/gad repos` lists "
                         "them), e.g. `web`."),
    ({"repository": "web", "period": "since:2026-13"}, None),  # no 13th month: the grammar's own sentence
])
def test_wrong_inputs_fail_the_step_with_one_sentence(app, stub, inputs, sentence):
    error = run_step(app, stub, inputs, "functions.completeError")["error"]
    assert "\n" not in error and "Traceback" not in error and error.endswith((".", "?"))
    if sentence is not None:
        assert error.startswith(sentence) or error == sentence, error
    assert stub.calls_to("functions.completeSuccess") == []


def test_the_manifest_declares_the_step_as_it_runs(app, stub):
    import yaml
    from pathlib import Path

    from bot.faces.workflow import STEP_CALLBACK_ID

    manifest = yaml.safe_load((Path(__file__).parent.parent / "manifest.yml").read_text())
    step = manifest["functions"][STEP_CALLBACK_ID]
    assert set(step["input_parameters"]) == {"repository", "period"}
    outputs = run_step(app, stub, {"repository": "web"}, "functions.completeSuccess")["outputs"]
    assert set(step["output_parameters"]) == set(outputs)
    assert "function_executed" in manifest["settings"]["event_subscriptions"]["bot_events"]
    assert manifest["settings"]["org_deploy_enabled"] is True and manifest["settings"]["function_runtime"] == "remote"


# -- under serve: the step's report takes its turn in the report workers (bot/service/workers.py) --------------

def served(tmp_path, stub, start_pool, **pool_args):
    """The app as `serve` runs it: one report worker, and a serving Engine that has loaded nothing yet."""
    settings = Settings.from_env({"GAD_DATA_DIR": str(tmp_path / "data"), "SLACK_BOT_TOKEN": stub.good_token,
                                  "SLACK_SIGNING_SECRET": SECRET, "SLACK_API_URL": stub.api_url})
    indexer = Engine.open(settings)
    web = build(tmp_path / "web", WEB)
    indexer.track(str(web.path), "web")
    indexer.index.close()
    engine = Engine.open(settings)
    pool = start_pool(settings, workers=1, **pool_args)
    app, _ = build_app(settings, engine, reports=pool, socket_mode=False, today=lambda: TODAY)
    return app, engine, web


def test_under_serve_the_step_is_answered_by_a_report_worker(tmp_path, stub, start_pool):
    from tests.gitbuild import oracle_gad

    app, engine, web = served(tmp_path, stub, start_pool)
    outputs = run_step(app, stub, {"repository": "web", "period": ""}, "functions.completeSuccess")["outputs"]
    two_gad = 2 * oracle_gad(web.path)
    assert two_gad == 16  # as worked out by hand above
    assert outputs == {"two_gad_person_days": two_gad, "person_months": 0.84, "developers": 2, "commits": 9,
                       "summary": "web: 2GAD 16 person-days (0.8 person-months), 2 developers, 9 commits, all history"}
    assert engine.snapshots.loaded == {}  # the serving process computed nothing: it never loaded a repository
    # a name the worker does not find fails the step with the sentence it failed with in-process
    error = run_step(app, stub, {"repository": "wbe"}, "functions.completeError")["error"]
    assert error == "No repository or project named `wbe` is tracked; did you mean `web`?"
    assert len(stub.calls_to("functions.completeSuccess")) == 1


def test_under_serve_a_step_past_the_report_time_limit_fails_with_one_sentence(tmp_path, stub, start_pool):
    from tests.test_home import computes_for_ever

    app, _, _ = served(tmp_path, stub, start_pool, runner=computes_for_ever, timeout=1)
    error = run_step(app, stub, {"repository": "web"}, "functions.completeError")["error"]
    assert error.startswith("Your question was still computing after 1 s, so gad-bot stopped it") and "\n" not in error
    assert stub.calls_to("functions.completeSuccess") == []


def test_under_serve_too_many_steps_at_once_fail_naming_the_workflow_steps(tmp_path, stub, start_pool):
    """Every run of the step takes its turn as one party (WORKFLOW_PARTY): past GAD_REPORTS_PER_USER at once, a
    run fails with a sentence about the workflow steps, not "You already have ..." addressed to nobody."""
    from tests.test_home import computes_for_ever

    app, _, _ = served(tmp_path, stub, start_pool, runner=computes_for_ever, timeout=30, per_user=1)
    event = function_executed_event("effort_of_a_repository", {"repository": "web"}, bot_access_token=RUN_TOKEN)
    body, headers = signed_event(SECRET, event_callback(event))  # the first run: computing (for ever)
    assert app.dispatch(BoltRequest(body=body.decode(), headers={k.lower(): v for k, v in headers.items()})).status == 200
    error = run_step(app, stub, {"repository": "web"}, "functions.completeError")["error"]
    assert error == ("gad-bot's workflow steps already have 1 question waiting or computing (at most 1 at a time); "
                     "wait for some of them to be answered, then ask again.")


def test_the_step_counts_only_what_everyone_may_see(tmp_path, stub):
    """A step's outputs go wherever its workflow sends them, which gad-bot cannot know: a repository open only to a
    channel is, to the step, not tracked (issue 31); opened to everyone, it answers."""
    from bot.engine.audiences import Audience

    settings = Settings.from_env({"GAD_DATA_DIR": str(tmp_path / "data"), "SLACK_BOT_TOKEN": stub.good_token,
                                  "SLACK_SIGNING_SECRET": SECRET, "SLACK_API_URL": stub.api_url})
    engine = Engine.open(settings)
    engine.track(str(build(tmp_path / "web", WEB).path), "web")
    engine.set_access("web", Audience.parse("C0ENG"))
    app, _ = build_app(settings, engine, socket_mode=False, today=lambda: TODAY)
    error = run_step(app, stub, {"repository": "web"}, "functions.completeError")["error"]
    assert error == "No repository or project named `web` is tracked; nothing is tracked yet; track one first with " \
                    "`/gad track URL`."  # word for word what a step gets when nothing is tracked
    engine.set_access("web", Audience.parse("everyone"))
    outputs = run_step(app, stub, {"repository": "web"}, "functions.completeSuccess")["outputs"]
    assert outputs["two_gad_person_days"] == 16


# -- issue 31: the operator's detail stays the operator's --------------------------------------------------------

SERVER_PATH = "/srv/gad/data/mirrors/web-0123abcd.git"


def mirror_cannot_be_opened(*args, **kwargs):
    """What a report raises when a mirror on the server cannot be opened: a GadError naming the server's insides."""
    from bot.errors import MirrorError

    raise MirrorError(f"The mirror at {SERVER_PATH} cannot be opened (bad header); re-clone it with "
                      "`gad-bot sync --reclone NAME`.", operator_detail=True)


def report_on_a_damaged_server(job):
    """The report workers' own run_report (bot/service/workers.py), in the worker, on an engine whose report fails as
    above (module-level: the pool pickles it by name)."""
    from bot.service import workers

    workers._engine.report = mirror_cannot_be_opened
    return workers.run_report(job)


def test_a_failed_step_shows_its_owner_a_reference_not_the_servers_insides(app, stub, monkeypatch, caplog):
    """A step whose report failed on the server's insides (a path on it, the operator's files) showed them whole to
    the workflow's owner, who is anyone who builds a workflow, where a member asking `/gad` reads one sentence and a
    reference id. The step now fails with that sentence and the reference, and the log has the detail under it."""
    import re

    from bot.engine.engine import Engine

    monkeypatch.setattr(Engine, "report", mirror_cannot_be_opened)
    error = run_step(app, stub, {"repository": "web"}, "functions.completeError")["error"]
    assert SERVER_PATH not in error and "/srv" not in error
    found = re.fullmatch(r"Something on the gad-bot server needs the operator's attention before this step can run; "
                         r"tell an admin the reference ([0-9a-f]{8})\.", error)
    assert found, error
    assert any(found.group(1) in r.getMessage() and SERVER_PATH in r.getMessage() for r in caplog.records)


def test_under_serve_a_failed_step_shows_its_owner_a_reference_not_the_servers_insides(tmp_path, stub, start_pool):
    import re

    app, _, _ = served(tmp_path, stub, start_pool, runner=report_on_a_damaged_server)
    error = run_step(app, stub, {"repository": "web"}, "functions.completeError")["error"]
    assert SERVER_PATH not in error
    assert re.fullmatch(r"Something on the gad-bot server needs the operator's attention before this step can run; "
                        r"tell an admin the reference [0-9a-f]{8}\.", error), error
