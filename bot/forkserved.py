"""The first module gad-bot's fork server imports (bot/spawning.py), imported nowhere else.

multiprocessing prepares every process it starts as if it needed the parent's `__main__`: a forked child would run
the main module again (`gad-bot`'s script: `bot.faces.cli` and all it imports, ~0.3 s), though every target,
initializer and argument gad-bot hands a child lives in a bot module that pickle imports by name, and nothing of
`__main__` is ever sent. The fork server exists only to fork gad-bot's children, so here, and only here, that step
is skipped.

And a client that goes between connecting and asking does not end the server. serve's sync workers ask serve's fork
server for their fetches (bot/spawning.py), and a worker is killed at its job's time bound or stopped by serve's
shutdown, at any moment; multiprocessing's server skips a request aborted with ECONNABORTED but ends on the EOFError
that such a hang-up gives (a traceback in serve's log, and every later child of serve then waits for a new server).
Nor does a child whose asker went after asking, before it said what to run: the child ends quietly, where
multiprocessing printed the unpickling's traceback into serve's log.
"""

import errno
import pickle
from multiprocessing import reduction, spawn


def _no_main(*_args) -> None:
    """A child of gad-bot's fork server needs nothing of the parent's main module."""


spawn._fixup_main_from_name = _no_main
spawn._fixup_main_from_path = _no_main


_receive_fds = reduction.recvfds


def _receive_fds_from_a_client_that_may_have_gone(sock, size):
    try:
        return _receive_fds(sock, size)
    except EOFError:  # nothing sent: the client ended after connecting
        raise ConnectionAbortedError(errno.ECONNABORTED, "the client hung up before asking for a child") from None


reduction.recvfds = _receive_fds_from_a_client_that_may_have_gone


_run_child = spawn._main


def _run_child_unless_its_asker_has_gone(fd, parent_sentinel):
    try:
        return _run_child(fd, parent_sentinel)  # reads what to run from the asker's pipe, then runs it
    except EOFError:  # the pipe closed before anything was said: the asker ended
        return 1
    except pickle.UnpicklingError as error:  # it ended in the middle of saying it
        if "truncated" not in str(error):
            raise
        return 1


spawn._main = _run_child_unless_its_asker_has_gone
