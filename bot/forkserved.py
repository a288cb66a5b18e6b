"""The first module gad-bot's fork server imports (bot/spawning.py), imported nowhere else.

multiprocessing prepares every process it starts as if it needed the parent's `__main__`: a forked child would run
the main module again (`gad-bot`'s script: `bot.faces.cli` and all it imports, ~0.3 s), though every target,
initializer and argument gad-bot hands a child lives in a bot module that pickle imports by name, and nothing of
`__main__` is ever sent. The fork server exists only to fork gad-bot's children, so here, and only here, that step
is skipped.
"""

from multiprocessing import spawn


def _no_main(*_args) -> None:
    """A child of gad-bot's fork server needs nothing of the parent's main module."""


spawn._fixup_main_from_name = _no_main
spawn._fixup_main_from_path = _no_main
