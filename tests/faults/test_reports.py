"""Issue 11, part 5: reports run in worker processes fed by a queue; acks never wait on them.

A real `gad-bot serve` with one report worker and the 24,220-commit `big` history: a dozen heavy
queries at once are acknowledged at once, the waiting ones are told where they stand, every one is
answered; one person cannot fill the queue. (The 100-query, 160,000-commit figures are in
benchmarks/bench_load.py.)
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from pathlib import Path

import pytest

from tests.faults import Serve, descendants, workers_of
from tests.faults.conftest import _track_in_process
from tests.slackstub import SlackStub

HEAVY = ["big refs:all by:person", "big by:person author:dev1*", "big refs:all by:month", "big path:f2 by:person"]


@pytest.fixture
def stub():
    with SlackStub() as running:
        yield running


@pytest.fixture
def data(big, tmp_path) -> Path:
    path = tmp_path / "data"
    _track_in_process(str(big.path), "big", path, in_place=True)
    return path


def _at_once(serve: Serve, stub, commands: list[tuple[str, str, str]]) -> list[tuple[int, str, float]]:
    """Post (text, user, response name) commands released together; (status, ack body, seconds) each."""
    barrier = threading.Barrier(len(commands))
    results: list = [None] * len(commands)

    def go(i: int) -> None:
        text, user, name = commands[i]
        barrier.wait()
        status, body, took = serve.post(stub.slash_fields(text, response_name=name, user_id=user), timeout=15)
        results[i] = (status, body.decode(), took)

    threads = [threading.Thread(target=go, args=(i,)) for i in range(len(commands))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def test_heavy_reports_queue_in_a_worker_and_acks_do_not_wait(data, stub, tmp_path):
    """Acks come at once; where a report stands is said after the ack (a person's first question waits for what
    Slack says of them: audiences), and past GAD_REPORTS_PER_USER a sentence says why not."""
    from tests.test_slack import answer

    with Serve(data, stub, logs=tmp_path / "logs", GAD_REPORT_WORKERS="1", GAD_REPORTS_PER_USER="2") as serve:
        assert "computing reports in 1 worker processes" in serve.stderr
        serve.wait_serving()
        workers = workers_of(serve.proc.pid)
        assert len(workers) >= 1  # the report worker
        crowd = [(HEAVY[i % len(HEAVY)], f"U{i:03d}", f"crowd-{i}") for i in range(12)]
        # Stopped while everyone asks, the worker finishes nothing meanwhile: a report of milliseconds could
        # otherwise end before the same person's fourth question came, leaving them room for it.
        for pid in workers:
            os.kill(pid, signal.SIGSTOP)
        try:
            results = _at_once(serve, stub, crowd)
            # one person, four at once, behind the crowd: two are accepted, two refused with a sentence
            mine = _at_once(serve, stub, [(HEAVY[0], "UGREEDY", f"mine-{i}") for i in range(4)])
            for i, (_, body, _) in enumerate(mine):  # each decided (queued or refused) before anything can finish
                if not body:
                    stub.wait_for_response(f"mine-{i}", timeout=30)
        finally:
            for pid in workers:
                os.kill(pid, signal.SIGCONT)
        answers = {name: answer(stub, name, timeout=120) for *_, name in crowd}  # heavy, one worker, a busy host
        # a question is queued (or refused) in its ack when what Slack says of the person is cached by then (another
        # of their four answered first), else after it: its answer is the ack's, or at its response_url
        acked = {f"mine-{i}": json.loads(body) for i, (_, body, _) in enumerate(mine) if body}
        mine_answers = {name: acked[name] if "already have" in acked.get(name, {}).get("text", "") else
                        answer(stub, name, timeout=120) for name in (f"mine-{i}" for i in range(4))}
        assert serve.stop() == 0
    acks = sorted(took for _, _, took in results + mine)
    queued = [r["text"] for *_, name in crowd for r in stub.responses(name) if r.get("text", "").startswith("Queued:")]
    refused = [a["text"] for a in mine_answers.values() if "already have" in a.get("text", "")]
    accepted = [a for a in mine_answers.values() if "already have" not in a.get("text", "")]
    print(f"acks p50 {1000 * acks[len(acks) // 2]:.0f} ms, max {1000 * acks[-1]:.0f} ms; {len(queued)} of 12 told "
          f"they were queued, e.g. {queued[-1]!r}; refused: {refused[0]!r}")
    assert all(status == 200 for status, _, _ in results + mine)
    assert acks[-1] < 3
    assert len(queued) >= 6 and all("reports ahead of yours" in q or "report ahead of yours" in q for q in queued)
    assert len(refused) == 2 and "at most 2 at a time" in refused[0]
    assert len(accepted) == 2 and all("2GAD" in json.dumps(a) for a in accepted)
    for name, message in answers.items():
        assert "2GAD" in json.dumps(message), (name, message)
    assert "Traceback" not in serve.stderr


def test_a_queued_csv_report_is_attached_from_the_worker(data, stub, tmp_path):
    with Serve(data, stub, logs=tmp_path / "logs", GAD_REPORT_WORKERS="1") as serve:
        status, _, took = serve.post(stub.slash_fields("big since:2018-01 until:2018-03 by:month format:csv",
                                                       response_name="csv"))
        answer = json.dumps(stub.wait_for_response("csv", timeout=60))
        assert serve.stop() == 0
    files = [f for f in stub.uploaded_files() if f.data]
    assert status == 200 and took < 3 and "2GAD" in answer
    assert len(files) == 1
    lines = files[0].data.decode().splitlines()
    assert lines[0].startswith("month,active_days,") and lines[1].startswith("2018-01,") and lines[-1].startswith("TOTAL,")


def test_kill9_of_serve_alone_leaves_no_report_worker(data, stub, tmp_path):
    """`kill -9 PID` of serve (not its group): its report workers must not run on without it."""
    import os
    import signal

    with Serve(data, stub, logs=tmp_path / "logs", GAD_REPORT_WORKERS="2") as serve:
        serve.wait_serving()  # both report workers are up before serve is killed
        workers = descendants(serve.proc.pid)
        assert len(workers) >= 2, workers
        os.kill(serve.proc.pid, signal.SIGKILL)
        serve.proc.wait(timeout=10)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(Path(f"/proc/{p}").exists() for p in workers):
            time.sleep(0.1)
        alive = [p for p in workers if Path(f"/proc/{p}").exists()
                 and "Z" not in Path(f"/proc/{p}/stat").read_text().split(") ")[1][:1]]
    for pid in alive:  # do not leave them behind even when the test fails
        os.kill(pid, signal.SIGKILL)
    assert alive == [], f"{len(alive)} of {len(workers)} children of serve outlived it"
