"""What a person reads when a Slack answer fails: the error's own sentence, or a reference for the logs."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from ..errors import GadError, for_member
from ..faults import DiskFullError, IndexDamagedError, is_damaged_index, is_disk_full
from ..render import blocks as kit

log = logging.getLogger(__name__)


def fault_sentence(error: BaseException) -> str | None:
    """The sentence for a fault of the data directory (a full disk, a damaged index), or None for anything else."""
    if is_disk_full(error):
        return str(DiskFullError.at())
    if is_damaged_index(error):
        return str(IndexDamagedError.sentence())
    return None


@contextmanager
def answered_failures(send: Callable[[str, list[dict]], None], doing: str, *,
                      is_admin: Callable[[], bool] = lambda: False) -> Iterator[None]:
    """Run the block; a GadError is sent as its sentence, anything else is logged with a reference the
    person is given (never a stack trace). `doing` names the work in the log line ("sharing a report").
    A GadError that names the server's insides reaches someone `is_admin` denies as a sentence and a
    reference (bot.errors.for_member)."""
    try:
        yield
    except GadError as error:
        if error.operator_detail and not is_admin():
            send(*kit.error_blocks(*for_member(error)))
        else:
            send(*kit.error_blocks(str(error)))
    except Exception as error:
        reference = uuid.uuid4().hex[:8]
        sentence = fault_sentence(error)
        if sentence is not None:  # a full disk or a damaged index: what it is, in one log line, not a traceback
            log.error("%s failed (reference %s): %s", doing, reference, error, extra={"reference": reference})
        else:
            log.exception("internal error %s (reference %s)", doing, reference, extra={"reference": reference})
        send(*kit.error_blocks(sentence or "Something went wrong on gad-bot's side; the operator can find the "
                               "details in the logs.", reference))
