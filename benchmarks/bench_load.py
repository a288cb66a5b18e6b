"""Load on a real `gad-bot serve` (HTTP) over loopback: ack latency, answers, memory (issue 5 "Load").

    .venv/bin/python benchmarks/bench_load.py                  # 100 concurrent, 10,000 sequential, 3 bursts
    .venv/bin/python benchmarks/bench_load.py --sequential 1000 --no-doc   # a quick look

What it does, against tests/slackstub.py (the Web API and the response_urls answers go to):
1. builds two repositories: `web` (200 commits, the everyday query) and `big` (a `git fast-import`
   history of --big-commits commits on main plus a 200-commit `dev` branch forked at its middle),
   tracks them, and starts `gad-bot serve --port N` as a real process;
2. 100 concurrent signed slash commands (all released at once by a barrier), then 10,000 sequential
   ones cycling through everyday queries: every ack must come back 200 within 3 s, and every
   command must be answered at its response_url (counted at the stub);
3. RSS of the serve process (VmRSS from /proc/PID/status) before, during (every 1,000 sequential
   requests) and after, to show memory stays flat;
4. issue 3's figure: the ack latency of a burst of 20 while a large query runs (`big branch:dev
   by:person`, which walks the divergence of `dev` from main in the mirror: seconds of CPU in the
   serve process), against the same burst on an idle server.
5. issue 11's figure (`--heavy` runs only this): 100 heavy queries at once from 100 people
   (`by:person`, `refs:all`, `path:`, `author:` globs) on a `benchmarks/synth.py` history of
   --heavy-commits commits (160,000; its changed paths indexed too): every ack within 3 s (p95
   at most 300 ms), every report answered, and the peak memory of serve and its worker processes
   (the sum of their VmRSS, sampled every 50 ms).
6. issue 22's figures (`--fair` runs only this, on the same history): 100 heavy `compare`s at once
   from 100 people (computed in the report workers, not in serve), then one person's 20 slow
   reports in flight (GAD_REPORTS_PER_USER, all accepted) while 20 other people each ask a quick
   one: every ack within 3 s (p95 at most 300 ms), and the quick answers arrive while the slow
   ones are still being computed (people take turns; one person never holds every worker).

Results are printed as a markdown table and written into docs/reliability.md between the
`bench_load` markers, the `bench_load_heavy` ones for --heavy or the `bench_load_fair` ones for
--fair (those in docs/benchmarks.md too), unless --no-doc.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import statistics
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DOC = ROOT / "docs" / "reliability.md"
BENCH_DOC = ROOT / "docs" / "benchmarks.md"
WORK = HERE / "work"
sys.path.insert(0, str(ROOT))

from bot.service.workers import default_workers  # noqa: E402
from tests.faults import Serve, build_history, descendants, rss_kb  # noqa: E402
from tests.gitbuild import RepoBuilder  # noqa: E402
from tests.slackstub import SlackStub  # noqa: E402

ACK_LIMIT = 3.0
EVERYDAY = ["web", "web by:month", "web since:2024-01 by:person", "repos", "big since:2019-01 until:2019-03",
            "web author:dev1@* by:week"]
LARGE = "big branch:dev by:person"
COMPARES = ["compare synth:drivers synth:net synth:fs", "compare synth synth:docs refs:all",
            "compare synth:net synth:drivers since:2015", "compare synth:docs synth:fs author:*a*"]
SLOW = ["synth refs:all by:person", "synth since:2010 refs:all by:person", "synth author:*e* refs:all by:week"]
QUICK = "synth since:2024-10 by:month"
HEAVY = ["synth by:person", "synth refs:all by:person", "synth path:drivers by:person",
         "synth author:*a* by:month", "synth refs:all path:net by:week", "synth author:*.org by:person",
         "synth since:2015 refs:all by:person", "synth path:docs author:*e* by:quarter"]


def tree_rss_kb(pid: int) -> int:
    """VmRSS of a process and all its descendants (serve, its fork server and workers, the resource tracker)."""
    total = 0
    for member in [pid, *descendants(pid)]:
        try:
            total += rss_kb(member)
        except OSError:  # ended meanwhile
            continue
    return total


class Sampler(threading.Thread):
    def __init__(self, pid: int, every: float = 0.05):
        super().__init__(daemon=True)
        self.pid, self.every, self.peak = pid, every, 0
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.is_set():
            self.peak = max(self.peak, tree_rss_kb(self.pid))
            self.stopped.wait(self.every)


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(p / 100 * len(ordered)) - 1))]


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms" if seconds < 10 else f"{seconds:.1f} s"


class Load:
    def __init__(self, serve: Serve, stub: SlackStub):
        self.serve, self.stub = serve, stub
        self.names: list[str] = []
        self.failures: list[str] = []
        self.queued = 0  # acks that told the person their report waits
        self._n = 0
        self._lock = threading.Lock()

    def one(self, text: str, prefix: str, user: str | None = None) -> float:
        with self._lock:
            self._n += 1
            name = f"{prefix}-{self._n}"
            self.names.append(name)
        # A workspace, not one person: serve limits each person to GAD_REPORTS_PER_USER reports at once.
        user = user or f"U{self._n % 500:05d}"
        status, body, took = self.serve.post(self.stub.slash_fields(text, response_name=name, user_id=user), timeout=30)
        if status != 200:
            self.failures.append(f"{name}: HTTP {status}")
        if b"Queued:" in body:
            with self._lock:
                self.queued += 1
        return took

    def concurrent(self, texts: list[str], prefix: str, distinct_users: bool = False) -> list[float]:
        barrier = threading.Barrier(len(texts))

        def go(i: int) -> float:
            barrier.wait()
            return self.one(texts[i], prefix, f"UH{i:05d}" if distinct_users else None)

        with ThreadPoolExecutor(len(texts)) as pool:
            return list(pool.map(go, range(len(texts))))

    def wait_answered(self, names: list[str], timeout: float) -> tuple[int, float]:
        """How many of `names` got an answer at their response_url, and when the last one came."""
        deadline = time.monotonic() + timeout
        started = time.monotonic()
        while time.monotonic() < deadline:
            missing = [n for n in names if not self.stub.responses(n)]
            if not missing:
                return len(names), time.monotonic() - started
            time.sleep(0.05)
        return len(names) - len([n for n in names if not self.stub.responses(n)]), time.monotonic() - started


def answered_at(stub: SlackStub, names: list[str], timeout: float) -> dict[str, float]:
    """When (time.monotonic()) each of `names` was first seen answered at its response_url (polled every 20 ms)."""
    seen: dict[str, float] = {}
    deadline = time.monotonic() + timeout
    while len(seen) < len(names) and time.monotonic() < deadline:
        now = time.monotonic()
        for name in names:
            if name not in seen and stub.responses(name):
                seen[name] = now
        time.sleep(0.02)
    return seen


def build(work: Path, big_commits: int) -> Path:
    from bot.config import Settings
    from bot.engine.engine import Engine

    web = RepoBuilder(work / "web")
    for i in range(200):
        web.commit(name=f"Dev {i % 7}", email=f"dev{i % 7}@example.com", date=f"2024-{1 + i % 12:02d}-{1 + i % 28:02d}")
    cached = WORK / f"load-big-{big_commits}.git"
    if not cached.exists():
        WORK.mkdir(exist_ok=True)
        print(f"building a {big_commits:,}-commit history with git fast-import ...", flush=True)
        partial = cached.with_name(cached.name + ".partial")
        if partial.exists():
            import shutil

            shutil.rmtree(partial)
        build_history(partial, big_commits)
        partial.rename(cached)
    data = work / "data"
    engine = Engine.open(Settings.from_env({"GAD_DATA_DIR": str(data)}))
    started = time.monotonic()
    engine.track(str(web.path), "web")
    engine.track(str(cached), "big", in_place=True)
    print(f"indexed web and big ({big_commits:,} commits) in {time.monotonic() - started:.1f}s", flush=True)
    engine.index.close()
    return data


def build_heavy(data: Path, commits: int) -> int:
    """Track a synth.py history of `commits` commits (changed paths included) as `synth` in `data`, once
    (the index is kept in benchmarks/work/ beside the history: indexing 160,000 commits' paths takes
    minutes); the number of commits indexed."""
    import subprocess

    from bot.config import Settings
    from bot.engine.engine import Engine

    cached = WORK / f"synth-{commits}.git"
    if not cached.exists():
        WORK.mkdir(exist_ok=True)
        print(f"generating a {commits:,}-commit history with benchmarks/synth.py ...", flush=True)
        partial = cached.with_name(cached.name + ".partial")
        if partial.exists():
            import shutil

            shutil.rmtree(partial)
        subprocess.run([sys.executable, str(HERE / "synth.py"), "--commits", str(commits), "--out", str(partial)],
                       check=True)
        partial.rename(cached)
    engine = Engine.open(Settings.from_env({"GAD_DATA_DIR": str(data)}))
    if engine.index.repo("synth") is None:
        started = time.monotonic()
        engine.track(str(cached), "synth", in_place=True)
        print(f"indexed synth ({engine.repo('synth').commits:,} commits, changed paths included) in "
              f"{time.monotonic() - started:.1f}s", flush=True)
    indexed = engine.repo("synth").commits
    engine.index.close()
    return indexed


def serve_synth(work: Path, stub: SlackStub, commits: int, workers: int | None, logs: str) -> tuple[int, Serve]:
    """The synth history indexed (once) and a serve over it, started by `with`; (commits indexed, serve)."""
    data = WORK / f"heavy-data-{commits}"
    indexed = build_heavy(data, commits)
    env = {"GAD_LOG_LEVEL": "WARNING"}
    if workers:
        env["GAD_REPORT_WORKERS"] = str(workers)
    return indexed, Serve(data, stub, logs=work / logs, **env)


def heavy(work: Path, stub: SlackStub, commits: int, count: int, workers: int | None) -> tuple[list, list]:
    """Phase 5: `count` heavy queries at once from `count` people; (rows, problems)."""
    rows: list[tuple[str, str]] = []
    problems: list[str] = []
    indexed, serving = serve_synth(work, stub, commits, workers, "serve-heavy")
    with serving as serve:
        load = Load(serve, stub)
        load.one("synth since:2024", "warm")  # every worker has its columns once a report of each kind ran
        load.wait_answered(load.names, 60)
        idle_kb = tree_rss_kb(serve.proc.pid)
        sampler = Sampler(serve.proc.pid)
        sampler.start()
        started = time.monotonic()
        texts = [HEAVY[i % len(HEAVY)] for i in range(count)]
        acks = load.concurrent(texts, "heavy", distinct_users=True)
        names = [n for n in load.names if n.startswith("heavy-")]
        answered, last = load.wait_answered(names, 1800)
        wall = time.monotonic() - started
        sampler.stopped.set()
        sampler.join()
        over = sum(a >= ACK_LIMIT for a in acks)
        rows.append((f"{count} heavy queries at once on {indexed:,} commits ({', '.join(f'`{t[6:]}`' for t in HEAVY[:4])}"
                     f", ...): ack p50 / p95 / max", f"{ms(pct(acks, 50))} / {ms(pct(acks, 95))} / {ms(max(acks))}"))
        rows.append((f"{count} heavy queries: acks over {ACK_LIMIT:.0f} s; acks saying `Queued: N reports ahead`",
                     f"{over}; {load.queued}"))
        rows.append((f"{count} heavy queries: answered at response_url",
                     f"{answered} / {len(names)} (the last {wall:.1f}s after they were sent)"))
        rows.append(("report workers (GAD_REPORT_WORKERS)", str(workers or default_workers())))
        rows.append(("serve + workers RSS: idle / peak during the 100", f"{idle_kb / 1024:.0f} MiB / "
                                                                         f"{sampler.peak / 1024:.0f} MiB"))
        if over or pct(acks, 95) > 0.3 or answered < len(names):
            problems.append("heavy: an ack over 300 ms at p95 or over 3 s, or a missing answer")
        rows.append(("serve exit status after SIGTERM", str(serve.stop())))
    return rows, problems


def fair(work: Path, stub: SlackStub, commits: int, count: int, workers: int | None) -> tuple[list, list]:
    """Phase 6: `count` heavy compares at once, then one person's slow reports beside others' quick ones."""
    rows: list[tuple[str, str]] = []
    problems: list[str] = []
    indexed, serving = serve_synth(work, stub, commits, workers, "serve-fair")
    with serving as serve:
        load = Load(serve, stub)
        load.one("synth since:2024", "warm")
        load.one("compare synth:net synth:docs since:2024", "warm")
        load.wait_answered(load.names, 120)
        serve_kb = rss_kb(serve.proc.pid)

        # a. heavy compares at once, one per person
        started = time.monotonic()
        acks = load.concurrent([COMPARES[i % len(COMPARES)] for i in range(count)], "cmp", distinct_users=True)
        names = [n for n in load.names if n.startswith("cmp-")]
        answered, _ = load.wait_answered(names, 1800)
        wall = time.monotonic() - started
        over = sum(a >= ACK_LIMIT for a in acks)
        rows.append((f"{count} heavy compares at once on {indexed:,} commits (`{COMPARES[0]}`, ...): ack p50 / p95 / max",
                     f"{ms(pct(acks, 50))} / {ms(pct(acks, 95))} / {ms(max(acks))}"))
        rows.append((f"{count} heavy compares: acks over {ACK_LIMIT:.0f} s; answered at response_url",
                     f"{over}; {answered} / {len(names)} (the last {wall:.1f}s after they were sent)"))
        rows.append(("serve's own RSS before / after the compares (they are computed in the workers)",
                     f"{serve_kb / 1024:.0f} MiB / {rss_kb(serve.proc.pid) / 1024:.0f} MiB"))
        if over or pct(acks, 95) > 0.3 or answered < len(names):
            problems.append("compares: an ack over 300 ms at p95 or over 3 s, or a missing answer")

        # b. one person's slow reports in flight, then others' quick ones
        greedy = 20  # GAD_REPORTS_PER_USER's default: all accepted, none refused
        posted: dict[str, float] = {}
        slow_texts = [SLOW[i % len(SLOW)] for i in range(greedy)]
        first = load._n
        started = time.monotonic()
        slow_acks = [_timed_post(load, text, "UGREEDY", posted) for text in slow_texts]  # one after another
        slow_names = [f"slow-{first + i + 1}" for i in range(greedy)]
        time.sleep(1.0)  # the slow ones are running on the workers now
        quick_first = load._n
        barrier = threading.Barrier(count // 5)

        def quick(i: int) -> float:
            barrier.wait()
            return _timed_post(load, QUICK, f"UQ{i:05d}", posted)

        with ThreadPoolExecutor(count // 5) as pool:
            quick_acks = list(pool.map(quick, range(count // 5)))
        quick_names = [f"slow-{quick_first + i + 1}" for i in range(count // 5)]
        seen = answered_at(stub, slow_names + quick_names, 1800)
        acks = slow_acks + quick_acks
        waits = [seen[n] - posted[n] for n in quick_names if n in seen]
        slow_done = [seen[n] - started for n in slow_names if n in seen]
        refused = sum(1 for failure in load.failures if "already have" in failure)
        rows.append((f"one person's {greedy} slow reports (`{SLOW[0]}`, ...) in flight, {len(quick_names)} other people "
                     f"ask `{QUICK}`: ack p50 / p95 / max", f"{ms(pct(acks, 50))} / {ms(pct(acks, 95))} / {ms(max(acks))}"))
        rows.append(("the others' quick answers: wait p50 / max (from their request)",
                     f"{ms(pct(waits, 50))} / {ms(max(waits))}" if waits else "none answered"))
        rows.append((f"the person's {greedy} slow reports: first / last answered (from their first request)",
                     f"{ms(min(slow_done))} / {ms(max(slow_done))}; {greedy - refused} of {greedy} accepted" if slow_done else
                     "none answered"))
        if (max(acks) >= ACK_LIMIT or pct(acks, 95) > 0.3 or len(waits) < len(quick_names)
                or len(slow_done) < greedy or refused or (waits and slow_done and max(waits) >= max(slow_done))):
            problems.append("fair: a slow ack, a missing answer, or the quick answers waited for the slow ones")
        rows.append(("report workers (GAD_REPORT_WORKERS)", str(workers or default_workers())))
        rows.append(("serve exit status after SIGTERM", str(serve.stop())))
    return rows, problems


def _timed_post(load: Load, text: str, user: str, posted: dict[str, float]) -> float:
    """One signed slash command from `user`; its name's posting time goes in `posted`; the ack's latency."""
    with load._lock:
        load._n += 1
        name = f"slow-{load._n}"
        load.names.append(name)
    posted[name] = time.monotonic()
    status, body, took = load.serve.post(load.stub.slash_fields(text, response_name=name, user_id=user), timeout=30)
    if status != 200 or b"already have" in body:
        load.failures.append(f"{name}: HTTP {status} {body[:80]!r}")
    return took


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--concurrent", type=int, default=100)
    parser.add_argument("--sequential", type=int, default=10_000)
    parser.add_argument("--burst", type=int, default=20)
    parser.add_argument("--bursts", type=int, default=3, help="bursts during a large query (and on an idle server)")
    parser.add_argument("--big-commits", type=int, default=100_000)
    parser.add_argument("--no-doc", action="store_true", help="do not write docs/reliability.md")
    parser.add_argument("--heavy", action="store_true", help="run only the heavy-queries phase (issue 11)")
    parser.add_argument("--fair", action="store_true", help="run only the compares and one-person phase (issue 22)")
    parser.add_argument("--heavy-commits", type=int, default=160_000)
    parser.add_argument("--heavy-count", type=int, default=100)
    parser.add_argument("--workers", type=int, default=0, help="GAD_REPORT_WORKERS for the heavy phase (0: per CPU)")
    args = parser.parse_args()

    if args.fair:
        with tempfile.TemporaryDirectory(prefix="gad-load-") as tmp, SlackStub() as stub:
            rows, problems = fair(Path(tmp), stub, args.heavy_commits, args.heavy_count, args.workers or None)
        return report(rows, problems, args, "bench_load_fair", " --fair")

    if args.heavy:
        with tempfile.TemporaryDirectory(prefix="gad-load-") as tmp, SlackStub() as stub:
            rows, problems = heavy(Path(tmp), stub, args.heavy_commits, args.heavy_count, args.workers or None)
        return report(rows, problems, args, "bench_load_heavy", " --heavy")

    rows: list[tuple[str, str]] = []
    problems: list[str] = []
    with tempfile.TemporaryDirectory(prefix="gad-load-") as tmp, SlackStub() as stub:
        work = Path(tmp)
        data = build(work, args.big_commits)
        with Serve(data, stub, logs=work / "serve", GAD_LOG_LEVEL="WARNING") as serve:
            load = Load(serve, stub)
            load.one("web", "warm")  # imports and caches warm, as after any first request
            load.wait_answered(load.names, 30)
            rss = [("start", rss_kb(serve.proc.pid))]

            # 1. concurrent
            started = time.monotonic()
            acks = load.concurrent([EVERYDAY[i % len(EVERYDAY)] for i in range(args.concurrent)], "conc")
            names = [n for n in load.names if n.startswith("conc-")]
            answered, last = load.wait_answered(names, 120)
            wall = time.monotonic() - started
            rows.append((f"{args.concurrent} concurrent: ack p50 / p95 / max",
                         f"{ms(pct(acks, 50))} / {ms(pct(acks, 95))} / {ms(max(acks))}"))
            rows.append((f"{args.concurrent} concurrent: answered at response_url",
                         f"{answered} / {len(names)} (all within {wall:.1f}s of the first request)"))
            if max(acks) >= ACK_LIMIT or answered < len(names):
                problems.append("concurrent: a slow ack or a missing answer")
            rss.append(("after concurrent", rss_kb(serve.proc.pid)))

            # 2. sequential
            acks = []
            started = time.monotonic()
            for i in range(args.sequential):
                acks.append(load.one(EVERYDAY[i % len(EVERYDAY)], "seq"))
                if (i + 1) % 1000 == 0:
                    rss.append((f"after {i + 1:,} sequential", rss_kb(serve.proc.pid)))
                    print(f"  {i + 1:,} sequential, ack p95 {ms(pct(acks, 95))}, RSS {rss[-1][1] / 1024:.1f} MiB",
                          flush=True)
            names = [n for n in load.names if n.startswith("seq-")]
            answered, tail = load.wait_answered(names, 300)
            wall = time.monotonic() - started
            rows.append((f"{args.sequential:,} sequential: ack p50 / p95 / max",
                         f"{ms(pct(acks, 50))} / {ms(pct(acks, 95))} / {ms(max(acks))}"))
            rows.append((f"{args.sequential:,} sequential: acks over {ACK_LIMIT:.0f} s", str(sum(a >= ACK_LIMIT for a in acks))))
            rows.append((f"{args.sequential:,} sequential: answered at response_url",
                         f"{answered:,} / {len(names):,} ({args.sequential / wall:.0f} requests/s; last answer "
                         f"{tail:.1f}s after the last ack)"))
            if max(acks) >= ACK_LIMIT or answered < len(names):
                problems.append("sequential: a slow ack or a missing answer")
            rss.append(("end", rss_kb(serve.proc.pid)))

            # 3. bursts on an idle server, then during a large query
            idle, busy, large_times = [], [], []
            for round_ in range(args.bursts):
                idle += load.concurrent(["web by:month"] * args.burst, f"idle{round_}")
            for round_ in range(args.bursts):
                name = f"large-{round_}"
                posted = time.monotonic()
                status, _, _ = serve.post(stub.slash_fields(LARGE, response_name=name), timeout=30)
                if status != 200:
                    problems.append(f"large query: HTTP {status}")
                time.sleep(0.1)  # it is running in serve's worker pool now
                busy += load.concurrent(["web by:month"] * args.burst, f"busy{round_}")
                stub.wait_for_response(name, timeout=120)
                large_times.append(time.monotonic() - posted)
            names = [n for n in load.names if n.startswith(("idle", "busy"))]
            answered, _ = load.wait_answered(names, 120)
            rows.append((f"burst of {args.burst}, idle server: ack p50 / p95", f"{ms(pct(idle, 50))} / {ms(pct(idle, 95))}"))
            rows.append((f"burst of {args.burst} during `{LARGE}` ({args.big_commits:,} commits; answered in "
                         f"{statistics.median(large_times):.1f}s): ack p50 / p95 / max",
                         f"{ms(pct(busy, 50))} / {ms(pct(busy, 95))} / {ms(max(busy))}"))
            rows.append(("bursts answered at response_url", f"{answered} / {len(names)}"))
            if max(busy + idle) >= ACK_LIMIT or answered < len(names):
                problems.append("bursts: a slow ack or a missing answer")

            rows.append(("serve RSS: start / after concurrent / end",
                         " / ".join(f"{kb / 1024:.1f} MiB" for _, kb in rss if _ in ("start", "after concurrent", "end"))))
            sequential_rss = [kb for label, kb in rss if "sequential" in label]
            if sequential_rss:
                rows.append(("serve RSS every 1,000 sequential requests (min / max)",
                             f"{min(sequential_rss) / 1024:.1f} / {max(sequential_rss) / 1024:.1f} MiB"))
            rows.append(("requests that did not get 200", str(len(load.failures))))
            if load.failures:
                problems.append(f"{len(load.failures)} requests failed, e.g. {load.failures[:3]}")
            code = serve.stop()
            rows.append(("serve exit status after SIGTERM", str(code)))
    options = '' if (args.sequential, args.concurrent) == (10_000, 100) else \
        ' --sequential %d --concurrent %d' % (args.sequential, args.concurrent)
    return report(rows, problems, args, "bench_load", options)


def report(rows: list[tuple[str, str]], problems: list[str], args, marker: str, options: str) -> int:
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    machine = f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}"
    table = "\n".join(["| measure | result |", "|---|---|", *(f"| {a} | {b} |" for a, b in rows)])
    script = Path(sys.argv[0]).name  # bench_webhook.py and bench_org_acks.py report through here too
    section = (f"Measured {stamp} on {machine} by `benchmarks/{script}{options}`"
               f" (serve over HTTP on loopback, answers to tests/slackstub.py):\n\n{table}\n")
    print()
    print(section)
    if problems:
        print("PROBLEMS:\n- " + "\n- ".join(problems))
    for doc in () if args.no_doc else (DOC, BENCH_DOC):  # each document with this phase's markers
        text = doc.read_text() if doc.exists() else ""
        pattern = re.compile(rf"(<!-- {marker}:start -->\n).*?(<!-- {marker}:end -->)", re.S)
        if pattern.search(text):
            doc.write_text(pattern.sub(lambda m: m.group(1) + section + m.group(2), text))
            print(f"wrote {doc.relative_to(ROOT)}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
