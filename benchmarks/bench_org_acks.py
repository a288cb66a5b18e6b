"""Acks of a running `gad-bot serve` while a whole organization is first tracked and indexed (issue 17, part 3).

    .venv/bin/python benchmarks/bench_org_acks.py --repos 1000    # the issue's size
    .venv/bin/python benchmarks/bench_org_acks.py --repos 100     # a quick look

The issue's target: acks stay <= 300 ms p95 while an organization of 1,000 repositories is first indexed.
What it does, on loopback:
1. writes N bare repositories of 300 commits (bench_forge.py's `build`) and serves them from the
   GitHub-shaped forge stand-in (tests/forgestub.py: listing API + git http-backend);
2. starts `gad-bot serve` over HTTP (a real process, tests/faults.Serve) on a data directory that
   tracks one small repository, answering to tests/slackstub.py;
3. 60 signed slash commands (a report each, from different people) on the idle server: their acks;
4. `gad-bot track http://FORGE/acme` as its own process on the same data directory: listing, clones
   8 at a time, indexing in one worker process per CPU. This is the same work `/gad track URL` hands
   to serve's sync workers (processes beside serve, as here); typed in Slack a loopback forge would be
   refused as a private address, so the CLI starts it. Meanwhile a signed slash command every 50 ms:
   their acks, until the track ends. Every report asked must be answered (at its response_url).

The machine is shared: the idle acks, measured in the same run, are the reference.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

from bench_forge import build  # noqa: E402  (the same repositories as the forge benchmark)
from bench_load import report  # noqa: E402  (the table, printed and written between the markers)
from bench_webhook import Acker, ms, pct  # noqa: E402  (acks every 50 ms on a thread, as in the webhook storm)
from tests.faults import Serve, cli_env  # noqa: E402
from tests.forgestub import ForgeStub, StubRepo  # noqa: E402
from tests.slackstub import SlackStub  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repos", type=int, default=1000)
    parser.add_argument("--no-doc", action="store_true")
    args = parser.parse_args()
    rows: list[tuple[str, str]] = []
    problems: list[str] = []
    with tempfile.TemporaryDirectory(prefix="bench-org-acks-") as tmp:
        work = Path(tmp)
        started = time.perf_counter()
        names = build(work / "srv", args.repos)
        print(f"built {args.repos:,} repositories in {time.perf_counter() - started:.1f} s", flush=True)
        data = work / "data"
        with ForgeStub(work / "srv", "github") as forge, SlackStub() as stub:
            forge.listed.extend(StubRepo(1_000_000 + n, name) for n, name in enumerate(names))
            env = {"GAD_FORGES": forge.forges_setting, "GAD_FORGE_MAX_REPOS": str(max(5000, args.repos)),
                   "GAD_FETCH_TIMEOUT_SECONDS": "600"}
            solo = work / "srv" / f"{names[0]}.git"
            subprocess.run([sys.executable, "-m", "bot.faces.cli", "track", str(solo), "--name", "solo"], cwd=ROOT,
                           env=cli_env(data, **env), check=True, capture_output=True)
            with Serve(data, stub, logs=work / "logs", **env) as serve:
                asked: list[str] = []

                def ack(label: str, person: int) -> float:
                    status, _, seconds = serve.post(stub.slash_fields("solo since:2000-01", response_name=label,
                                                                      user_id=f"UBENCH{person:05d}"))
                    if status != 200:
                        problems.append(f"an ack was {status}")
                    asked.append(label)
                    return seconds

                idle = [ack(f"idle-{i}", i) for i in range(60)]
                with Acker(ack) as acker:
                    started = time.perf_counter()
                    track = subprocess.run([sys.executable, "-m", "bot.faces.cli", "track", forge.owner_url("acme")],
                                           cwd=ROOT, env=cli_env(data, **env), capture_output=True, text=True)
                    tracked = time.perf_counter() - started
                busy = acker.seconds
                print(track.stdout.strip().splitlines()[-1] if track.stdout.strip() else track.stderr[-500:], flush=True)
                if track.returncode != 0:
                    problems.append(f"track exited {track.returncode}: {track.stderr[-300:]}")
                for label in asked:
                    try:
                        stub.wait_for_response(label, timeout=120)
                    except Exception as error:  # noqa: BLE001 - a report never answered is a problem, said below
                        problems.append(f"{label} was never answered ({type(error).__name__})")
                        break
                code = serve.stop()
                if code != 0:
                    problems.append(f"serve exited {code}")
                if "Traceback" in serve.stderr:
                    problems.append("a traceback in serve's log")
        rows.append((f"`gad-bot track` of the organization ({args.repos:,} repositories x 300 commits), beside serve",
                     f"{tracked:.1f} s ({tracked / args.repos:.3f} s a repository)"))
        rows.append((f"acks on the idle server, p50 / p95 / max of {len(idle)}",
                     f"{ms(statistics.median(idle))} / {ms(pct(idle, 0.95))} / {ms(max(idle))}"))
        busy_p95 = pct(busy, 0.95) if busy else float("nan")
        if busy:
            rows.append((f"acks while the organization is first tracked, p50 / p95 / max of {len(busy)}",
                         f"{ms(statistics.median(busy))} / **{ms(busy_p95)}** / {ms(max(busy))}"
                         f" (target <= 300 ms p95: {'met' if busy_p95 <= 0.3 else 'NOT met'})"))
            if busy_p95 > 0.3:
                problems.append(f"acks p95 {busy_p95 * 1000:.0f} ms > 300 ms while the organization was tracked")
        rows.append(("every report asked during the run answered at its response_url",
                     f"{len(asked):,} asked" + ("" if not any("never answered" in p for p in problems) else ": NO")))
    rows.append(("load average of the machine at the end (other work on it too)", f"{os.getloadavg()[0]:.1f}"))
    return report(rows, problems, args, "bench:org-acks", f" --repos {args.repos}")


if __name__ == "__main__":
    sys.exit(main())
