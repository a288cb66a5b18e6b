"""multiprocessing's spawn context for gad-bot's worker processes, whose children do not run the CLI again.

multiprocessing prepares every spawned child as if it needed the parent's `__main__`: a report worker, a sync worker
or an index worker of `gad-bot serve` (or `sync`) would import `bot.faces.cli` again as `__mp_main__` (`gad-bot`'s
console script, or `python -m bot.faces.cli`), and with it click: ~20 ms of CPU in every such process, ~4 per
serve, though its targets, initializers and arguments all live in bot modules that pickle imports by name and
nothing of the CLI is ever sent to it. So where the parent's main module is gad-bot's CLI (and only there: a
script of someone else's may define a target in `__main__`), the children are started without it. The fork
server's children skip it on their own side (bot/store/mirrors/forkserved.py).
"""

from __future__ import annotations

import multiprocessing
import sys
from multiprocessing import spawn

CLI = "bot.faces.cli"  # by name: the lowest floor imports no face (tests/test_layers.py)
_MAIN_KEYS = ("init_main_from_name", "init_main_from_path")


def spawn_context():
    """The "spawn" context, with the preparation of its children wrapped once (see the module docstring)."""
    if getattr(spawn.get_preparation_data, "_gad_bot", False) is False:
        spawn.get_preparation_data = _without_the_cli(spawn.get_preparation_data)
    return multiprocessing.get_context("spawn")


def main_is_the_cli() -> bool:
    """Whether this process's `__main__` is gad-bot's CLI: `python -m bot.faces.cli`, or the console script
    `gad-bot` (which is `from bot.faces.cli import main` and a call)."""
    main = sys.modules.get("__main__")
    if getattr(getattr(main, "__spec__", None), "name", None) == CLI:
        return True
    cli = sys.modules.get(CLI)
    return cli is not None and main is not cli and getattr(main, "main", None) is getattr(cli, "main", object())


def _without_the_cli(prepare):
    def get_preparation_data(name):
        data = prepare(name)
        if main_is_the_cli():
            for key in _MAIN_KEYS:
                data.pop(key, None)
        return data

    get_preparation_data._gad_bot = True
    return get_preparation_data
