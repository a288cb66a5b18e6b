"""`gad-bot calibrate` (issue 19 part 3): a timesheet worked out by hand against a history built in code.

The history (repository `team`, a .mailmap folding ann@old.example into ann@corp.com):

    Ann Lee <ann@corp.com>     2024-02-28 (before the timesheet), 03-04, 03-05 (two commits), 03-07, 04-02
    Ann Lee <ann@old.example>  03-06 (the mailmap makes it ann@corp.com)
    Bob Stone <BOB@corp.com>   03-04, 04-01, 04-03 (lower-cased: bob@corp.com)
    Cy <cy@corp.com>           03-15 (not in the timesheet)
    Erin <erin@corp.com>       2024-01-10 only (in the timesheet, no commit in its span)
    Dee <dee@corp.com>         2024-05-20 (after the timesheet's span: not listed)
    dependabot[bot]            03-10 (a bot: not a person)

The timesheet (TIMESHEET below) spans 2024-03-04 to 2024-04-04:

    Ann  March: 8 h on 03-04, 03-05 (two task rows, 5 + 3), 03-06 (as ANN@old.example), 03-07, 03-08,
                03-11, 03-12, 03-13: 8 days x 8 h = 64 h = 8.0 person-days
         active days in March: 03-04, 03-05, 03-06, 03-07 = 4 -> 2GAD 8
         April: 8 h on 04-01, 6 h on 04-02 (4 + 2) = 14 h = 1.75 person-days; active 04-02 -> 2GAD 2
    Bob  March: 8 h on 03-04 = 1.0; active 03-04 -> 2GAD 2
         April: 8 h on 04-01, 04-02, 04-03, 04-04 = 4.0; active 04-01, 04-03 -> 2GAD 4
    Pat  (pm@corp.com) 8 h on 03-04: no committer has that e-mail -> listed apart, 1.0 person-days
    Erin 8 h on 03-05: a committer, but not in the span -> listed apart, 1.0 person-days

    March: logged 8.0 + 1.0 = 9.0, 2GAD 8 + 2 = 10, ratio 10 / 9 = 1.111, error +11.1 %: outside 10 %
    April: logged 1.75 + 4.0 = 5.75, 2GAD 2 + 4 = 6, ratio 1.0435, error +4.35 %: within
    Total: logged 14.75, 2GAD 16, ratio 1.0847, error +8.47 %: within
    Committers the timesheet does not list: cy@corp.com, 2GAD 2 (one day in the span).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from bot.engine.timesheets import MAX_BYTES, TimesheetError, read_timesheet
from tests.gitbuild import RepoBuilder, git_env, oracle_pairs

ROOT = Path(__file__).resolve().parent.parent

TIMESHEET = """Email,Date,Task,Hours
ann@corp.com,2024-03-04,code,8
ann@corp.com,2024-03-05,code,5
ann@corp.com,2024-03-05,review,3
ANN@old.example,2024-03-06,code,8
ann@corp.com,2024-03-07,code,8
ann@corp.com,2024-03-08,code,8
ann@corp.com,2024-03-11,code,8
ann@corp.com,2024-03-12,code,8
ann@corp.com,2024-03-13,code,8
ann@corp.com,2024-04-01,code,8
ann@corp.com,2024-04-02,code,4
ann@corp.com,2024-04-02,review,2
bob@corp.com,2024-03-04,code,8
bob@corp.com,2024-04-01,code,8
bob@corp.com,2024-04-02,code,8
bob@corp.com,2024-04-03,code,8
bob@corp.com,2024-04-04,code,8
pm@corp.com,2024-03-04,planning,8
erin@corp.com,2024-03-05,code,8
"""

# The same hours as Harvest's detailed time report writes them (its real header), people by name.
HARVEST_HEADER = ("Date,Client,Project,Project Code,Task,Notes,Hours,Hours Rounded,Billable?,Invoiced?,Approved?,"
                  "First Name,Last Name,Roles,Employee?,Billable Rate,Billable Amount,Cost Rate,Cost Amount,Currency,"
                  "External Reference URL")
NAMES = {"ann@corp.com": ("Ann", "Lee"), "ann@old.example": ("Ann", "Lee"), "bob@corp.com": ("Bob", "Stone"),
         "pm@corp.com": ("Pat", "Manager"), "erin@corp.com": ("Erin", "Ng")}


def harvest_sheet() -> str:
    lines = [HARVEST_HEADER]
    for row in TIMESHEET.splitlines()[1:]:
        email, day, task, hours = row.split(",")
        first, last = NAMES[email.lower()]
        lines.append(f"{day},Acme,Web,,{task},,{hours},{hours},Yes,No,No,{first},{last},,Yes,0,0,0,0,USD,")
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def team(tmp_path_factory):
    b = RepoBuilder(tmp_path_factory.mktemp("calibrate") / "team")
    b.commit(name="Ann Lee", email="ann@corp.com", date="2024-02-28",
             files={".mailmap": "Ann Lee <ann@corp.com> <ann@old.example>\n"})
    for day in ("2024-03-04", "2024-03-05T09:00", "2024-03-05T17:00", "2024-03-07", "2024-04-02"):
        b.commit(name="Ann Lee", email="ann@corp.com", date=day)
    b.commit(name="Ann Lee", email="ann@old.example", date="2024-03-06")
    for day in ("2024-03-04", "2024-04-01", "2024-04-03"):
        b.commit(name="Bob Stone", email="BOB@corp.com", date=day, offset=-300)
    b.commit("feature", name="Cy", email="cy@corp.com", date="2024-03-15")
    b.commit(name="Erin Ng", email="erin@corp.com", date="2024-01-10")
    b.commit(name="Dee", email="dee@corp.com", date="2024-05-20")
    b.commit(name="dependabot[bot]", email="49699333+dependabot[bot]@users.noreply.github.com", date="2024-03-10")
    return b


def invoke(tmp_path, *args: str):
    from bot.faces.cli import cli

    return CliRunner().invoke(cli, ["calibrate", *args], env={"GAD_DATA_DIR": str(tmp_path / "data")})


def sheet(tmp_path, text: str, name: str = "hours.csv") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


# -- the hand-worked figures ------------------------------------------------------------------


def test_figures_worked_out_by_hand_and_by_git(team, tmp_path):
    result = invoke(tmp_path, sheet(tmp_path, TIMESHEET), str(team.path), "--json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert (out["first_day"], out["last_day"]) == ("2024-03-04", "2024-04-04")
    months = {m["period"]: m for m in out["months"]}
    assert (months["2024-03"]["logged_person_days"], months["2024-03"]["two_gad"]) == (9.0, 10)
    assert (months["2024-03"]["ratio"], months["2024-03"]["error_percent"], months["2024-03"]["within"]) == (
        1.1111, 11.11, False)
    assert (months["2024-04"]["logged_person_days"], months["2024-04"]["two_gad"]) == (5.75, 6)
    assert (months["2024-04"]["error_percent"], months["2024-04"]["within"]) == (4.35, True)
    total = out["total"]
    assert (total["logged_person_days"], total["two_gad"], total["ratio"], total["error_percent"], total["within"]) == (
        14.75, 16, 1.0847, 8.47, True)
    assert out["compared"] == ["ann@corp.com", "bob@corp.com"]
    apart = {p["person"]: (p["logged_person_days"], p["why"]) for p in out["timesheet_only"]}
    assert apart == {"pm@corp.com": (1.0, "is no committer's e-mail here"),
                     "erin@corp.com": (1.0, "no commit in the span")}
    assert [(p["person"], p["two_gad"]) for p in out["commits_only"]] == [("cy@corp.com", 2)]
    # git agrees: the compared people's distinct (person, day) pairs within the span, doubled
    pairs = {(p.decode(), d.decode()) for p, d in oracle_pairs(team.path)}
    in_span = {(p, d) for p, d in pairs if "2024-03-04" <= d <= "2024-04-04"}
    assert 2 * len({(p, d) for p, d in in_span if p in ("ann@corp.com", "bob@corp.com")}) == total["two_gad"]
    assert {p for p, _ in in_span} - {"ann@corp.com", "bob@corp.com"} == {"cy@corp.com"}


def test_text_says_the_verdict_and_lists_both_sides_apart(team, tmp_path):
    result = invoke(tmp_path, sheet(tmp_path, TIMESHEET), str(team.path))
    assert result.exit_code == 0, result.output
    text = result.stdout
    assert ("2GAD 16 person-days against 14.75 logged (8 hours a day) for 2 people: ratio 1.08, 8.5 % above the "
            "timesheet, within the study's 10 %.") in " ".join(text.split())
    assert "2024-03" in text and "+11.1 %" in text and "+4.3 %" in text
    for who in ("pm@corp.com", "erin@corp.com", "cy@corp.com"):
        assert who in text


def test_names_from_harvest_match_raw_author_names(team, tmp_path):
    """Harvest writes First Name and Last Name, no e-mail: matched to the authors' names, mailmapped."""
    result = invoke(tmp_path, sheet(tmp_path, harvest_sheet()), str(team.path), "--json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["export"] == "Harvest detailed time report"
    assert (out["total"]["logged_person_days"], out["total"]["two_gad"]) == (14.75, 16)
    apart = {p["person"]: p["why"] for p in out["timesheet_only"]}
    # a name that matches a committer is that committer, named by e-mail from there on
    assert apart == {"Pat Manager": "matches no committer by name", "erin@corp.com": "no commit in the span"}


def test_a_name_two_committers_share_is_listed_apart_not_guessed(tmp_path):
    b = RepoBuilder(tmp_path / "sams")
    b.commit(name="Sam", email="sam@a.example", date="2024-03-04")
    b.commit(name="Sam", email="sam@b.example", date="2024-03-05")
    result = invoke(tmp_path, sheet(tmp_path, "Person,Date,Hours\nSam,2024-03-04,8\n"), str(b.path), "--json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["timesheet_only"] == [{"person": "Sam", "logged_person_days": 1.0, "two_gad": 0,
                                      "why": "is the name of sam@a.example and sam@b.example; log e-mails to "
                                             "tell them apart"}]
    assert out["total"]["ratio"] is None


def test_an_address_the_mailmap_gives_to_two_people_is_listed_apart(tmp_path):
    b = RepoBuilder(tmp_path / "shared")
    b.commit(name="Alice", email="team@shared.example", date="2024-03-04",
             files={".mailmap": "A <alice@corp.example> Alice <team@shared.example>\n"
                                "B <bob@corp.example> Bob <team@shared.example>\n"})
    b.commit(name="Bob", email="team@shared.example", date="2024-03-05")
    result = invoke(tmp_path, sheet(tmp_path, "Email,Date,Hours\nteam@shared.example,2024-03-04,8\n"), str(b.path),
                    "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["timesheet_only"][0]["why"] == (
        "the mailmap gives this e-mail to alice@corp.example and bob@corp.example")


def test_hours_per_day_outside_a_day_is_one_sentence(team, tmp_path):
    result = invoke(tmp_path, sheet(tmp_path, TIMESHEET), str(team.path), "--hours-per-day", "0.5")
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.strip() == ("gad-bot: --hours-per-day 0.5 is not a working day; give the hours a logged "
                                     "person-day holds, between 1 and 24 (8 by default).")


def test_a_name_is_found_as_the_mailmap_names_the_person(tmp_path):
    b = RepoBuilder(tmp_path / "home")
    b.commit(name="ann", email="ann@home.example", date="2024-03-04",
             files={".mailmap": "Ann Lee <ann@corp.com> <ann@home.example>\n"})
    text = sheet(tmp_path, "Person,Date,Hours\nAnn  Lee,2024-03-04,8\n")
    mapped = json.loads(invoke(tmp_path, text, str(b.path), "--json").stdout)
    assert (mapped["compared"], mapped["total"]["two_gad"], mapped["total"]["ratio"]) == (["ann@corp.com"], 2, 2.0)
    unmapped = json.loads(invoke(tmp_path, text, "home", "mailmap:off", "--json").stdout)
    long_days = " ".join(invoke(tmp_path, text, "home", "--hours-per-day", "16").stdout.split())
    assert ("2GAD 2 person-days against 0.50 logged (16 hours a day) for 1 person: ratio 4.00, 300.0 % above the "
            "timesheet, outside the study's 10 %.") in long_days
    exact = invoke(tmp_path, sheet(tmp_path, "Person,Date,Hours\nAnn Lee,2024-03-04,8\nAnn Lee,2024-03-05,8\n",
                                   "two.csv"), "home")
    assert "ratio 1.00, equal to the timesheet, within the study's 10 %." in " ".join(exact.stdout.split())
    assert unmapped["timesheet_only"][0]["why"] == "matches no committer by name"
    assert unmapped["commits_only"][0]["person"] == "ann@home.example"


def test_tokens_narrow_the_span_and_the_hours_per_day_is_an_option(team, tmp_path):
    # until:2024-03 keeps March only: logged 9.0 person-days of 8 h = 72 h, i.e. 12.0 of 6 h; 2GAD 10
    result = invoke(tmp_path, sheet(tmp_path, TIMESHEET), str(team.path), "until:2024-03", "--hours-per-day", "6",
                    "--json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert [m["period"] for m in out["months"]] == ["2024-03"]
    assert (out["total"]["logged_person_days"], out["total"]["two_gad"], out["hours_per_day"]) == (12.0, 10, 6.0)
    assert out["commits_only"] == [{"person": "cy@corp.com", "logged_person_days": 0.0, "two_gad": 2,
                                    "why": "not in the timesheet"}]


def test_a_span_of_too_many_months_is_refused_and_since_until_bring_it_in(team, tmp_path):
    text = sheet(tmp_path, "Email,Date,Hours\nann@corp.com,1970-01-02,8\nann@corp.com,2024-03-04,8\n")
    refused = invoke(tmp_path, text, str(team.path))
    assert refused.exit_code == 2 and refused.stdout == ""
    assert refused.stderr.strip() == ("gad-bot: the timesheet spans 651 months (1970-01-02 to 2024-03-04); calibrate "
                                      "at most 120 at a time, e.g. with since:2023 until:2024.")
    narrowed = invoke(tmp_path, text, str(team.path), "since:2024", "--json")
    assert narrowed.exit_code == 0, narrowed.output
    # the timesheet covers 1970-01-02 to 2024-03-04; since:2024 keeps 2024-01-01 to 2024-03-04 of it
    assert [m["period"] for m in json.loads(narrowed.stdout)["months"]] == ["2024-01", "2024-02", "2024-03"]


def test_csv_has_months_total_and_people_apart_and_no_formula_cells(team, tmp_path):
    text = TIMESHEET + "=cmd|' /C calc'!A0,2024-03-04,code,8\n"  # a name shaped like a formula
    result = invoke(tmp_path, sheet(tmp_path, text), str(team.path), "--csv")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == "kind,period,person,logged_person_days,two_gad,ratio,error_percent,within,why"
    assert lines[1] == "month,2024-03,,9.0,10,1.1111,11.11,no,"
    assert lines[2] == "month,2024-04,,5.75,6,1.0435,4.35,yes,"
    assert lines[3] == "total,TOTAL,,14.75,16,1.0847,8.47,yes,"
    apart = [line for line in lines if line.startswith("timesheet_only")]
    assert any(line.startswith("timesheet_only,,\"'=cmd") or line.startswith("timesheet_only,,'=cmd")
               for line in apart), apart
    assert "commits_only,,cy@corp.com,0.0,2,,,,not in the timesheet" in lines


def test_chart_is_a_png_of_both_curves(team, tmp_path):
    chart = tmp_path / "out" / "calibration.png"
    chart.parent.mkdir()
    result = invoke(tmp_path, sheet(tmp_path, TIMESHEET), str(team.path), "--chart", str(chart))
    assert result.exit_code == 0, result.output
    data = chart.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 2000
    assert [p.name for p in chart.parent.iterdir()] == ["calibration.png"]  # no temporary file left


def test_json_and_csv_together_are_refused(team, tmp_path):
    result = invoke(tmp_path, sheet(tmp_path, TIMESHEET), str(team.path), "--json", "--csv")
    assert result.exit_code == 2 and "two formats at once" in result.stderr


# -- bad rows: one sentence each, with line numbers, nothing computed ---------------------------


def test_every_bad_row_is_told_and_nothing_is_computed(team, tmp_path):
    text = ("Email,Date,Hours\n"
            "ann@corp.com,2024-03-04,8\n"
            "ann@corp.com,2024-02-30,8\n"        # line 3: no such day
            "ann@corp.com,yesterday,8\n"         # line 4: not a date
            "bob@corp.com,2024-03-04,-2\n"       # line 5: negative
            "bob@corp.com,2024-03-05,30\n"       # line 6: absurd
            "ann@corp.com,2024-03-04,8\n"        # line 7: line 2 again, exactly
            ",2024-03-06,8\n"                    # line 8: no person
            "bob@corp.com,2024-03-07,lots\n"     # line 9: not hours
            "bob@corp.com,2024-03-08\n")         # line 10: too few cells
    result = invoke(tmp_path, sheet(tmp_path, text), str(team.path))
    assert result.exit_code == 2
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert lines[0] == "gad-bot: the timesheet has 8 bad rows; nothing was computed. Fix them and run again:"
    told = "\n".join(lines[1:])
    for fragment in ("line 3: date '2024-02-30' is not a date", "line 4: date 'yesterday' is not a date",
                     "line 5: hours '-2' are negative", "line 6: 30 hours is more than a day holds",
                     "line 7 repeats line 2 exactly (a duplicated person-day row)", "line 8: no person in 'Email'",
                     "line 9: hours 'lots' are not a number", "line 10 has 2 cells, too few"):
        assert fragment in told
    assert "Traceback" not in result.stderr and "logged person-days" not in result.output
    assert not (tmp_path / "data").exists() or not list((tmp_path / "data").glob("*.sqlite*"))  # nothing written


def test_per_task_rows_are_summed_but_a_day_over_24_hours_is_an_error():
    summed = read_timesheet(b"Email,Date,Task,Hours\na@x.example,2024-03-04,one,5\na@x.example,2024-03-04,two,3\n")
    assert [(d.person, d.hours, d.lines) for d in summed.days] == [("a@x.example", 8.0, (2, 3))]
    with pytest.raises(TimesheetError, match=r"lines 2, 3 log 26 hours for a@x.example on 2024-03-04"):
        read_timesheet(b"Email,Date,Task,Hours\na@x.example,2024-03-04,one,16\nA@x.example,2024-03-04,two,10\n")


def test_errors_are_bounded_to_twenty_and_a_count():
    rows = "".join(f"a@x.example,not-a-date-{i},8\n" for i in range(25))
    with pytest.raises(TimesheetError) as caught:
        read_timesheet(("Email,Date,Hours\n" + rows).encode())
    text = str(caught.value)
    assert text.count("is not a date") == 20 and text.rstrip().endswith("and 5 more.")
    assert "line 2:" in text and "line 21:" in text and "line 22:" not in text


def test_missing_columns_and_unknown_exports_say_what_to_type():
    with pytest.raises(TimesheetError, match=r"not an export gad-bot knows .*`--columns 'person=HEADER"):
        read_timesheet(b"Who,When,Time\na@x.example,2024-03-04,8\n")
    sheet_ = read_timesheet(b"Who,When,Time\na@x.example,2024-03-04,8\n",
                            {"person": "who", "date": "When", "hours": "Time"})
    assert sheet_.export == "--columns" and sheet_.days[0].hours == 8.0
    with pytest.raises(TimesheetError, match=r"line 1 has no column hours='Duration'"):
        read_timesheet(b"Who,When,Time\n", {"person": "Who", "date": "When", "hours": "Duration"})


def test_hostile_files_are_bounded():
    with pytest.raises(TimesheetError, match="larger than 20 MiB"):
        read_timesheet(b"x" * (MAX_BYTES + 1))
    with pytest.raises(TimesheetError, match="more than 3 rows"):
        read_timesheet(b"Email,Date,Hours\n" + b"".join(b"a@x.example,2024-03-0%d,1\n" % i for i in range(1, 6)),
                       max_rows=3)
    with pytest.raises(TimesheetError, match="not UTF-8"):
        read_timesheet(b"Email,Date,Hours\n\xff\xfe,2024-03-04,8\n")
    escaped = read_timesheet(b"Person,Date,Hours\n\x1b[2J\x1b]0;owned\x07Eve,2024-03-04,8\n")
    assert escaped.days[0].person == "[2J]0;ownedEve"  # no terminal escape reaches the screen
    with pytest.raises(TimesheetError, match="longer than 1,000 characters"):
        read_timesheet(b"Email,Date,Hours\n" + b"a" * 5000 + b"@x.example,2024-03-04,8\n")


# -- the exports recognised, by their real headers ----------------------------------------------

EXPORTS = [
    ("Toggl Track detailed report",
     "User,Email,Client,Project,Task,Description,Billable,Start date,Start time,End date,End time,Duration,Tags,"
     "Amount ()",
     "Ann Lee,ann@corp.com,Acme,Web,,Login,No,2024-03-04,09:00:00,2024-03-04,16:30:00,07:30:00,,"),
    ("Clockify detailed report",
     "Project,Client,Description,Task,User,Group,Email,Tags,Billable,Start Date,Start Time,End Date,End Time,"
     "Duration (h),Duration (decimal),Billable Rate (USD),Billable Amount (USD)",
     "Web,Acme,Login,,Ann Lee,,ann@corp.com,,Yes,03/04/2024,09:00 AM,03/04/2024,04:30 PM,07:30:00,7.50,0,0"),
    ("Harvest detailed time report", HARVEST_HEADER,
     "2024-03-04,Acme,Web,,Code,,7.5,7.5,Yes,No,No,Ann,Lee,,Yes,0,0,0,0,USD,"),
    ("Jira Tempo worklogs",
     "Issue Key,Issue summary,Hours,Work date,Username,Full name,Period,Account Key,Account Name,Activity Name,"
     "Work Description",
     "WEB-1,Login,7.5,2024-03-04 00:00,alee,Ann Lee,,,,Development,Login form"),
    ("Kimai export",
     "Date,Begin,End,Duration,Currency,Price,Internal price,Hourly price,Fixed price,Name,User,Email,Customer,"
     "Project,Activity,Description,Billable,Tags",
     "04.03.2024,09:00,16:30,7:30,EUR,0,0,0,,Ann,alee,ann@corp.com,Acme,Web,Dev,Login,yes,"),
]


@pytest.mark.parametrize("export,header,row", EXPORTS, ids=[e[0] for e in EXPORTS])
def test_each_known_export_is_recognised_by_its_header(export, header, row):
    # Clockify's 03/04/2024 reads both ways (no day above 12): refused without --date-format (issue 33)
    read = read_timesheet(f"{header}\n{row}\n".encode(), date_format="%m/%d/%Y" if "/2024" in row else None)
    assert read.export == export
    [day] = read.days
    assert (day.day.isoformat(), day.hours) == ("2024-03-04", 7.5)
    assert (day.person, day.is_email) in (("ann@corp.com", True), ("Ann Lee", False))


def test_a_semicolon_export_with_a_byte_order_mark_and_decimal_commas():
    read = read_timesheet("\ufeffE-mail;Date;Begin;End;Duration\nann@corp.com;04.03.2024;09:00;16:30;7,5\n".encode())
    assert (read.export, read.days[0].hours, read.days[0].day.isoformat()) == ("Kimai export", 7.5, "2024-03-04")


def test_date_format_option_reads_day_first_slashes():
    read = read_timesheet(b"Email,Date,Hours\na@x.example,04/03/2024,8\n", date_format="%d/%m/%Y")
    assert read.days[0].day.isoformat() == "2024-03-04"


# -- once as a real process -------------------------------------------------------------------


def test_calibrate_as_a_real_process(team, tmp_path):
    env = {**git_env(), "GAD_DATA_DIR": str(tmp_path / "data"), "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "bot.faces.cli", "calibrate", sheet(tmp_path, TIMESHEET),
                           str(team.path), "--csv"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "total,TOTAL,,14.75,16,1.0847,8.47,yes," in done.stdout.splitlines()
    bad = subprocess.run([sys.executable, "-m", "bot.faces.cli", "calibrate",
                          sheet(tmp_path, "Email,Date,Hours\nann@corp.com,2024-03-04,-8\n", "bad.csv"), "team"],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and bad.stdout == ""
    assert "line 2: hours '-8' are negative." in bad.stderr and "Traceback" not in bad.stderr


def test_a_committer_missing_from_the_timesheet_who_looks_like_a_listed_person_is_pointed_at_the_mailmap(tmp_path):
    """On openssh-portable a Toggl sheet for djm@mindrot.org and dtucker@dtucker.net read 63 % below the timesheet:
    their commits as djm@openbsd.org and dtucker@openbsd.org (no mailmap entry) were listed as 'not in the
    timesheet', with nothing to say they are the same people. An unlisted committer whose address begins as a
    listed person's does, or whose commits carry a listed person's name, is pointed at that person and the
    mailmap; anyone else stays 'not in the timesheet'."""
    b = RepoBuilder(tmp_path / "portable")
    b.commit(name="Ann Lee", email="ann@corp.com", date="2024-03-04")
    b.commit(name="ann@upstream.org", email="ann@upstream.org", date="2024-03-05")  # an upstream sync's author
    b.commit(name="Bob Stone", email="bob@corp.com", date="2024-03-04")
    b.commit(name="Bob Stone", email="bstone@home.net", date="2024-03-06")
    b.commit(name="Cy", email="cy@corp.com", date="2024-03-07")
    hours = ("Email,Date,Hours\nann@corp.com,2024-03-04,8\nann@corp.com,2024-03-05,8\n"
             "bob@corp.com,2024-03-04,8\nbob@corp.com,2024-03-07,8\n")
    result = invoke(tmp_path, sheet(tmp_path, hours), str(b.path), "--json")
    assert result.exit_code == 0, result.output
    apart = {p["person"]: (p["two_gad"], p["why"]) for p in json.loads(result.stdout)["commits_only"]}
    assert apart == {
        "ann@upstream.org": (2, "not in the timesheet; the same person as ann@corp.com, whom it lists? "
                                "map both addresses to one in .mailmap"),
        "bstone@home.net": (2, "not in the timesheet; the same person as bob@corp.com, whom it lists? "
                               "map both addresses to one in .mailmap"),
        "cy@corp.com": (2, "not in the timesheet")}
    text = invoke(tmp_path, sheet(tmp_path, hours), str(b.path)).stdout
    assert "the same person as ann@corp.com, whom it lists?" in " ".join(text.split())


def test_committers_behind_a_name_the_timesheet_logs_but_two_committers_share_are_told_so(tmp_path):
    """A Harvest sheet (names only) for openssh-portable listed 'Damien Miller' apart as the name of djm@google.com
    and djm@mindrot.org, and then listed djm@mindrot.org as 'not in the timesheet', as if nobody had logged hours
    for him. Each committer behind such a name says which name the timesheet logs."""
    b = RepoBuilder(tmp_path / "sams")
    b.commit(name="Sam", email="sam@a.example", date="2024-03-04")
    b.commit(name="Sam", email="sam@b.example", date="2024-03-05")
    b.commit(name="Cy", email="cy@corp.com", date="2024-03-05")
    result = invoke(tmp_path, sheet(tmp_path, "Person,Date,Hours\nSam,2024-03-04,8\nSam,2024-03-05,8\n"), str(b.path),
                    "--json")
    assert result.exit_code == 0, result.output
    apart = {p["person"]: (p["two_gad"], p["why"]) for p in json.loads(result.stdout)["commits_only"]}
    assert apart == {
        "sam@a.example": (2, "not in the timesheet by e-mail; it logs Sam, the name of this committer and of "
                             "sam@b.example: log e-mails to tell them apart"),
        "sam@b.example": (2, "not in the timesheet by e-mail; it logs Sam, the name of this committer and of "
                             "sam@a.example: log e-mails to tell them apart"),
        "cy@corp.com": (2, "not in the timesheet")}


# -- calibrated figures (issue 33 part 3) -------------------------------------------------------
#
# From the hand-worked months above, logged person-days / 2GAD: March 9.0 / 10 = 0.9, April 5.75 / 6 = 0.958333;
# the whole span 14.75 / 16 = 0.921875. The band is the months' 25th to 75th percentile (linear interpolation):
# 0.9 + 0.25 x 0.058333 = 0.914583 and 0.9 + 0.75 x 0.058333 = 0.94375.

RATIO, LOW, HIGH = 14.75 / 16, 0.9 + 0.25 * (5.75 / 6 - 0.9), 0.9 + 0.75 * (5.75 / 6 - 0.9)


def _engine(tmp_path):
    from bot.config import Settings
    from bot.engine.engine import Engine

    return Engine.open(Settings.from_env({"GAD_DATA_DIR": str(tmp_path / "data")}))


def test_save_keeps_the_ratio_and_calibrated_name_shows_it_beside_the_figure(team, tmp_path):
    from bot.engine.calibrations import find
    from bot.render.csvout import report_to_csv
    from bot.render.jsonout import report_to_dict
    from bot.render.text import render_text
    from tests.test_estimation import ask, figures, git_records

    saved = invoke(tmp_path, sheet(tmp_path, TIMESHEET), str(team.path), "--save", "acme")
    assert saved.exit_code == 0, saved.output
    assert "saved as acme: logged person-days / 2GAD = 0.92 over 2 months (band 0.91-0.94" in saved.stderr
    engine = _engine(tmp_path)
    kept = find(engine.index, "acme")
    assert (kept.months, kept.people) == (2, 2)
    assert (round(kept.ratio, 6), round(kept.low, 6), round(kept.high, 6)) == (round(RATIO, 6), round(LOW, 6),
                                                                               round(HIGH, 6))
    plain = ask(engine, "team")
    assert plain.calibrated is None  # without calibrated: (and no default) nothing changes
    report = ask(engine, "team calibrated:acme")
    two_gad = 2 * figures(git_records(team, "--branches", "--tags"))[0]
    assert report.totals.two_gad == two_gad == 24
    c = report.calibrated
    assert (round(c.person_days, 4), tuple(round(v, 4) for v in c.band)) == (
        round(24 * RATIO, 4), (round(24 * LOW, 4), round(24 * HIGH, 4)))  # 22.125, 21.95-22.65
    assert ("Calibrated by acme (logged person-days / 2GAD = 0.92, measured over 2 months, 2024-03-04 to "
            "2024-04-04): 22 person-days (band 22-23") in " ".join(render_text(report).split())
    assert report_to_dict(report)["calibrated"]["person_days"] == 22.12
    total = list(__import__("csv").DictReader(__import__("io").StringIO(report_to_csv(report))))[-1]
    assert (total["calibration"], total["calibrated_person_days"]) == ("acme", "22.12")


def test_a_default_calibration_applies_to_every_report_until_off(team, tmp_path):
    from bot.errors import QueryError
    from tests.test_estimation import ask

    assert invoke(tmp_path, sheet(tmp_path, TIMESHEET), str(team.path), "--save", "acme", "--default").exit_code == 0
    engine = _engine(tmp_path)
    assert ask(engine, "team").calibrated.name == "acme"
    assert ask(engine, "team calibrated:off").calibrated is None
    with pytest.raises(QueryError, match=r"No calibration is saved as `nope` \(saved ones: `acme`\)"):
        ask(engine, "team calibrated:nope")


def test_the_calibrations_table_is_migration_20(tmp_path):
    from bot.store.index import Index
    from bot.store.tables import schema

    assert [number for number, name, _ in schema.MIGRATIONS if name == "calibrations"] == [20]
    index = Index(tmp_path / "index.db")
    assert index.schema_version() >= 20 and index.execute("SELECT 1 FROM migrations WHERE version = 20").fetchone()
    assert index.execute("SELECT count(*) FROM calibrations").fetchone()[0] == 0


def test_a_timesheet_whose_dates_read_both_ways_is_refused(team, tmp_path):
    ambiguous = "Email,Date,Hours\nann@corp.com,03/01/2024,8\nann@corp.com,03/04/2024,8\nann@corp.com,03/05/2024,8\n"
    result = invoke(tmp_path, sheet(tmp_path, ambiguous), str(team.path))
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        "gad-bot: the timesheet's dates read both day-first and month-first ('03/01/2024': no day in the file is above "
        "12, so nothing tells which); say how they are written with `--date-format %d/%m/%Y` (day first) or "
        "`--date-format %m/%d/%Y` (month first).")
    # told which way, it reads them (day first: 3 January, 3 April, 3 May)
    read = read_timesheet(ambiguous.encode(), date_format="%d/%m/%Y")
    assert [d.day.isoformat() for d in read.days] == ["2024-01-03", "2024-04-03", "2024-05-03"]
    # one date with a part above 12 tells the order: month first, as MM/DD/YYYY exports write it
    told = read_timesheet(b"Email,Date,Hours\na@x.example,03/01/2024,8\na@x.example,03/14/2024,8\n")
    assert [d.day.isoformat() for d in told.days] == ["2024-03-01", "2024-03-14"]


def test_a_migration_numbered_below_the_newest_applied_one_still_applies(tmp_path, monkeypatch):
    """Two branches may each add a migration; the one merged second can carry the lower number: a file written with
    the newest (19) but not the one before it must still get that one, where the check of the newest number alone
    skipped it."""
    import bot.store.tables.schema as schema
    from bot.store.index import Index

    (second, name, _), newest = schema.MIGRATIONS[-2], schema.MIGRATIONS[-1][0]
    monkeypatch.setattr(schema, "MIGRATIONS", schema.MIGRATIONS[:-2] + schema.MIGRATIONS[-1:])
    Index(tmp_path / "index.db").close()  # at the newest, without the one before it
    monkeypatch.undo()
    index = Index(tmp_path / "index.db")
    assert index.execute("SELECT name FROM migrations WHERE version = ?", (second,)).fetchone() == (name,)
    assert index.schema_version() == newest
