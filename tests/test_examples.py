"""Help's and the App Home's examples name what is tracked here (bot/engine/examples.py), and each of them
answers; with nothing tracked the generic examples stay and say how to track a repository (issue 20, part 2)."""

from __future__ import annotations

import pytest

from bot.engine import query as q
from bot.engine.examples import Tracked, examples, tracked
from bot.render import help_blocks, home_view, render_help_text
from tests.conftest import TODAY
from tests.gitbuild import RepoBuilder
from tests.slackstub import text_objects
from tests.test_cli import run


@pytest.fixture
def site(engine, tmp_path):
    """web: 3 commits, releases v1.9 < v1.10 (a version order that sorting by name gets wrong), plus tags that are no
    release; api: 1 commit; the project suite counts both."""
    web, api = RepoBuilder(tmp_path / "web"), RepoBuilder(tmp_path / "api")
    first = web.commit(email="ann@example.com", date="2024-01-02", files={"src/a.c": "1"})
    second = web.commit(email="bob@example.com", date="2024-02-03", files={"src/a.c": "2"})
    web.commit(email="ann@example.com", date="2024-03-04", files={"docs/x.md": "3"})
    web.tag("v1.10", second)
    web.tag("v1.9", first)
    web.tag("release-notes", second)  # no digit: not a version
    web.tag("v2.0-rc1", second)  # a pre-release, not a release
    web.tag("release-99.0", first)  # another family of tags: sorts after v* but is no newer
    api.commit(email="di@example.com", date="2024-01-05")
    engine.track(str(web.path), "web")
    engine.track(str(api.path), "api")
    engine.project_add("suite", ["web", "api"])
    return engine


def test_what_is_tracked_largest_first_with_its_two_newest_versions(site):
    assert tracked(site.index) == Tracked(repos=("web", "api"), projects=("suite",), tags=("v1.9", "v1.10"))


def test_every_example_names_what_is_tracked_and_answers(site):
    shown = examples(tracked(site.index))
    assert shown[0] == "web by:year"
    assert "web range:v1.9..v1.10" in shown and "suite by:repo" in shown and "compare web api" in shown
    for text in shown:
        parsed = q.parse_command(text, TODAY)
        if isinstance(parsed, q.ShowReport):
            assert site.report(parsed.query, TODAY).repos, text  # no "unknown repository", no refused token
        elif isinstance(parsed, q.Compare):
            assert len(site.compare(parsed, TODAY).rows) == 2, text
        else:
            assert isinstance(parsed, q.Subscribe) and parsed.repos == ("web",), text
    assert site.report(q.parse_query("web range:v1.9..v1.10".split(), TODAY), TODAY).totals.active_days == 1  # bob
    # the first example is all history: figures even for a repository quiet for years (3 commits on 3 days)
    assert site.report(q.parse_query(shown[0].split(), TODAY), TODAY).totals.active_days == 3


def test_one_repository_without_tags_gets_no_range_or_compare(engine, tmp_path):
    solo = RepoBuilder(tmp_path / "solo")
    solo.commit(email="ann@example.com", date="2024-01-02")
    engine.track(str(solo.path), "solo")
    shown = examples(tracked(engine.index))
    assert all(e.split()[0] in ("solo", "subscribe") for e in shown), shown
    assert not any("range:" in e or e.startswith("compare") for e in shown)


def test_nothing_tracked_keeps_the_generic_examples_and_says_how_to_track(engine):
    assert tracked(engine.index) is None and examples(None) == q.EXAMPLES
    _, blocks = help_blocks(None)
    slack = "\n".join(o["text"] for o in text_objects(blocks))
    assert "`/gad gstreamer/gstreamer since:2024-01`" in slack
    assert "Nothing is tracked yet, so these examples name made-up repositories; `/gad track URL` tracks one." in slack
    home = "\n".join(o["text"] for o in text_objects(home_view([], is_admin=False)["blocks"]))
    assert "e.g. `/gad gstreamer/gstreamer since:2024-01`" in home and "Nothing is tracked yet." in home


def test_help_and_home_name_the_tracked_repositories(site):
    found = tracked(site.index)
    _, blocks = help_blocks(found)
    slack = "\n".join(o["text"] for o in text_objects(blocks))
    assert "`/gad web range:v1.9..v1.10`" in slack and "gstreamer" not in slack and "Nothing is tracked" not in slack
    home = "\n".join(o["text"] for o in text_objects(home_view([], is_admin=False, found=found)["blocks"]))
    assert "e.g. `/gad web by:year`" in home
    terminal = render_help_text((), found)
    assert "  gad-bot report web by:year\n" in terminal and "  gad-bot compare web api\n" in terminal


def test_cli_help_names_the_tracked_repository(tmp_path):
    repo = RepoBuilder(tmp_path / "proj")
    repo.commit(email="ann@example.com", date="2024-01-02")
    data = tmp_path / "data"
    assert run("help", data=data).stdout.count("Nothing is tracked yet") == 1  # and help created nothing
    assert not data.exists()
    assert run("track", str(repo.path), data=data).returncode == 0
    out = run("help", data=data).stdout
    assert "gad-bot report proj by:year" in out and "gstreamer" not in out and "Nothing is tracked" not in out


def test_two_releases_on_one_commit_make_no_range():
    from bot.engine.examples import _releases

    one, two = b"\x01" * 20, b"\x02" * 20
    assert _releases({"refs/tags/v1.0": one, "refs/tags/v2.0": two, "refs/tags/v2.0.0": two}) == ("v1.0", "v2.0.0")
    assert _releases({"refs/tags/v2.0": two, "refs/tags/v2.0.0": two}) is None  # git would list nothing
    assert _releases({"refs/tags/v1.0": one, "refs/heads/v2.0": two}) is None  # branches are not releases


# -- refusals whose example names a repository name a tracked one too ----------------------------------


def test_report_help_and_a_query_without_a_repository_name_the_tracked_one(tmp_path):
    """`gad-bot report --help` and "Name at least one repository, e.g. ..." named `gstreamer/gstreamer` on a
    gad-bot that tracks `proj` only; with nothing tracked they keep the generic example and create no index."""
    data = tmp_path / "data"
    untracked = run("report", "since:2024", data=data)
    assert untracked.returncode == 2 and "e.g. `gstreamer/gstreamer since:2024-01`" in untracked.stderr
    assert "gad-bot report gstreamer/gstreamer since:2024-01" in run("report", "--help", data=data).stdout
    assert not data.exists()  # neither the refusal nor --help created an index to find out
    repo = RepoBuilder(tmp_path / "proj")
    repo.commit(email="ann@example.com", date="2024-01-02")
    assert run("track", str(repo.path), data=data).returncode == 0
    shown = run("report", "--help", data=data).stdout
    assert "  gad-bot report proj by:year\n" in shown and "gstreamer" not in shown and "myrepo" not in shown
    refused = run("report", "since:2024", data=data)
    assert refused.returncode == 2
    assert refused.stderr.strip() == ("gad-bot: Name at least one repository, e.g. `proj by:year`; "
                                      "`gad-bot repos` lists them.")


def test_slack_refusals_whose_example_names_a_repository_name_a_tracked_one(tmp_path):
    """Every refusal that shows a repository as an example (a report, compare, subscribe, untrack, unsubscribe
    without a name) names one tracked here, through the slash command's real path."""
    from tests.test_surfaces import Bot, read
    from tests.slackstub import SlackStub

    with SlackStub() as stub:
        bot = Bot(tmp_path, stub)  # tracks web (9 commits) and api (2)
        # a refusal is given in the ack, which never waits on Slack: until Slack has said who asks, its example is
        # a made-up name (a real one may be one the person may not see) ...
        cold = read(bot.slash("since:2024")[0]).removeprefix(":warning: ")
        assert cold == "Name at least one repository, e.g. `gstreamer/gstreamer since:2024-01`; `/gad repos` lists them."
        bot.ask("repos")  # ... and once it has (for GAD_MEMBERSHIP_CACHE_SECONDS), one they may see
        said = {text: read(bot.slash(text)[0]).removeprefix(":warning: ") for text in
                ("since:2024", "compare web", "subscribe day:mon", "untrack", "unsubscribe")}
    assert said["since:2024"] == "Name at least one repository, e.g. `web by:year`; `/gad repos` lists them."
    assert said["compare web"] == "Name at least two things to compare, e.g. `compare web api since:2023`."
    assert said["subscribe day:mon"] == ("Name the repositories to subscribe to, e.g. "
                                         "`/gad subscribe web day:mon time:9am`.")
    assert said["untrack"] == "Name one repository to untrack, e.g. `untrack web`."
    assert said["unsubscribe"] == "Name the repositories to unsubscribe from, or `all`, e.g. `unsubscribe web`."
    for text in said.values():
        assert not any(made_up in text for made_up in ("gstreamer", "myrepo", "mesa", "linux")), text


def test_releases_in_the_examples_are_by_releases_own_openssh_style_included(tmp_path):
    """With openssh-portable tracked, help offered no `range:` and no `by:release` example: its releases
    (V_10_4_P1, V_10_5_P1) failed the examples' own narrower idea of a release (`v1.2` only). The examples now take
    releases as by:release does (marker tags and pre-releases left out), from the family of tags most used."""
    from tests.test_release_order import build_portable

    portable = build_portable(tmp_path / "portable")
    portable.tag("V_3_9_P1-rc1", portable.commit(name="Ben", email="ben@example.org", date="2004-03-01"))
    data = tmp_path / "data"
    assert run("track", str(portable.path), "--name", "openssh", data=data).returncode == 0
    shown = run("help", data=data).stdout
    assert "  gad-bot report openssh range:V_3_7_1_P1..V_3_8_P1\n" in shown
    assert "  gad-bot report openssh by:release\n" in shown
    assert "PRE_IPV6" not in shown and "KRB" not in shown and "rc1" not in shown


def test_the_family_of_tags_most_used_gives_the_range():
    from bot.engine.examples import _releases

    one, two, three = b"\x01" * 20, b"\x02" * 20, b"\x03" * 20
    tips = {"refs/tags/V_9_4_P1": one, "refs/tags/V_9_5_P1": two, "refs/tags/release-99.0": three,
            "refs/tags/POST_KRB4_REMOVAL": three}
    assert _releases(tips) == ("V_9_4_P1", "V_9_5_P1")  # release-99.0 is another family: no newer for it


def test_sample_answers_in_help_say_they_are_of_the_demo_history_not_something_tracked(tmp_path):
    """/gad help showed "`/gad demo range:v2.0..v3.0`" under the tracked examples, as a command to copy, on a gad-bot
    that tracks no `demo`: copied, it answers 'unknown repository'. The sample answers say whose figures they are
    (true whether or not a `demo` is tracked, as the README suggests)."""
    from tests.slackstub import SlackStub
    from tests.test_surfaces import Bot, read

    with SlackStub() as stub:
        shown = read(Bot(tmp_path, stub).ask("help"))
    title = "What estimation answers look like on the README's demo history (benchmarks/synth.py)"
    assert f"*{title}*" in shown and f"{title}:" in render_help_text((), None)
