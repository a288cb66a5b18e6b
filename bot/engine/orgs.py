"""Who did the work: each person's organization, from their e-mail's domain and the operator's rules.

publicsuffixlist lives here. It bundles a snapshot of the Public Suffix List and is only ever asked
offline (its `update` module, the one part that fetches, is never imported), so
`mail.intel.com` -> `intel.com` and `foo.co.uk` stays whole without touching the network.

    person (mailmapped, lower-cased e-mail) --rules--> organization, possibly per day

1. an e-mail rule of the operator's file (dated ones first: `ann@x.org Collabora until 2022-06-30`);
2. a domain rule for the e-mail's domain or a parent of it, down to the registrable domain;
3. webmail and personal domains (gmail, outlook, ...): "independent";
4. an address without a dot after the `@`: "unknown";
5. otherwise the registrable domain itself (`intel.com`).

The file is read again whenever it changes on disk, so a change counts from the next report on;
history is never walked again (organizations are derived from people, as people are from authors).
"""

from __future__ import annotations

import fnmatch
import functools
import os
import re
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

import numpy as np

from ..errors import ConfigError

INDEPENDENT = "independent"
UNKNOWN = "unknown"

# Registrable domains of webmail and personal address providers (and forge no-reply addresses).
WEBMAIL_DOMAINS = frozenset("""
gmail.com googlemail.com outlook.com hotmail.com live.com msn.com passport.com windowslive.com
yahoo.com ymail.com rocketmail.com aol.com aim.com icloud.com me.com mac.com
proton.me protonmail.com protonmail.ch pm.me tutanota.com tutanota.de tuta.io
gmx.de gmx.net gmx.com gmx.at gmx.ch web.de t-online.de freenet.de posteo.de posteo.net mailbox.org
qq.com foxmail.com 163.com 126.com yeah.net sina.com sina.cn sohu.com aliyun.com 139.com
mail.ru inbox.ru list.ru bk.ru yandex.ru yandex.com ya.ru rambler.ru
fastmail.com fastmail.fm fastmail.net hey.com zoho.com zohomail.com hushmail.com disroot.org riseup.net
free.fr orange.fr laposte.net wanadoo.fr sfr.fr libero.it virgilio.it tiscali.it seznam.cz wp.pl o2.pl
naver.com hanmail.net daum.net rediffmail.com
""".split())
# Brands whose addresses come under many national suffixes (hotmail.co.uk, yahoo.co.jp, gmx.fr, ...).
WEBMAIL_BRANDS = frozenset("gmail googlemail hotmail outlook yahoo ymail gmx protonmail yandex".split())
# Full domains (below a registrable domain that is an employer in its own right, e.g. github.com).
WEBMAIL_FULL = frozenset("""
users.noreply.github.com noreply.github.com users.noreply.gitlab.com users.noreply.codeberg.org
""".split())

FILE_FORMAT = "`DOMAIN ORGANIZATION`, `E-MAIL ORGANIZATION` or `E-MAIL ORGANIZATION until YYYY-MM-DD`"
_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")
_DOMAIN = re.compile(r"^[a-z0-9]([a-z0-9\-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9\-]*[a-z0-9])?)*$")


@functools.lru_cache(maxsize=1)
def _suffix_list():
    from publicsuffixlist import PublicSuffixList  # the bundled snapshot; never `publicsuffixlist.update`

    return PublicSuffixList()


@functools.lru_cache(maxsize=65536)
def registrable_domain(domain: str) -> str | None:
    """The registrable domain by the Public Suffix List: `mail.intel.com` -> `intel.com`; None for a bare suffix."""
    if not domain or "." not in domain:
        return None
    return _suffix_list().privatesuffix(domain)


def domain_of(email: str) -> str:
    """The part after the last `@`, without a trailing dot; '' when there is none."""
    _, at, domain = email.rpartition("@")
    return domain.strip().rstrip(".").lower() if at else ""


@dataclass(frozen=True)
class Affiliation:
    """An e-mail's organization when no dated rule applies, and why."""

    org: str
    how: str  # "e-mail rule", "domain rule", "webmail", "no domain", "public suffix list"

    @property
    def by_rule(self) -> bool:
        return self.how in ("e-mail rule", "domain rule")


@dataclass(frozen=True)
class OrgRules:
    """The operator's file, parsed: domain -> org, e-mail -> org, e-mail -> ((last day, org), ...) oldest first."""

    domains: dict[str, str] = field(default_factory=dict)
    emails: dict[str, str] = field(default_factory=dict)
    dated: dict[str, tuple[tuple[date, str], ...]] = field(default_factory=dict)

    def domain_rule(self, domain: str) -> str | None:
        """The most specific domain rule for `domain` or a parent of it, down to its registrable domain."""
        if not self.domains:
            return None
        floor = registrable_domain(domain) or domain
        labels = domain.split(".")
        for i in range(len(labels)):
            candidate = ".".join(labels[i:])
            if candidate in self.domains:
                return self.domains[candidate]
            if candidate == floor:
                break
        return None

    def affiliation(self, email: str) -> Affiliation:
        """The organization of an e-mail outside any dated rule's period."""
        email = email.lower()
        if email in self.emails:
            return Affiliation(self.emails[email], "e-mail rule")
        domain = domain_of(email)
        ruled = self.domain_rule(domain) if domain else None
        if ruled is not None:
            return Affiliation(ruled, "domain rule")
        return default_affiliation(domain)


def default_affiliation(domain: str) -> Affiliation:
    """What the domain alone says: independent for webmail, unknown without a dot, else the registrable domain."""
    if not domain or "." not in domain:
        return Affiliation(UNKNOWN, "no domain")
    if domain in WEBMAIL_FULL or any(domain.endswith("." + full) for full in WEBMAIL_FULL):
        return Affiliation(INDEPENDENT, "webmail")
    registrable = registrable_domain(domain)
    if registrable is None:
        return Affiliation(UNKNOWN, "no domain")
    if registrable in WEBMAIL_DOMAINS or registrable.split(".", 1)[0] in WEBMAIL_BRANDS:
        return Affiliation(INDEPENDENT, "webmail")
    return Affiliation(registrable, "public suffix list")


def parse_rules(text: str, source: str = "the organizations file") -> OrgRules:
    """Parse the operator's file (docs/operations.md, deploy/orgs.example); ConfigError names the bad line."""
    domains: dict[str, str] = {}
    emails: dict[str, str] = {}
    dated: dict[str, list[tuple[date, str]]] = {}
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        key, _, rest = line.replace("\t", " ").partition(" ")
        key, rest = key.strip().lower(), rest.strip()
        where = f"{source}, line {number}"
        if not rest:
            raise ConfigError(f"{where}: `{raw.strip()}` names no organization; write {FILE_FORMAT}.")
        until = None
        # split into words rather than a regex with `.*?\s+until`: that backtracked over long runs of
        # spaces (a quadratic line: 16,000 spaces took 1.36 s)
        parts = rest.split()
        if len(parts) >= 3 and parts[-2].lower() == "until" and _DAY.fullmatch(parts[-1]):
            try:
                until = date.fromisoformat(parts[-1])
            except ValueError:
                raise ConfigError(f"{where}: `{parts[-1]}` is not a date; write it as YYYY-MM-DD.") from None
            parts = parts[:-2]
        org = " ".join(parts)
        if not org:
            raise ConfigError(f"{where}: `{raw.strip()}` names no organization; write {FILE_FORMAT}.")
        if "@" in key:
            if until is not None:
                dated.setdefault(key, []).append((until, org))
            elif key in emails and emails[key] != org:
                raise ConfigError(f"{where}: `{key}` already belongs to {emails[key]}; keep one undated line "
                                  "per e-mail and date the others with `until YYYY-MM-DD`.")
            else:
                emails[key] = org
        else:
            domain = key.lstrip("@").lstrip("*.").rstrip(".")
            if until is not None:
                raise ConfigError(f"{where}: a date applies to an e-mail, not to the domain `{domain}`; "
                                  "date each person's e-mail instead.")
            if "." not in domain or not _DOMAIN.match(domain):
                raise ConfigError(f"{where}: `{key}` is neither an e-mail nor a domain; write {FILE_FORMAT}.")
            domains[domain] = org
    ordered = {}
    for email, periods in dated.items():
        periods.sort()
        days = [d for d, _ in periods]
        if len(set(days)) != len(days):
            raise ConfigError(f"{source}: `{email}` has two rules ending on the same day; keep one.")
        ordered[email] = tuple(periods)
    return OrgRules(domains, emails, ordered)


def load_rules(path: Path | None) -> OrgRules:
    """The rules in `path` (GAD_ORG_FILE); none when no file is set."""
    if path is None:
        return OrgRules()
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"GAD_ORG_FILE is {path}, which does not exist; create it (see deploy/orgs.example) "
                          "or unset GAD_ORG_FILE.") from None
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"GAD_ORG_FILE {path} cannot be read ({error}); make it a UTF-8 text file "
                          "readable by gad-bot.") from None
    return parse_rules(text, f"GAD_ORG_FILE {path}")


def file_signature(path: Path | None) -> tuple:
    """What changes when the file does (for caches): (path, modification time, size); () without a file."""
    if path is None:
        return ()
    try:
        st = os.stat(path)
    except OSError:
        return (str(path), None)
    return (str(path), st.st_mtime_ns, st.st_size, st.st_ino)


@dataclass
class OrgTable:
    """Organizations of the people of the index, as arrays a report indexes with person ids.

    `names[org_of_person[p]]` is person p's organization outside dated rules; `dated[p]` holds
    (last epoch day, org index) periods, oldest first, that take precedence on or before their day.
    """

    names: list[str]
    org_of_person: np.ndarray  # int32, indexed by person id
    dated: dict[int, tuple[tuple[int, int], ...]]
    by_rule: np.ndarray  # bool, indexed by person id: the undated organization came from the operator's file

    @classmethod
    def build(cls, people: list[tuple[int, str]], rules: OrgRules) -> "OrgTable":
        from .periods import to_epoch_day

        names: list[str] = []
        index: dict[str, int] = {}

        def org_index(name: str) -> int:
            if name not in index:
                index[name] = len(names)
                names.append(name)
            return index[name]

        size = max((p for p, _ in people), default=0) + 1
        org_of = np.zeros(size, np.int32)
        by_rule = np.zeros(size, bool)
        org_index(UNKNOWN)  # index 0: a person id the table does not know
        dated: dict[int, tuple[tuple[int, int], ...]] = {}
        for person_id, email in people:
            found = rules.affiliation(email)
            org_of[person_id] = org_index(found.org)
            by_rule[person_id] = found.by_rule
            periods = rules.dated.get(email.lower())
            if periods:
                dated[person_id] = tuple((to_epoch_day(last), org_index(org)) for last, org in periods)
        return cls(names, org_of, dated, by_rule)

    def orgs_of(self, persons: np.ndarray, days: np.ndarray) -> np.ndarray:
        """The organization index of each (person, epoch day) record."""
        persons = np.asarray(persons)
        if len(persons) and int(persons.max()) < len(self.org_of_person):
            out = self.org_of_person[persons]
        else:  # a person newer than the table: unknown until it is rebuilt
            known = persons < len(self.org_of_person)
            out = np.zeros(len(persons), np.int32)
            out[known] = self.org_of_person[persons[known]]
        if self.dated and len(persons):
            wanted = np.fromiter(self.dated, np.int64, len(self.dated))
            touched = np.flatnonzero(np.isin(persons, wanted))
            if len(touched):
                for person in np.unique(persons[touched]).tolist():
                    rows = touched[persons[touched] == person]
                    decided = np.zeros(len(rows), bool)
                    for last_day, org in self.dated[person]:  # oldest period first: the earliest that covers wins
                        hit = ~decided & (days[rows] <= last_day)
                        out[rows[hit]] = org
                        decided |= hit
        return out

    def dated_mask(self, persons: np.ndarray) -> np.ndarray | None:
        """Which of `persons` have dated rules; None when nobody has."""
        if not self.dated:
            return None
        mask = np.isin(persons, np.fromiter(self.dated, np.int64, len(self.dated)))
        return mask if mask.any() else None

    def matching(self, globs: tuple[str, ...]) -> np.ndarray:
        """A bool per organization index: its name matches any glob (case-insensitively)."""
        return np.array([any(fnmatch.fnmatchcase(name.lower(), g.lower()) for g in globs) for name in self.names],
                        bool)
