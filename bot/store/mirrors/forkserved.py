"""What the fork server of fetch children preloads (fetchchild._child_context), imported nowhere else.

multiprocessing prepares every process it starts as if it needed the parent's `__main__`: a forked fetch
child would run the main module again (`gad-bot`'s script: `bot.faces.cli` and all it imports, ~0.3 s),
though its target is `bot.store.mirrors.fetchchild._child_main` and nothing of `__main__` is ever sent to it. This
process exists only to fork fetch children, so here, and only here, that step is skipped; pygit2 and the
fetch are imported once, before any fork.
"""

from multiprocessing import spawn

from . import fetchchild  # noqa: F401  (ready in every fork: pygit2 and the fetch)


def _no_main(*_args) -> None:
    """A fetch child needs nothing of the parent's main module."""


spawn._fixup_main_from_name = _no_main
spawn._fixup_main_from_path = _no_main
