"""range:, by:org and compare through the real paths: signed request -> Bolt -> engine on a real index ->
renderer -> what the loopback Slack receives; and the CLI as a process (--json, --csv, orgs)."""

from __future__ import annotations

import json

import pytest
from slack_bolt.request import BoltRequest

from bot.config import Settings
from bot.engine.engine import Engine
from bot.faces.slack import build_app
from tests.conftest import TODAY
from tests.gitbuild import RepoBuilder
from tests.slackstub import SlackStub, block_actions_payload, signed_interaction
from tests.test_cli import run
from tests.test_estimation import build_web
from tests.test_render import all_texts
from tests.test_slack import SECRET, ack_body, answer, dispatch


@pytest.fixture
def stub():
    with SlackStub() as running:
        yield running


@pytest.fixture
def bot(tmp_path, stub):
    build_web(tmp_path / "web")
    lib = RepoBuilder(tmp_path / "lib")
    lib.commit(name="Zed", email="zed@kernel.org", date="2021-05-05", files={"drivers/gpu/a.c": "a"})
    lib.commit(name="Yan", email="yan@kernel.org", date="2021-07-05", files={"docs/b": "b"})
    rules = tmp_path / "orgs.txt"
    rules.write_text("intel.com Intel\n")
    settings = Settings.from_env({"GAD_DATA_DIR": str(tmp_path / "data"), "SLACK_BOT_TOKEN": stub.good_token,
                                  "SLACK_SIGNING_SECRET": SECRET, "SLACK_API_URL": stub.api_url,
                                  "GAD_ADMINS": "UADMIN", "GAD_ORG_FILE": str(rules)})
    engine = Engine.open(settings)
    engine.track(str(tmp_path / "web"), "web")
    engine.track(str(lib.path), "lib")
    app, _ = build_app(settings, engine, socket_mode=False, today=lambda: TODAY)
    return app


def read(message: dict) -> str:
    """What a person sees: every text Slack renders, one per line."""
    return "\n".join(all_texts(message["text"], message["blocks"]))


def test_slack_range_shows_the_range_and_its_span(bot, stub):
    _, name = dispatch(bot, stub, "web range:v1.0..v2.0")
    message = answer(stub, name)
    # hand-worked in tests/test_estimation.py: 6 person-days from 2022-07-10 to 2022-12-01; v1.0 is Cy's commit
    # of 2022-09-01, v2.0 Ann's merge of 2022-12-01 (91 days: 3.0 months); Bob's two commits of 2022-07-10 and
    # 2022-08-01 (his own day) are older than v1.0, merged in with the feature branch
    assert message["text"] == ("web: 2GAD 12 person-days, range v1.0..v2.0: v1.0 (2022-09-01) to v2.0 (2022-12-01), "
                               "3.0 months apart; its commits span 4.8 months because 2 older commits were merged in")
    shown = read(message)
    assert ("*Range:* `v1.0..v2.0` · v1.0 (2022-09-01) to v2.0 (2022-12-01), 3.0 months apart · commits 2022-07-10 to "
            "2022-12-01 (4.8 months); 2 older commits merged in") in shown
    assert "4 developers · 6 commits · 6 active days (GAD)" in shown


def test_slack_range_errors_are_one_sentence(bot, stub):
    response, _ = dispatch(bot, stub, "web range:v1.0..v2.0 branch:main")
    assert "A range replaces the scope" in json.dumps(ack_body(response))  # refused in the ack
    _, name = dispatch(bot, stub, "web range:v1.0..v2.1")
    message = answer(stub, name)
    assert ":warning: `web` has no tag, branch or commit `v2.1`; nearest: `v2.0`, `v2.0-rc1`, `v1.10`." in read(message)
    assert message["response_type"] == "ephemeral"


def test_ref_names_in_error_lists_cannot_format_the_message(tmp_path, stub):
    """Issue 22: ref names are the repository's. A tag `x`_it_`y` listed as `x`_it_`y` closed the
    code span and made `_it_` italic; each name is now a code span a backtick cannot close."""
    repo = RepoBuilder(tmp_path / "hostile")
    first = repo.commit(name="Ann", email="ann@example.com", date="2024-01-02")
    repo.tag("x`_it_`y", first)
    repo.branch("q`_b_`r", first)
    settings = Settings.from_env({"GAD_DATA_DIR": str(tmp_path / "data"), "SLACK_BOT_TOKEN": stub.good_token,
                                  "SLACK_SIGNING_SECRET": SECRET, "SLACK_API_URL": stub.api_url})
    engine = Engine.open(settings)
    engine.track(str(repo.path), "hostile")
    app, _ = build_app(settings, engine, socket_mode=False, today=lambda: TODAY)
    shown = []
    for text in ("hostile range:zzz..HEAD", "hostile branch:nosuch"):
        response, name = dispatch(app, stub, text)
        ack = json.dumps(ack_body(response))
        shown.append(ack if "has no" in ack else read(answer(stub, name)))
    print(shown)
    assert "its tags (newest first) `x\u02cb_it_\u02cby`; branches `main`, `q\u02cb_b_\u02cbr`." in shown[0]
    assert "its branches are `main`, `q\u02cb_b_\u02cbr`." in shown[1]
    for text in shown:
        assert "x`_it_`y" not in text and "q`_b_`r" not in text


def test_slack_by_org_shows_share_and_sums(bot, stub):
    _, name = dispatch(bot, stub, "web by:org")
    shown = read(answer(stub, name))
    assert "*By organization*" in shown
    # Ann (with her mailmapped gmail address): 2022-06-01, 10-01, 12-01, 2023-03-01 -> 4 of 10 person-days
    assert "1. `Intel` — 2GAD 8 · 40.0 % · 1 developer · 5 commits" in shown
    assert "`independent` — 2GAD 2 · 10.0 % · 1 developer · 1 commit" in shown
    assert "organizations: the registrable domain" in shown


def test_slack_compare_reads_as_a_table_and_attaches_every_column(bot, stub):
    _, name = dispatch(bot, stub, "compare web lib lib:drivers/gpu format:csv")
    message = answer(stub, name)
    assert message["text"].startswith("Side by side: web, lib, lib:drivers/gpu (all history): web 2GAD 20; lib 2GAD 4; "
                                      "lib:drivers/gpu 2GAD 2")
    shown = read(message)
    assert "*2GAD person-days*\n20" in shown and "*busiest month*\n2021-05 (2GAD 2)" in shown
    assert "seed study" not in shown and "person-months" not in shown  # COCOMO's words only with vs:cocomo
    cards = [b for b in message["blocks"] if b.get("fields")]
    assert [c["text"]["text"] for c in cards] == ["*1.* `web`", "*2.* `lib`", "*3.* `lib:drivers/gpu`"]
    (upload,) = stub.uploaded_files()
    lines = upload.data.decode().splitlines()
    assert lines[0].startswith("item,repositories,active_days,two_gad,two_gad_person_months,developers,commits,")
    assert lines[3].startswith("lib:drivers/gpu,lib,1,2,0.11,1,1,2021-05-05,2021-05-05,")


def test_slack_compare_limits_and_share(bot, stub):
    response, _ = dispatch(bot, stub, "compare " + " ".join(f"r{i}" for i in range(11)))
    assert "`compare` takes up to 10 items and 11 were given" in json.dumps(ack_body(response))
    _, name = dispatch(bot, stub, "compare web lib")
    private = answer(stub, name)
    (button,) = [e for b in private["blocks"] if b["type"] == "actions" for e in b["elements"]]
    url = stub.response_url("share")
    body, headers = signed_interaction(SECRET, block_actions_payload("gad_share", button["value"], response_url=url))
    bot.dispatch(BoltRequest(body=body.decode(), headers={k.lower(): v for k, v in headers.items()}))
    replaced, message = stub.wait_for_response("share", count=2, timeout=10)
    # a compare answer's private copy is replaced too (without its button), then everyone sees the same cards
    assert replaced["replace_original"] is True and "gad_share" not in json.dumps(replaced)
    assert message["response_type"] == "in_channel" and "Shared by <@U123>" in read(message)
    assert [b for b in message["blocks"] if b["type"] == "section"] == \
        [b for b in private["blocks"] if b["type"] == "section"]


# -- the CLI, as a process ------------------------------------------------------------------------------

@pytest.fixture
def cli_data(tmp_path):
    build_web(tmp_path / "web")
    rules = tmp_path / "orgs.txt"
    rules.write_text("collabora.com Collabora\n")
    data = tmp_path / "data"
    result = run("track", str(tmp_path / "web"), "--name", "web", data=data)
    assert result.returncode == 0, result.stderr
    return data, {"GAD_ORG_FILE": str(rules)}


def test_cli_range_json_and_csv(cli_data):
    data, env = cli_data
    doc = json.loads(run("report", "web", "range:v1.0..v2.0", "--json", data=data, env=env).stdout)
    assert (doc["active_days"], doc["range"], doc["first_day"], doc["last_day"]) == (6, "v1.0..v2.0", "2022-07-10",
                                                                                        "2022-12-01")
    text = run("report", "web", "range:..v1.0", data=data, env=env).stdout
    assert " ".join(text.split("\n\n")[0].split()) == ("web: 2GAD 4 person-days, range ..v1.0: up to v1.0 (2022-09-01); "
                                                      "its commits span 3.1 months")
    assert max(map(len, text.splitlines())) <= 80  # a plain terminal's width (issue 33)
    assert "range:..v1.0 (what git log v1.0 lists)" not in text and "(what git log v1.0 lists)" in " ".join(text.split())
    doc = json.loads(run("report", "web", "range:v1.0..v2.0", "--json", data=data, env=env).stdout)
    assert (doc["range_start_day"], doc["range_end_day"], doc["range_interval_days"], doc["range_older_commits"]) == (
        "2022-09-01", "2022-12-01", 91, 2)


def test_cli_by_org_csv_has_share(cli_data):
    data, env = cli_data
    lines = run("report", "web", "by:org", "--csv", data=data, env=env).stdout.splitlines()
    assert lines[0] == ("org,active_days,two_gad,developers,commits,share_percent,repositories_asked,repositories,"
                        "since,until,scope,range,paths,exclude_paths,authors,orgs,mailmap,bots,coauthors,hint")
    context = ",web,web,,,default,,,,,,on,off,off,"
    assert lines[1] == "intel.com,4,8,1,5,40.00" + context
    assert "Collabora,2,4,1,2,20.00" + context in lines and lines[-1] == "TOTAL,10,20,6,11,100.00" + context


def test_cli_orgs_lists_unmatched_domains_first(cli_data):
    data, env = cli_data
    result = run("orgs", "web", data=data, env=env)
    assert result.returncode == 0, result.stderr
    out = result.stdout.splitlines()
    start = next(i for i, line in enumerate(out) if line.startswith("──"))
    end = next(i for i, line in enumerate(out) if " domains: " in line)
    lines = [line for line in out[start + 1:end] if line.strip()]  # a blank line parts unmatched from matched
    assert lines[-1].split()[:3] == ["collabora.com", "Collabora", "domain"]  # matched: last
    assert lines[0].split()[:2] == ["intel.com", "intel.com"]  # unmatched, largest first
    rows = json.loads(run("orgs", "web", "--json", data=data, env=env).stdout)
    assert [r["matched"] for r in rows] == [False] * (len(rows) - 1) + [True]


def test_cli_orgs_csv_escapes_formulas_in_domains(tmp_path):
    """Issue 22: `gad-bot orgs --csv` wrote `=1+6.com` as it came from a commit's e-mail; a
    spreadsheet runs such a cell. Every CSV escapes a leading = + - @ with an apostrophe."""
    import csv
    import io

    repo = RepoBuilder(tmp_path / "hostile")
    for i, email in enumerate(["mal@=1+6.com", "m2@+1+6.com", "m3@-1+6.com", "m4@@sum.com", "ok@plain.org"]):
        repo.commit(name=f"P{i}", email=email, date=f"2024-02-0{i + 1}")
    data = tmp_path / "data"
    assert run("track", str(repo.path), "--name", "hostile", data=data).returncode == 0
    result = run("orgs", "hostile", "--csv", data=data)
    assert result.returncode == 0, result.stderr
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    domains = {row["domain"] for row in rows}
    assert {"'=1+6.com", "'+1+6.com", "'-1+6.com", "plain.org"} <= domains, domains
    live = [value for row in rows for value in row.values() if value[:1] in ("=", "+", "-", "@")]
    assert live == []


def test_cli_compare_json(cli_data):
    data, env = cli_data
    result = run("compare", "web", "web:src", "since:2022-09", "--json", data=data, env=env)
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)["compare"]
    assert [(r["item"], r["active_days"]) for r in rows] == [("web", 7), ("web:src", 4)]


def test_help_samples_are_real_answers_on_the_readme_demo_history(tmp_path):
    """`help` shows what range:, by:org and compare answer on the README's demo history: regenerate it and ask."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
    import synth

    from bot.engine.query import parse_command
    from bot.render import blocks as kit
    from bot.render.compare import compare_blocks
    from bot.render.words import SAMPLE_ANSWERS

    synth.generate(tmp_path / "s20k.git", 20000, 1)
    engine = Engine.open(Settings.from_env({"GAD_DATA_DIR": str(tmp_path / "data")}))
    engine.track(str(tmp_path / "s20k.git"), "demo", paths=True)
    (range_text, range_answer), (org_text, org_answer), (compare_text, compare_answer) = SAMPLE_ANSWERS
    assert kit.report_blocks(engine.report(parse_command(range_text, TODAY).query, TODAY), range_text)[0] == range_answer
    _, blocks = kit.report_blocks(engine.report(parse_command(org_text, TODAY).query, TODAY), org_text)
    assert org_answer in json.dumps(blocks, ensure_ascii=False)
    result = engine.compare(parse_command(compare_text, TODAY), TODAY)
    said = " · ".join(f"{r.item} 2GAD {r.two_gad} ({r.two_gad_person_months:.1f} person-months), "
                      f"{r.totals.developers} developers" for r in result.rows)
    assert said == compare_answer
    assert compare_blocks(result, compare_text)[1]


def test_slack_vs_fte_shows_the_model_beside_2gad_and_how_they_differ(bot, stub, tmp_path):
    # the model by hand over git's own records: per person and half-year, min(6, 6 d / 12)
    from tests.test_estimation import git_records

    pairs = {(p, d) for p, d, _ in git_records(RepoBuilder(tmp_path / "web"), "--branches", "--tags")}
    halves: dict = {}
    for person, day in pairs:
        half = (person, day[:4], int(day[5:7]) > 6)
        halves[half] = halves.get(half, 0) + 1
    model = sum(min(6, 6 * d / 12) for d in halves.values())
    _, name = dispatch(bot, stub, "web vs:fte")
    shown = " ".join(read(answer(stub, name)).split())
    assert (f"FTE model (Robles et al., t = 12): {model:,.1f} person-months beside 2GAD's "
            f"{2 * len(pairs) / 19:,.1f}") in shown
    assert "it gives occasional contributors more than 2GAD" in shown and "and full-timers less" in shown
