"""Repository names that only look like others: a listing's `evil/рlain` (a Cyrillic р) beside `evil/plain`.

    why = lookalike(name, others)   # None, or why `name` is refused

A forge's listing is a stranger's word, and a tracked name is what people type, read in digests and
subscribe channels to: a name that reads as another one would have them count, or be told about, the
wrong repository. GitHub, GitLab and Gitea name repositories in ASCII only ([A-Za-z0-9._-]), so a
non-ASCII letter in a listed name is already unusual; the rule below refuses only what can pass for
something else, so a name written wholly in one script (`acme/данные`) is still tracked.

The rule (a small subset of Unicode's UTS #39 checks, stdlib only):

1. a name that NFKC normalisation changes is refused: compatibility forms (fullwidth `ｗｅｂ`, the
   ligature `ﬁ`, superscripts, a Kelvin sign for K) are by definition variants of other characters;
2. a name one of whose parts (owner, group, repository: between slashes) has letters of more than one
   script is refused (`рlain`: Cyrillic and Latin),
   except the mixes a real language writes (Han with Hiragana, Katakana, Hangul or Bopomofo, each
   with Latin: UTS #39 "highly restrictive"). A letter's script is the first word of its Unicode name
   (LATIN, CYRILLIC, GREEK, CJK, HIRAGANA...): coarse, but it is what tells `р` from `p`;
3. a non-ASCII name whose skeleton equals the skeleton of another name (one tracked, or another
   of the same listing) is refused. The skeleton is the name casefolded, with each letter that looks
   like a Latin one (Cyrillic а е о р с у х і ј ѕ ԁ ԛ ԝ, Greek ο α ν ι κ τ...) replaced by it, after
   NFKD with the combining marks dropped (`wéb` -> `web`). An ASCII name is never refused by this
   rule: ASCII names side by side are the forge's own (`rn` and `m` may both exist there), and the
   one refused is always the name that is not plain ASCII.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable

# Letters of other scripts that render like a Latin letter in common fonts (after casefolding), from Unicode's
# confusables.txt: enough to make a look-alike of any ASCII name; a name of several scripts is refused anyway.
_LIKE_LATIN = str.maketrans({
    # Cyrillic
    "а": "a", "в": "b", "е": "e", "ё": "e", "к": "k", "м": "m", "н": "h", "о": "o", "р": "p", "с": "c",
    "т": "t", "у": "y", "х": "x", "ѕ": "s", "і": "i", "ї": "i", "ј": "j", "һ": "h", "ԁ": "d", "ԛ": "q",
    "ԝ": "w", "ӏ": "l", "ɡ": "g", "ь": "b", "ѵ": "v", "ү": "y", "ԍ": "g", "ԧ": "h",
    # Greek
    "α": "a", "β": "b", "γ": "y", "ε": "e", "η": "n", "ι": "i", "κ": "k", "ν": "v", "ο": "o", "ρ": "p",
    "τ": "t", "υ": "u", "χ": "x", "ω": "w", "ϲ": "c", "ϳ": "j", "ѡ": "w",
    # Latin letters outside ASCII that read as ASCII ones
    "ı": "i", "ȷ": "j", "ℓ": "l", "ſ": "s", "ɑ": "a", "ɩ": "i", "ʀ": "r", "ᴅ": "d",
})

# Script mixes a real language writes (UTS #39 "highly restrictive"); any other mix is refused.
_ALLOWED_MIXES = (frozenset({"LATIN", "CJK", "HIRAGANA", "KATAKANA"}), frozenset({"LATIN", "CJK", "BOPOMOFO"}),
                  frozenset({"LATIN", "CJK", "HANGUL"}))


def scripts(name: str) -> set[str]:
    """The scripts of a name's letters, as the first word of each letter's Unicode name (LATIN, CYRILLIC...)."""
    found = set()
    for char in name:
        if unicodedata.category(char).startswith("L"):
            found.add(unicodedata.name(char, "UNKNOWN").split(" ", 1)[0])
    return found


def skeleton(name: str) -> str:
    """What a name looks like: casefolded, marks dropped, letters that look Latin replaced by that letter."""
    decomposed = unicodedata.normalize("NFKD", name.casefold())
    bare = "".join(c for c in decomposed if not unicodedata.combining(c))
    return unicodedata.normalize("NFC", bare).translate(_LIKE_LATIN)


def lookalike(name: str, others: Iterable[str]) -> str | None:
    """Why `name` is refused as a look-alike (rules 1-3 of the module docstring), or None when it is not one."""
    if name.isascii():
        return None
    if unicodedata.normalize("NFKC", name) != name:
        return "its name holds compatibility characters (fullwidth or styled letters) that stand for other ones"
    for segment in name.split("/"):  # an owner and its repository may each be named in a script of their own
        found = scripts(segment)
        if len(found) > 1 and not any(found <= allowed for allowed in _ALLOWED_MIXES):
            return f"its name mixes letters of several scripts ({', '.join(sorted(s.title() for s in found))})"
    mine = skeleton(name)
    for other in others:
        if other != name and skeleton(other) == mine:
            return f"its name looks like `{other}` but is spelled with other letters"
    return None


def twin(name: str, others: Iterable[str]) -> str | None:
    """The other name `name` reads as (same skeleton), or None."""
    mine = skeleton(name)
    return next((other for other in others if other != name and skeleton(other) == mine), None)


def refuse_new_name(name: str, others: Iterable[str], kind: str = "repository") -> None:
    """A name about to be given to a repository (`track URL as:NAME`, `gad-bot track --name`, or the one taken from
    the URL) or to a new project (`project add NAME ...`, kind "project"): refused, in one sentence saying what to
    type instead, when it is a look-alike of a tracked name or could pass for one (rules 1-3). A forge's listing is
    checked name by name in bot/engine/forgeorgs.py."""
    from ..errors import QueryError, literal

    others = list(others)
    why = lookalike(name, others)
    if why is None:
        return
    same = twin(name, others)
    plain = skeleton(name)
    if kind == "project":
        if same is not None:
            raise QueryError(f"{literal(name)} looks like {literal(same)}, which is tracked, but is spelled with other "
                             f"letters; name the project in plain letters, e.g. `{same}-all`.")
        instead = f", e.g. `{plain}`" if plain.isascii() and plain not in others else ""
        raise QueryError(f"{literal(name)} cannot be a project's name: {why}; name it in one script{instead}.")
    if same is not None:
        raise QueryError(f"{literal(name)} looks like {literal(same)}, which is tracked, but is spelled with other "
                         f"letters; ask about {literal(same)}, or track this one under a name in plain letters with "
                         f"`as:NAME` (CLI: --name), e.g. `as:{same}-2`.")
    instead = f", e.g. `as:{plain}`" if plain.isascii() and plain not in others else ""
    raise QueryError(f"{literal(name)} cannot be a repository's name: {why}; track it under a name in one script "
                     f"with `as:NAME` (CLI: --name){instead}.")
