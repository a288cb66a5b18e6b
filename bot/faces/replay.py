"""The replay guard of Slack's HTTP requests: each signed request is accepted once within its window.

Its memory is the index (`slack_requests`), so a restart forgets nothing. Recording a signature is a
write, and a full data disk refuses writes: before, every Slack request then failed with HTTP 500,
reports included, though answering them only reads. Now, while the index cannot record:

- a signature is checked against the index (a read: one recorded before the disk filled is still a
  replay) and against a memory of its own, and recorded in that memory, so a replay is refused
  exactly as before: a guard that cannot record must never wave replays through;
- that memory is bounded (MEMORY_LIMIT signatures, each kept only until its window closes, five
  minutes and a second): past the bound a request is refused with 503 rather than accepted unguarded
  (Slack retries a 503 itself), so a flood cannot grow serve's memory;
- the first write that succeeds again ends it (one log line each way); signatures still in memory
  keep guarding until their windows close, so nothing accepted meanwhile can be replayed after it.

A restart while the disk is full forgets the memory; that is the one gap, as short as the window.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict

from ..faults import is_disk_full

log = logging.getLogger(__name__)

# Slack sends a few requests a second at most to one app; five minutes of a hundred a second fit.
MEMORY_LIMIT = 30_000


class ReplayGuard:
    def __init__(self, index, limit: int = MEMORY_LIMIT):
        self._index = index
        self._limit = limit
        self._memory: OrderedDict[str, int] = OrderedDict()  # signature -> until (epoch s), oldest first
        self._lock = threading.Lock()
        self.in_memory = False  # the index refused the last write: signatures are kept here

    def first_time(self, signature: str, until: int, now: float) -> bool | None:
        """True: never seen, now recorded; False: a replay; None: cannot be recorded anywhere (refuse with 503)."""
        with self._lock:
            while self._memory and next(iter(self._memory.values())) < now:  # windows close in arrival order
                self._memory.popitem(last=False)
            if signature in self._memory:
                return False
        try:
            new = self._index.record_slack_request(signature, until, now)
        except Exception as error:
            if not is_disk_full(error):
                raise
            return self._remember(signature, until, now)
        if self.in_memory:
            self.in_memory = False
            log.info("the replay guard records in the index again (the data disk has room)")
        return new

    def _remember(self, signature: str, until: int, now: float) -> bool | None:
        if not self.in_memory:
            self.in_memory = True
            log.warning("the data disk is full: the replay guard keeps Slack's request signatures in memory "
                        "(at most %d, each for its five-minute window) until the index can record them again",
                        self._limit)
        if self._index.slack_request_seen(signature, now):  # recorded before the disk filled
            return False
        with self._lock:
            if signature in self._memory:
                return False
            if len(self._memory) >= self._limit:
                return None
            self._memory[signature] = until
            return True
