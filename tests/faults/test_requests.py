"""Issue 11, parts 2-4: what reaches `gad-bot serve` over HTTP before anyone is authenticated.

Each test starts the real `gad-bot serve` and talks to it with raw sockets or http.client on
loopback: bodies far over any Slack payload (declared, streamed, chunked), bursts of them beside
real signed slash commands, signed requests Bolt used to answer with a 500 and a traceback, and
the same signed bytes posted twice.
"""

from __future__ import annotations

import hashlib
import hmac
import http.client
import json
import socket
import statistics
import threading
import time
import urllib.parse
from pathlib import Path

import pytest

from tests.faults import SIGNING_SECRET, Serve, rss_kb, track_here
from tests.gitbuild import RepoBuilder
from tests.slackstub import (SlackStub, block_actions_payload, signed_interaction, signed_request,
                             signed_slash_command, slack_signature)

MARK = "Zq7MARKxv"  # in bodies and header values: must never appear in what serve writes
BIG = 300 * 1024 * 1024


@pytest.fixture
def stub():
    with SlackStub() as running:
        yield running


@pytest.fixture
def data(tmp_path) -> Path:
    upstream = RepoBuilder(tmp_path / "web")
    upstream.commit(email="ann@example.com", date="2024-01-02")
    upstream.commit(email="bob@example.com", date="2024-01-03")
    path = tmp_path / "data"
    track_here(str(upstream.path), "web", path)
    return path


def _post(port: int, body: bytes, headers: dict[str, str], timeout: float = 10) -> tuple[int, bytes, float]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    started = time.monotonic()
    try:
        headers = {k: v for k, v in headers.items() if k.lower() != "content-length"}  # the real length, always
        conn.request("POST", "/slack/events", body=body, headers=headers)
        response = conn.getresponse()
        return response.status, response.read(), time.monotonic() - started
    finally:
        conn.close()


def _stream_oversized(port: int, declared: int | None, seconds: float) -> tuple[bytes, float, int]:
    """POST headers declaring `declared` bytes (chunked when None), then send junk as fast as the
    server takes it until it answers or closes; (first bytes of the answer, seconds to it, bytes sent)."""
    junk = (MARK * 7000).encode()[:65536]
    sock = socket.create_connection(("127.0.0.1", port), timeout=seconds)
    started = time.monotonic()
    sent = 0
    head = [f"POST /slack/events HTTP/1.1", "Host: 127.0.0.1", "Content-Type: application/x-www-form-urlencoded",
            f"X-Slack-Signature: v0={MARK}", f"X-Slack-Request-Timestamp: {MARK}"]
    head.append(f"Content-Length: {declared}" if declared is not None else "Transfer-Encoding: chunked")
    try:
        sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode())
        sock.setblocking(False)
        answer = b""
        while time.monotonic() - started < seconds:
            try:
                answer += sock.recv(4096)
                if answer:
                    break
            except BlockingIOError:
                pass
            try:
                chunk = junk if declared is not None else b"%x\r\n%s\r\n" % (len(junk), junk)
                sent += sock.send(chunk)
            except BlockingIOError:
                time.sleep(0.001)
            except OSError:  # the server closed: read what it said
                sock.setblocking(True)
                try:
                    answer += sock.recv(4096)
                except OSError:
                    pass
                break
        return answer, time.monotonic() - started, sent
    finally:
        sock.close()


def test_oversized_bodies_are_refused_before_they_are_read(data, stub, tmp_path):
    with Serve(data, stub, logs=tmp_path / "logs") as serve:
        before = rss_kb(serve.proc.pid)
        declared, took, sent = _stream_oversized(serve.port, BIG, 10)
        chunked, took_chunked, sent_chunked = _stream_oversized(serve.port, None, 10)
        after = rss_kb(serve.proc.pid)
        status, _, ack = serve.post(stub.slash_fields("web", response_name="after"))
        assert status == 200 and ack < 3
        stub.wait_for_response("after", timeout=15)
        assert serve.stop() == 0
    print(f"declared 300 MB: {declared[:12]!r} after {took:.3f}s, {sent / 2**20:.1f} MiB sent; chunked: "
          f"{chunked[:12]!r} after {took_chunked:.3f}s, {sent_chunked / 2**20:.1f} MiB sent; "
          f"RSS {before / 1024:.1f} -> {after / 1024:.1f} MiB")
    assert declared.startswith(b"HTTP/1.1 413") and took < 1.0
    assert chunked.startswith(b"HTTP/1.1 413") and took_chunked < 2.0 and sent_chunked < 8 * 2**20
    assert after - before < 20 * 1024  # not one of those bodies was held in memory
    _no_request_content(serve)


def _no_request_content(serve: Serve) -> None:
    written = serve.stdout + serve.stderr
    assert MARK not in written and "Traceback" not in written


def _signed(body: bytes | str, content_type: str = "application/x-www-form-urlencoded",
            timestamp: int | str | None = None) -> tuple[bytes, dict[str, str]]:
    return signed_request(SIGNING_SECRET, body, content_type, timestamp)


def _malformed_cases(stub) -> dict[str, tuple[bytes, dict[str, str]]]:
    fields = stub.slash_fields(f"web {MARK}", response_name="malformed")
    good_body, good_headers = signed_slash_command(SIGNING_SECRET, fields)
    bad_ts = dict(good_headers, **{"X-Slack-Request-Timestamp": "abc",
                                   "X-Slack-Signature": slack_signature(SIGNING_SECRET, "abc", good_body)})
    invalid_utf8 = good_body + b"&x=%s\xff\xfe" % MARK.encode()
    stamp = str(int(time.time()))
    utf8_headers = dict(good_headers, **{"X-Slack-Request-Timestamp": stamp, "Content-Length": str(len(invalid_utf8)),
                                         "X-Slack-Signature": "v0=" + hmac.new(SIGNING_SECRET.encode(), b"v0:%s:%s" % (
                                             stamp.encode(), invalid_utf8), hashlib.sha256).hexdigest()})
    no_actions = block_actions_payload("gad_share", f"web {MARK}")
    no_actions.pop("actions")
    return {
        "timestamp abc, signature valid for it": (good_body, bad_ts),
        "body not UTF-8 (signed)": (invalid_utf8, utf8_headers),
        "payload= not JSON (signed)": _signed(f"payload=%7B{MARK}"),
        "payload= a JSON list (signed)": _signed(f"payload=%5B%22{MARK}%22%5D"),
        "button click without actions (signed)": signed_interaction(SIGNING_SECRET, no_actions),
        "event body not an object (signed)": _signed(json.dumps([MARK]), "application/json"),
        "event body not JSON (signed)": _signed("{" + MARK, "application/json"),
        "unsigned": (good_body, {k: v for k, v in good_headers.items() if not k.startswith("X-Slack")}),
        "signature of other bytes": (good_body + b"&extra=1", good_headers),
        "body of another content type (signed)": _signed(MARK, "text/plain"),
    }


def _odd_shapes() -> dict[str, tuple[bytes, dict[str, str]]]:
    """Issue 22: signed, well-formed JSON, but not the shape Bolt assumes (each was a 500 and a traceback).

    Only the holder of the signing secret can send these, so they are not part of the strangers'
    burst below; they must still end in one status and one log line.
    """
    return {
        "event nested 100,000 deep (signed)": _signed('{"type":"event_callback","event":' + "[" * 100_000
                                                      + "]" * 100_000 + "}", "application/json"),
        "event as a string (signed)": _signed(json.dumps({"type": "event_callback", "event": MARK}),
                                              "application/json"),
        "event type not a string (signed)": _signed(json.dumps({"type": "event_callback",
                                                                "event": {"type": [MARK]}}), "application/json"),
        "view as a number (signed)": _signed("payload=" + urllib.parse.quote(json.dumps(
            {"type": "view_submission", "view": 5, "user": {"id": "U1"}, "x": MARK}))),
        "actions' action_id a list (signed)": _signed("payload=" + urllib.parse.quote(json.dumps(
            dict(block_actions_payload("gad_share", f"web {MARK}"),
                 actions=[{"action_id": [MARK], "value": "web"}])))),
        "payload nested 5,000 deep (signed)": _signed("payload=" + urllib.parse.quote(
            '{"type":"block_actions","x":' + "{\"a\":" * 5_000 + "1" + "}" * 5_000 + "}")),
    }


def test_malformed_requests_get_400_or_401_and_one_log_line(data, stub, tmp_path):
    with Serve(data, stub, logs=tmp_path / "logs") as serve:
        results = {}
        first = len(serve.stderr.splitlines())
        for case, (body, headers) in (_malformed_cases(stub) | _odd_shapes()).items():
            lines = len(serve.stderr.splitlines())
            status, _, took = _post(serve.port, body, headers)
            deadline = time.monotonic() + 3  # the refusal's line is written before the answer; the file may lag
            while len(serve.stderr.splitlines()) == lines and time.monotonic() < deadline:
                time.sleep(0.05)
            new = serve.stderr.splitlines()[lines:]
            results[case] = (status, new)
            print(f"{case}: {status} in {1000 * took:.0f} ms; log: {new}")
        # serve's SIGTERM lets whatever a request started finish (or tells its person) before it exits: after it, a
        # second line or an answer of any of these requests would be there
        assert serve.stop() == 0
    assert stub.responses("malformed") == []  # nothing ran
    for case, (status, new) in results.items():
        assert status in (400, 401, 415), (case, status)
        assert len(new) == 1 and "refused a request to /slack/events" in new[0], (case, new)
    written = serve.stderr.splitlines()[first:]
    before_stop = written[:next(n for n, line in enumerate(written) if "received signal" in line)]
    assert before_stop == [line for _, new in results.values() for line in new]  # one line each, and no later one
    _no_request_content(serve)


def test_a_replayed_request_is_refused_even_after_a_restart(data, stub, tmp_path):
    """Issue 22: the guard lived in memory, so the same signed bytes ran again after a restart."""
    body, headers = signed_slash_command(SIGNING_SECRET, stub.slash_fields("web", response_name="once"))
    with Serve(data, stub, logs=tmp_path / "logs") as serve:
        first = _post(serve.port, body, headers)
        stub.wait_for_response("once", timeout=15)
        second = _post(serve.port, body, headers)
        fresh = serve.post(stub.slash_fields("web", response_name="fresh"))  # a new request still works
        stub.wait_for_response("fresh", timeout=15)
        assert serve.stop() == 0
    with Serve(data, stub, logs=tmp_path / "logs-2") as again:
        third = _post(again.port, body, headers)
        assert again.stop() == 0  # its SIGTERM answers (or tells) every question it took before it exits
    answers = stub.responses("once")
    assert first[0] == 200 and second[0] == 401 and fresh[0] == 200
    assert third[0] == 401  # the restarted server remembers the signature
    assert len(answers) == 1  # the command ran once
    assert "replay" in serve.stderr and "replay" in again.stderr


def test_remembered_signatures_are_forgotten_once_out_of_the_window(tmp_path):
    """The table holds a signature while a copy could pass the window check, then prunes it."""
    from bot.faces.slack import SIGNATURE_WINDOW_SECONDS, RequestGate
    from bot.store.index import Index

    index = Index(tmp_path / "index.sqlite")
    clock = [1_800_000_000.0]
    gate = RequestGate(SIGNING_SECRET, index, clock=lambda: clock[0])
    fields = {"command": "/gad", "text": "help", "user_id": "U1", "team_id": "T1"}
    body = urllib.parse.urlencode(fields).encode()
    headers = {"x-slack-request-timestamp": str(int(clock[0])), "content-type": "application/x-www-form-urlencoded",
               "x-slack-signature": slack_signature(SIGNING_SECRET, str(int(clock[0])), body)}
    assert gate.check(headers, body).status == 200
    assert gate.check(headers, body).status == 401
    clock[0] += SIGNATURE_WINDOW_SECONDS + 2  # the timestamp is stale now: refused for that, and forgotten
    other = {"x-slack-request-timestamp": str(int(clock[0])), "content-type": "application/x-www-form-urlencoded",
             "x-slack-signature": slack_signature(SIGNING_SECRET, str(int(clock[0])), body)}
    assert gate.check(headers, body).status == 401
    assert gate.check(other, body).status == 200  # writing this one pruned the first
    remembered = [row[0] for row in index.execute("SELECT signature FROM slack_requests")]
    assert remembered == [other["x-slack-signature"]]


def test_no_request_content_reaches_the_log_even_at_debug(data, stub, tmp_path):
    """Bolt logs bodies in several lines (bad signature, unhandled request, DEBUG responses)."""
    with Serve(data, stub, logs=tmp_path / "logs", GAD_LOG_LEVEL="DEBUG") as serve:
        cases = [
            signed_slash_command("not-the-secret", stub.slash_fields(f"web {MARK}")),  # bad signature
            signed_slash_command(SIGNING_SECRET, stub.slash_fields(f"web since:{MARK}", response_name="typo")),
            signed_slash_command(SIGNING_SECRET, stub.slash_fields(f"{MARK}", command="/other")),  # unhandled
            signed_slash_command(SIGNING_SECRET, stub.slash_fields(f"nosuchrepo{MARK}", response_name="unknown")),
            signed_interaction(SIGNING_SECRET, block_actions_payload("gad_share", f"web {MARK}",
                                                                     response_url=stub.response_url("share"))),
        ]
        statuses = [_post(serve.port, body, dict(headers, **{"X-Mark": MARK}))[0] for body, headers in cases]
        stub.wait_for_response("unknown", timeout=15)
        stub.wait_for_response("share", timeout=15)
        assert serve.stop() == 0  # whatever the requests started has finished and logged before serve exits
    print(statuses)
    assert statuses == [401, 200, 404, 200, 200]
    assert MARK in json.dumps(stub.responses("unknown"))  # the user is told what they typed ...
    _no_request_content(serve)  # ... the log is not


def _hostile_load(port: int, cases: list[tuple[bytes, dict[str, str]]], seconds: float, counts) -> None:
    """20 threads streaming 300 MB bodies, 20 looping malformed requests, for `seconds` (in its own
    process, so that the test's own clock is not starved of its interpreter lock)."""
    stop = threading.Event()
    tally = {"oversized": 0, "malformed": 0}

    def oversized():
        while not stop.is_set():
            try:
                _stream_oversized(port, BIG, 5)
            except OSError:
                pass
            tally["oversized"] += 1

    def malformed(i):
        while not stop.is_set():
            body, headers = cases[i % len(cases)]
            try:
                _post(port, body, headers, timeout=10)
            except OSError:
                pass
            tally["malformed"] += 1

    threads = [threading.Thread(target=oversized) for _ in range(20)]
    threads += [threading.Thread(target=malformed, args=(i,)) for i in range(20)]
    for t in threads:
        t.start()
    time.sleep(seconds)
    stop.set()
    for t in threads:
        t.join(timeout=15)
    counts.put(tally)


def test_acks_stay_fast_during_a_burst_of_oversized_and_malformed_requests(data, stub, tmp_path):
    """20 clients streaming 300 MB bodies and 20 sending malformed or unsigned requests in a loop,
    while 40 real signed slash commands arrive: their acks stay fast and all are answered.

    Fast: p95 under 300 ms, or under twice the p95 of the same 40 commands without the burst when
    other jobs on a shared machine make even that slower (before the gate: 19 of 20 over 3 s)."""
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    with Serve(data, stub, logs=tmp_path / "logs") as serve:
        calm = []
        for i in range(40):
            calm.append(serve.post(stub.slash_fields("web", response_name=f"calm-{i}", user_id=f"UCALM{i:03d}"),
                                   timeout=10)[2])
            time.sleep(0.05)
        calm.sort()
        counts = context.Queue()
        hostile = context.Process(target=_hostile_load, args=(serve.port, list(_malformed_cases(stub).values()), 5.0,
                                                               counts))
        hostile.start()
        time.sleep(1.0)  # the burst is under way
        acks = []
        for i in range(40):
            # 40 people: one person may have only GAD_REPORTS_PER_USER reports under way at once
            status, _, took = serve.post(stub.slash_fields("web", response_name=f"real-{i}", user_id=f"UREAL{i:03d}"),
                                         timeout=10)
            assert status == 200
            acks.append(took)
            time.sleep(0.05)
        tally = counts.get(timeout=60)
        hostile.join(timeout=30)
        for i in range(40):
            stub.wait_for_response(f"real-{i}", timeout=30)
        log_bytes = len(serve.stderr)
        assert serve.stop() == 0
    acks.sort()
    p95 = acks[int(0.95 * len(acks)) - 1]
    calm_p95 = calm[int(0.95 * len(calm)) - 1]
    print(f"burst: {tally['oversized']} oversized and {tally['malformed']} malformed requests; real acks "
          f"p50 {1000 * statistics.median(acks):.0f} ms, p95 {1000 * p95:.0f} ms, max {1000 * acks[-1]:.0f} ms "
          f"(without the burst: p95 {1000 * calm_p95:.0f} ms); log {log_bytes} bytes")
    assert tally["oversized"] > 100 and tally["malformed"] > 100  # the burst really ran alongside
    assert p95 < max(0.3, 2 * calm_p95) and acks[-1] < 3
    _no_request_content(serve)


def _idle_sockets(port: int, count: int) -> list[socket.socket]:
    """`count` connections that send nothing (each accepted by the kernel, then left to the server)."""
    return [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(count)]


def _closed_by_server(sock: socket.socket, within: float) -> bool:
    """Whether the server closes `sock` within `within` seconds (read returns end of file or a reset)."""
    sock.settimeout(within)
    try:
        return sock.recv(1) == b""
    except (ConnectionResetError, BrokenPipeError):
        return True
    except (socket.timeout, OSError):
        return False


def test_idle_and_trickling_connections_do_not_silence_the_endpoint(data, stub, tmp_path):
    """Slowloris (issue 22): idle and trickling sockets, unauthenticated, must not keep Slack out.

    Before: waitress's 100 connections were taken by 150 idle sockets and a signed command waited
    for their 30 s timeout (the ack never came within Slack's 3 s). Now: 150 idle sockets are
    nothing; 1,100 (more than the 1,000 allowed) make room by closing the ones idle longest; one
    that trickles a header byte every half second is closed once its request has taken 10 s.
    """
    from bot.faces.server import CONNECTION_LIMIT, REQUEST_SECONDS

    with Serve(data, stub, logs=tmp_path / "logs") as serve:
        idle = _idle_sockets(serve.port, 150)
        status, _, ack = serve.post(stub.slash_fields("web", response_name="past-150"), timeout=10)
        assert status == 200 and ack < 3, (status, ack)
        stub.wait_for_response("past-150", timeout=15)

        idle += _idle_sockets(serve.port, CONNECTION_LIMIT + 100 - len(idle))
        time.sleep(0.5)  # the server has taken them all in (or had to make room)
        status, _, ack = serve.post(stub.slash_fields("web", response_name="past-limit"), timeout=10)
        assert status == 200 and ack < 3, (status, ack)
        stub.wait_for_response("past-limit", timeout=15)
        shed = sum(_closed_by_server(sock, 0.01) for sock in idle[:200])  # the oldest went first
        for sock in idle:
            sock.close()

        trickler = socket.create_connection(("127.0.0.1", serve.port), timeout=10)
        head = b"POST /slack/events HTTP/1.1\r\nHost: x\r\nX-Pad: " + b"a" * 1000
        started, closed = time.monotonic(), False
        for byte in head:
            try:
                trickler.send(bytes([byte]))
            except OSError:
                closed = True
                break
            if _closed_by_server(trickler, 0.5):
                closed = True
                break
            if time.monotonic() - started > REQUEST_SECONDS + 10:
                break
        trickled = time.monotonic() - started
        trickler.close()
        assert serve.stop() == 0
    print(f"150 idle: ack {ack:.3f}s; at the limit {shed} of the 200 oldest idle connections were closed; "
          f"a trickling request was closed after {trickled:.1f}s")
    assert shed > 0
    assert closed and trickled < REQUEST_SECONDS + 5
    assert "Traceback" not in serve.stderr
