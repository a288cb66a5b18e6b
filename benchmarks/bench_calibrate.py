"""Benchmark: `gad-bot calibrate` on a synthetic history (benchmarks/synth.py) against git in the same run.

    .venv/bin/python benchmarks/bench_calibrate.py [--commits 100000] [--people 40] [--runs 5] [--no-doc]

Setup, not timed: the cached synthetic repository (bench_engine.ensure_repo), tracked in place into a
fresh data directory; a timesheet for the history's last full year (2024) built from git's own
(person, day) pairs: the --people most active people, each logging two task rows (5 h + 3 h) on
every day they committed and 8 h on as many other weekdays (so 2GAD should read the logged effort),
plus three people who never commit.

Timed, median of --runs: `gad-bot calibrate sheet.csv synth --json` as a whole process (start-up,
parsing the timesheet, matching people, a by:person report per month and for the year), against
git's side of the same question: the METRIC.md pipeline for that year, person by person
(`git log --use-mailmap ... | sort -u | uniq -c`). Checked: the total 2GAD equals twice the
compared people's pairs in git's output. The figures go between the `bench:calibrate` markers of
docs/benchmarks.md (unless --no-doc).
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import random
import statistics
import subprocess
import sys
import tempfile
from datetime import date, timedelta
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from bench_engine import base_env, ensure_repo, fmt_s, machine, measure, pipeline, write_doc  # noqa: E402

YEAR = 2024
NAME = "synth"


def git_pairs(repo: Path, env: dict) -> set[tuple[str, str]]:
    """(person, day) pairs of the year as METRIC.md's git pipeline gives them (mailmap, bots left out)."""
    out = subprocess.run(["bash", "-c", pipeline(repo, since=f"{YEAR}-01-01", until=f"{YEAR}-12-31",
                                                 per_person=False).replace(" | wc -l", "")],
                         capture_output=True, env=env, check=True).stdout.decode()
    return {tuple(line.split("\t")) for line in out.splitlines() if line}


def timesheet(pairs: set[tuple[str, str]], people: int, seed: int = 1) -> tuple[str, list[str]]:
    """CSV text (Email,Date,Task,Hours) for the `people` most active people, and who they are."""
    by_person: dict[str, set[str]] = {}
    for person, day in pairs:
        by_person.setdefault(person, set()).add(day)
    chosen = sorted(by_person, key=lambda p: (-len(by_person[p]), p))[:people]
    rng = random.Random(seed)
    weekdays = [date(YEAR, 1, 1) + timedelta(days=i) for i in range(366)]
    weekdays = [d.isoformat() for d in weekdays if d.year == YEAR and d.weekday() < 5]
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(("Email", "Date", "Task", "Hours"))
    for person in chosen:
        active = by_person[person]
        quiet = [d for d in weekdays if d not in active]
        for day in sorted(active | set(rng.sample(quiet, min(len(quiet), len(active))))):
            if day in active:
                writer.writerow((person, day, "code", 5))
                writer.writerow((person, day, "review", 3))
            else:
                writer.writerow((person, day, "meetings", 8))
    for manager in ("pm@corp.example", "design@corp.example", "qa@corp.example"):
        for day in weekdays[::3]:
            writer.writerow((manager, day, "planning", 8))
    return out.getvalue(), chosen


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Benchmark `gad-bot calibrate` against git.")
    ap.add_argument("--commits", type=int, default=100_000)
    ap.add_argument("--people", type=int, default=40)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--no-doc", action="store_true")
    args = ap.parse_args(argv)
    repo, _ = ensure_repo(args.commits, 1)
    with tempfile.TemporaryDirectory(prefix="bench-calibrate-") as work:
        work = Path(work)
        env = {**base_env(work / "home"), "GAD_DATA_DIR": str(work / "data"), "PYTHONPATH": str(ROOT)}
        gad = [sys.executable, "-m", "bot.faces.cli"]
        measure([*gad, "track", str(repo), "--in-place", "--name", NAME], env=env)
        pairs = git_pairs(repo, env)
        text, chosen = timesheet(pairs, args.people)
        sheet = work / "sheet.csv"
        sheet.write_text(text)
        rows = text.count("\n") - 1
        calibrate = [*gad, "calibrate", str(sheet), NAME, "--json"]
        per_person = ["bash", "-c", pipeline(repo, since=f"{YEAR}-01-01", until=f"{YEAR}-12-31", per_person=True)]
        gad_runs, git_runs = [], []
        for _ in range(args.runs):  # interleaved, so that load on the machine falls on both alike
            gad_runs.append(measure(calibrate, env=env))
            git_runs.append(measure(per_person, env=env))
        result = json.loads(gad_runs[-1].stdout)
        compared = set(result["compared"])
        expected = 2 * sum(1 for person, _ in pairs if person in compared)
        agree = result["total"]["two_gad"] == expected and compared == set(chosen)
        ours = statistics.median(r.wall for r in gad_runs)
        theirs = statistics.median(r.wall for r in git_runs)
        info = machine()
        section = (
            "### `gad-bot calibrate` beside a timesheet\n\n"
            f"`benchmarks/bench_calibrate.py`: `gad-bot calibrate` on the synthetic history of "
            f"**{args.commits:,} commits** (benchmarks/synth.py), {info['nproc']} cores ({info['cpu']}), {info['date']}, load shared with "
            "other work (figures are medians of interleaved runs).\n\n"
            f"    .venv/bin/python benchmarks/bench_calibrate.py --commits {args.commits} --people {args.people}\n\n"
            f"Timesheet: {YEAR}, {rows:,} rows (two task rows a day), {len(chosen)} committers plus 3 people who "
            "never commit, built from git's own (person, day) pairs.\n\n"
            "| run | wall (median) | CPU (median) | ratio to git |\n|---|---|---|---|\n"
            f"| `gad-bot calibrate sheet.csv synth --json` (process: start-up, {rows:,} rows parsed, 13 by:person "
            f"reports) | {fmt_s(ours)} | {fmt_s(statistics.median(r.cpu for r in gad_runs))} | "
            f"{ours / theirs:.2f}x |\n"
            f"| git: METRIC.md pipeline for {YEAR}, per person (`git log --use-mailmap ... \\| sort -u \\| uniq -c`) | "
            f"{fmt_s(theirs)} | {fmt_s(statistics.median(r.cpu for r in git_runs))} | 1.00x |\n\n"
            f"Total: 2GAD {result['total']['two_gad']:,} against {result['total']['logged_person_days']:,.2f} logged "
            f"person-days (ratio {result['total']['ratio']}); git's pairs for the compared people give "
            f"{expected:,}: **{'agree' if agree else 'DISAGREE'}**. Calibrate reads the index only; the first "
            "index and the p95 of a report are untouched by it (no code on their path changed).\n")
        print(section)
        if not args.no_doc:
            write_doc(section, "calibrate")
        return 0 if agree else 1


if __name__ == "__main__":
    sys.exit(main())
