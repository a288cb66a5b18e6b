"""Which tracked repository or organization a pasted link names, and the figures of its card.

A link unfurls (and a message shortcut answers) only for what is already tracked: the link is
compared with the sources of tracked repositories and with the tracked forge organizations, and
nothing here ever fetches, resolves or tracks anything. A link names a repository when its host
is the source's host and its path starts with the source's path (so a file or branch page of the
repository counts too); it names an organization only when its path is the owner itself.
"""

from __future__ import annotations

import re
import urllib.parse
from dataclasses import dataclass
from datetime import date

from .audiences import OPERATOR, Viewer
from .query import parse_query

MAX_URL_CHARS = 2000  # longer "links" in a message are not links gad-bot could know
_SCP_LIKE = re.compile(r"^[\w.-]+@([\w.-]+):(?!/)(.+)$")  # git@github.com:owner/name.git
_URL = re.compile(r"https?://[^\s<>|\"'`]{1,2000}")


@dataclass(frozen=True)
class Place:
    """A web or git address reduced to what identifies a repository: host (with a port) and path segments."""

    host: str
    segments: tuple[str, ...]

    @classmethod
    def of(cls, address: str) -> "Place | None":
        if not address or len(address) > MAX_URL_CHARS:
            return None
        scp = _SCP_LIKE.match(address)
        if scp:
            host, path = scp.group(1), scp.group(2)
        else:
            try:
                parts = urllib.parse.urlsplit(address)
                port = parts.port
            except ValueError:
                return None
            if parts.scheme not in ("http", "https", "ssh", "git") or not parts.hostname:
                return None
            host = parts.hostname + (f":{port}" if port and port not in (80, 443, 22, 9418) else "")
            path = parts.path
        segments = [s for s in urllib.parse.unquote(path).split("/") if s]
        if segments and segments[-1].lower().endswith(".git"):
            segments[-1] = segments[-1][:-4]
        segments = [s.lower() for s in segments if s]  # forges treat owner and name case-insensitively
        return cls(host.lower().removeprefix("www."), tuple(segments)) if segments else None


@dataclass(frozen=True)
class LinkTarget:
    """A link that names something tracked: the link as pasted, the tracked name, which kind it is."""

    url: str
    name: str
    kind: str  # "repository" or "organization"


def urls_in(text: str, limit: int = 10) -> list[str]:
    """The http(s) links of a (decoded) message, at most `limit`, in order, without trailing punctuation."""
    return [m.group(0).rstrip(".,;:!?)]}") for m in _URL.finditer(text or "")][:limit]


def tracked_link(engine, url: str, viewer: Viewer = OPERATOR) -> LinkTarget | None:
    """The tracked repository (longest matching source) or organization a link names, of those `viewer` may see;
    None for anything else (what they may not see is, to them, not tracked)."""
    place = Place.of(url)
    if place is None or not url.lower().startswith(("http://", "https://")):
        return None
    best: tuple[int, str] | None = None
    for repo in engine.repos(viewer):
        source = Place.of(str(repo.source))
        if source and source.host == place.host and place.segments[:len(source.segments)] == source.segments:
            if best is None or len(source.segments) > best[0]:
                best = (len(source.segments), repo.name)
    if best is not None:
        return LinkTarget(url, best[1], "repository")
    organization = engine.org_of(place.host, "/".join(place.segments))
    if organization and (viewer.operator or organization in engine.known_names(viewer)):
        return LinkTarget(url, organization, "organization")
    return None


@dataclass(frozen=True)
class CardFigures:
    """What a link card shows: all history and the last 12 weeks (with their weekly 2GAD)."""

    name: str
    kind: str
    two_gad: int
    developers: int
    commits: int
    recent_two_gad: int
    recent_developers: int
    weekly_two_gad: tuple[int, ...]  # the last 12 weeks, oldest first (the current week last)
    first_day: date | None
    last_day: date | None


CARD_WEEKS = 12


def card_figures(engine, target: LinkTarget, today: date, viewer: Viewer = OPERATOR) -> CardFigures:
    """The card's figures, by the one grammar: `NAME` and `NAME since:12w by:week`, over what `viewer` (a person,
    and the channel the card is posted in) may see."""
    whole = engine.report(parse_query([target.name], today), today, viewer)
    recent = engine.report(parse_query([target.name, f"since:{CARD_WEEKS}w", "by:week"], today), today, viewer)
    weekly = tuple(2 * row.totals.person_days for row in recent.rows)
    return CardFigures(name=target.name, kind=target.kind, two_gad=whole.totals.two_gad,
                       developers=whole.totals.developers, commits=whole.totals.commits,
                       recent_two_gad=recent.totals.two_gad, recent_developers=recent.totals.developers,
                       weekly_two_gad=weekly, first_day=whole.first_day, last_day=whole.last_day)
