"""The threaded HTTP server under every loopback stand-in (Slack, forges, git over smart HTTP)."""

from __future__ import annotations

import sys
import traceback
from http.server import ThreadingHTTPServer


class LoopbackServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def handle_error(self, request, client_address) -> None:
        # A client hanging up mid-answer (a fetch given a 500, a killed process) is part of what tests do. Its
        # traceback goes to the test process's own stderr: socketserver's default writes to sys.stderr, which is a
        # command's captured stderr while a test runs that command in this process (tests/inprocess.py).
        print(f"loopback server: error answering {client_address}", file=sys.__stderr__)
        traceback.print_exc(file=sys.__stderr__)
