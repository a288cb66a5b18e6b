"""Repository names that only look like others (bot/engine/lookalikes.py): each rule of its docstring, one row each."""

from __future__ import annotations

import pytest

from bot.engine.lookalikes import lookalike, skeleton

TRACKED = ("evil/plain", "evil/payp", "acme/web")


@pytest.mark.parametrize("name, why", [
    ("evil/plain", None),  # itself
    ("acme/api", None),  # ASCII is never refused by the look-alike rule
    ("acme/rn", None),  # ...even what reads like another ASCII name
    ("acme/данные", None),  # one script in each part: a name in Russian is a name
    ("acme/日本語テスト", None),  # Han with Katakana: Japanese writes so
    ("evil/\u0440lain", "its name mixes letters of several scripts (Cyrillic, Latin)"),  # р: CYRILLIC SMALL LETTER ER
    ("evil/pl\u03b1in", "its name mixes letters of several scripts (Greek, Latin)"),  # α
    ("evil/\uff50lain", "its name holds compatibility characters (fullwidth or styled letters) that stand for other "
                        "ones"),  # ｐ: FULLWIDTH LATIN SMALL LETTER P
    ("evil/\u0440\u0430\u0443\u0440", "its name looks like `evil/payp` but is spelled with other letters"),  # раур
    ("acme/w\u00e9b", "its name looks like `acme/web` but is spelled with other letters"),  # é
])
def test_lookalikes(name, why):
    assert lookalike(name, TRACKED) == why


def test_the_skeleton_is_what_a_reader_sees():
    assert skeleton("EVIL/\u0420\u0430\u0443\u0420") == "evil/payp"  # capitals casefold first
    assert skeleton("acme/W\u00e9b") == "acme/web"
