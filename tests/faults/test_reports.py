"""Issue 11, part 5: reports run in worker processes fed by a queue; acks never wait on them.

A real `gad-bot serve` with one report worker and the 24,220-commit `big` history: a dozen heavy
queries at once are acknowledged at once, the waiting ones are told where they stand, every one is
answered; one person cannot fill the queue. (The 100-query, 160,000-commit figures are in
benchmarks/bench_load.py.)
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from tests.faults import Serve
from tests.faults.conftest import _track_in_process
from tests.slackstub import SlackStub

HEAVY = ["big refs:all by:person", "big by:person author:dev1*", "big refs:all by:month", "big path:f1 by:person"]


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


def _children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(p) for p in (task / "children").read_text().split()]
    return found


def test_heavy_reports_queue_in_a_worker_and_acks_do_not_wait(data, stub, tmp_path):
    with Serve(data, stub, logs=tmp_path / "logs", GAD_REPORT_WORKERS="1", GAD_REPORTS_PER_USER="2") as serve:
        assert "computing reports in 1 worker processes" in serve.stderr
        assert len(_children(serve.proc.pid)) >= 2  # the forkserver and the worker
        crowd = [(HEAVY[i % len(HEAVY)], f"U{i:03d}", f"crowd-{i}") for i in range(12)]
        results = _at_once(serve, stub, crowd)
        # one person, four at once, behind the crowd: two are accepted, two refused with a sentence
        mine = _at_once(serve, stub, [(HEAVY[0], "UGREEDY", f"mine-{i}") for i in range(4)])
        answers = {name: stub.wait_for_response(name, timeout=120)[-1] for *_, name in crowd}
        accepted = [f"mine-{i}" for i, (_, body, _) in enumerate(mine) if "already have" not in body]
        for name in accepted:
            answers[name] = stub.wait_for_response(name, timeout=120)[-1]
        assert serve.stop() == 0
    acks = sorted(took for _, _, took in results + mine)
    queued = [body for _, body, _ in results if "Queued:" in body]
    refused = [body for _, body, _ in mine if "already have" in body]
    print(f"acks p50 {1000 * acks[len(acks) // 2]:.0f} ms, max {1000 * acks[-1]:.0f} ms; {len(queued)} of 12 told "
          f"they were queued, e.g. {json.loads(queued[-1])['text']!r}; refused: {json.loads(refused[0])['text']!r}")
    assert all(status == 200 for status, _, _ in results + mine)
    assert acks[-1] < 3
    assert len(queued) >= 6 and all("reports ahead of yours" in q or "report ahead of yours" in q for q in queued)
    assert len(refused) == 2 and "at most 2 at a time" in refused[0]
    assert len(accepted) == 2
    for name, answer in answers.items():
        assert "2GAD" in json.dumps(answer), (name, answer)
    assert "Traceback" not in serve.stderr
