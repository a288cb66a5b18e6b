"""May this repository source, typed in Slack by someone we do not know, be mirrored?

    check_remote_source("https://GitHub.com/GStreamer/gstreamer.git", SourcePolicy())
        -> "https://github.com/GStreamer/gstreamer.git"

The rules, in the order they are applied (the first that fails raises SourceError with one
sentence saying what was wrong and what to type instead):

1. Plain, visible text: no leading `-`, no whitespace, control, invisible or bidi characters,
   not even percent-encoded (`%0a`, `%00`, `%2520`), no backslashes, at most 2,000 characters.
2. A URL, not a local path (`/srv/x`, `./x`, `~/x`, `.`), `file://`, a git transport helper
   (`ext::...`, `fd::...`) or an scp-like `user@host:path`.
3. No credentials: `https://user:pass@...` and `https://token@...` are refused without
   echoing them (the operator configures credentials with GAD_HTTPS_TOKENS / GAD_SSH_KEY).
   `ssh://NAME@host/...` may carry a plain login name such as `git`, never a password.
4. Scheme `https://`; `ssh://` only when `SourcePolicy.allow_ssh`, and only to a host named
   exactly in `allowed_hosts` (libssh2 resolves names itself and takes no proxy: see 6 and the
   last paragraph). `http://`, `git://` and every other scheme are refused.
5. A host that is a real DNS name (letters, digits and hyphens, at least one dot, IDN names
   normalised to punycode with the stdlib `idna` codec, case and one trailing dot ignored) or
   an IP literal. A host whose last label is a number is an IPv4 address in any of the
   spellings `inet_aton` and browsers accept (`127.1`, `0x7f.1`, `0177.0.0.1`, `2130706433`)
   and is checked as the address it denotes.
6. `denied_hosts` are always refused; a non-empty `allowed_hosts` admits only the listed hosts
   **and their subdomains** (`github.com` admits `gist.github.com`). Entries are compared
   case-insensitively, without a trailing dot, IDN names as punycode. These lists only narrow
   what is allowed: a listed host must still be public.
7. Local and internal names (`localhost`, `*.localhost`, `*.local`, `*.internal`, `*.lan`,
   `*.home.arpa`, ...) are refused without being resolved.
8. Every address the host is or resolves to must be public: not loopback, private, link-local,
   shared/CGNAT (100.64/10), multicast, reserved, unspecified, documentation, benchmarking,
   cloud metadata (169.254.169.254, fd00:ec2::254, ...), nor an IPv6 form that embeds such an
   IPv4 address (`::ffff:127.0.0.1`, 6to4, NAT64). A host that does not resolve is refused.
9. A path naming a repository: not empty, no `.`/`..` segments, no `?query` or `#fragment`.

The returned URL is normalised (lower-case scheme and host, punycode, canonical IP spelling,
default port and trailing slashes dropped), so what git is handed is exactly what was checked.

Checking names before cloning cannot stop a DNS answer that changes between this check and
git's own lookup (DNS rebinding), nor a redirect. So every connection a fetch of such a source
makes goes through `bot.store.egress.GuardProxy`, which checks its target with `check_connect` (the
same rules, one lookup) and connects to exactly the addresses it checked.
"""

from __future__ import annotations

import ipaddress
import os
import re
import socket
import unicodedata
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import SourceError

__all__ = ["SourcePolicy", "check_connect", "check_remote_source", "check_ssh_host", "default_name",
           "is_local_path", "redact", "resolve_host"]

MAX_LENGTH = 2000
_EXAMPLE = "`https://github.com/owner/name`"

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*)://")
_TRANSPORT = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*::")
_SCP_LIKE = re.compile(r"^[^/]*:")  # git's rule: a colon before the first slash, and no "://"
_PERCENT = re.compile(r"%(?![0-9A-Fa-f]{2})")
_LABEL = re.compile(r"^[a-z0-9](?:[a-z0-9\-]{0,61}[a-z0-9])?$")
_NUMERIC_LABEL = re.compile(r"^(?:0x[0-9a-f]*|[0-9]+)$")
_SSH_USER = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]{0,31}$")
# anywhere: logs hold URLs inside sentences; the scheme is optional (`http\n://token@host` must not slip through)
_USERINFO = re.compile(r"((?:[A-Za-z][A-Za-z0-9+.\-]*)?://)[^/]*@")  # not stopped by ? or #: libgit2 may read ssh://#TOKEN@host as a user name
_DEFAULT_PORTS = {"https": 443, "ssh": 22}

# Names that never belong to a public host (RFC 6761, RFC 8375, common internal suffixes).
_INTERNAL_SUFFIXES = ("localhost", "localdomain", "local", "internal", "intranet", "lan", "home", "corp",
                      "private", "home.arpa", "test", "example", "invalid", "onion", "in-addr.arpa",
                      "ip6.arpa", "alt")

# Networks that are never public, on top of what `ipaddress` says (whose lists vary by Python version).
_BLOCKED_NETWORKS = tuple(ipaddress.ip_network(n) for n in (
    "0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12",
    "192.0.0.0/24", "192.0.2.0/24", "192.88.99.0/24", "192.168.0.0/16", "198.18.0.0/15",
    "198.51.100.0/24", "203.0.113.0/24", "224.0.0.0/4", "240.0.0.0/4",
    "::/128", "::1/128", "::/96", "64:ff9b:1::/48", "100::/64", "2001::/23", "2001:db8::/32",
    "3fff::/20", "fc00::/7", "fe80::/10", "fec0::/10", "ff00::/8",
))
_METADATA = tuple(ipaddress.ip_address(a) for a in ("169.254.169.254", "fd00:ec2::254", "100.100.100.200",
                                                    "192.0.0.192", "169.254.170.2"))
_NAT64 = ipaddress.ip_network("64:ff9b::/96")


def resolve_host(host: str) -> list[str]:
    """Every IP address `host` resolves to, as strings; an empty list when it does not resolve."""
    try:
        infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError, ValueError):
        return []
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


@dataclass(frozen=True)
class SourcePolicy:
    """What the operator allows `/gad track` to mirror (see the module docstring for the rules)."""

    allowed_hosts: tuple[str, ...] = ()
    denied_hosts: tuple[str, ...] = ()
    allow_ssh: bool = False
    resolver: Callable[[str], list[str]] = resolve_host

    @classmethod
    def from_settings(cls, settings: Any, resolver: Callable[[str], list[str]] = resolve_host) -> "SourcePolicy":
        """The policy a `bot.config.Settings` describes (ssh:// is allowed when GAD_SSH_KEY is set)."""
        return cls(allowed_hosts=tuple(settings.allowed_hosts), denied_hosts=tuple(settings.denied_hosts),
                   allow_ssh=settings.ssh_key is not None, resolver=resolver)


class _Refused(Exception):
    """Internal: a reason clause and a hint clause, joined into one sentence by the caller."""

    def __init__(self, reason: str, hint: str):
        super().__init__(reason)
        self.reason, self.hint = reason, hint


def _sentence(reason: str, hint: str) -> str:
    return f"{reason[:1].upper()}{reason[1:]}; {hint}."


def _show(text: str, limit: int = 60) -> str:
    """`text` made safe to quote in a one-line message: redacted, visible, short, no backticks."""
    shown = "".join("?" if unicodedata.category(c)[0] in "CZ" else c for c in redact(text)).replace("`", "'")
    return shown if len(shown) <= limit else shown[: limit - 1] + "\u2026"


def _invisible(text: str) -> bool:
    return any(unicodedata.category(c)[0] in "CZ" for c in text)


def _check_characters(text: str) -> None:
    if not text:
        raise _Refused("no repository URL was given", f"type one such as {_EXAMPLE}")
    if len(text) > MAX_LENGTH:
        raise _Refused(f"the source is longer than {MAX_LENGTH} characters", f"type a URL such as {_EXAMPLE}")
    if text.startswith("-"):
        raise _Refused("a source may not start with `-`", f"type a URL such as {_EXAMPLE}")
    if _invisible(text):
        raise _Refused("the source contains spaces, line breaks or invisible characters",
                       "type the URL again on one line, e.g. " + _EXAMPLE)
    if _PERCENT.search(text):
        raise _Refused("the source has a `%` that is not followed by two hex digits",
                       "type the URL without it, e.g. " + _EXAMPLE)
    decoded = text
    for _ in range(3):  # double encoding (%250a) is decoded by some servers and proxies
        raw = urllib.parse.unquote_to_bytes(decoded)
        decoded = raw.decode("utf-8", errors="replace")
        if any(b < 0x21 or b == 0x7F for b in raw) or _invisible(decoded):
            raise _Refused("the source contains percent-encoded spaces or control characters such as `%0a`",
                           "type the URL without them, e.g. " + _EXAMPLE)
        if "%" not in decoded:
            break
    if "\\" in text:
        raise _Refused("the source contains a backslash", "type the URL with forward slashes only, e.g. " + _EXAMPLE)


def _credentials_refusal() -> _Refused:
    return _Refused("the URL has a user name, password or token in it",
                    "do not paste secrets in chat (delete that message), type the URL without the `user@` part, "
                    "and ask the operator to configure credentials with GAD_HTTPS_TOKENS (https) or "
                    "GAD_SSH_KEY (ssh) for private repositories")


def _normal_host_entry(entry: str) -> str:
    entry = entry.strip().lower().rstrip(".")
    if entry.startswith("*."):
        entry = entry[2:]
    if entry.startswith("[") and entry.endswith("]"):
        entry = entry[1:-1]
    try:
        return entry.encode("idna").decode("ascii") if not entry.isascii() else entry
    except UnicodeError:
        return entry


def _host_matches(host: str, entries: tuple[str, ...]) -> bool:
    for entry in entries:
        entry = _normal_host_entry(entry)
        if entry and (host == entry or host.endswith("." + entry)):
            return True
    return False


def _inet_aton(host: str) -> ipaddress.IPv4Address | None:
    """The IPv4 address `host` denotes in any inet_aton/WHATWG spelling, or None if it denotes none."""
    parts = host.split(".")
    if not 1 <= len(parts) <= 4:
        return None
    numbers = []
    for part in parts:
        if part.startswith("0x"):
            digits, base = part[2:], 16
            if digits and not re.fullmatch(r"[0-9a-f]+", digits):
                return None
            numbers.append(int(digits, base) if digits else 0)
        elif len(part) > 1 and part.startswith("0"):
            if not re.fullmatch(r"[0-7]+", part):
                return None
            numbers.append(int(part, 8))
        elif re.fullmatch(r"[0-9]{1,12}", part):
            numbers.append(int(part))
        else:
            return None
    *head, last = numbers
    if any(n > 255 for n in head) or last >= 256 ** (4 - len(head)):
        return None
    value = last
    for i, n in enumerate(head):
        value += n << (8 * (3 - i))
    return ipaddress.IPv4Address(value)


def _public(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    """Whether mirroring from `address` cannot reach anything inside the operator's network."""
    if isinstance(address, ipaddress.IPv6Address):
        if address.scope_id:
            return False
        embedded = address.ipv4_mapped or address.sixtofour
        if embedded is None and address in _NAT64:
            embedded = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
        if embedded is not None and not _public(embedded):
            return False
    if address in _METADATA or any(address in net for net in _BLOCKED_NETWORKS if net.version == address.version):
        return False
    return (address.is_global and not address.is_multicast and not address.is_private and not address.is_loopback
            and not address.is_link_local and not address.is_reserved and not address.is_unspecified)


@dataclass(frozen=True)
class _Parsed:
    scheme: str
    user: str | None
    host: str  # normalised; IPv6 without brackets
    port: int | None
    path: str

    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        user = f"{self.user}@" if self.user else ""
        port = f":{self.port}" if self.port is not None and self.port != _DEFAULT_PORTS[self.scheme] else ""
        return f"{self.scheme}://{user}{host}{port}{self.path}"


def _split_url(text: str) -> tuple[str, str, str, str | None]:
    """(authority, path, query, fragment) of `scheme://...`; query is "" and fragment None when absent."""
    rest = text.split("://", 1)[1]
    authority, rest = re.match(r"([^/?#]*)(.*)", rest, re.S).groups()  # type: ignore[union-attr]
    rest, hash_, fragment = rest.partition("#")
    path, _, query = rest.partition("?")
    return authority, path, query, fragment if hash_ else None


def _split_authority(authority: str, scheme: str) -> tuple[str | None, str, str]:
    """(ssh user or None, host text, port text) from the URL's authority."""
    user = None
    if "@" in authority:
        userinfo, _, authority = authority.rpartition("@")
        if scheme == "ssh" and _SSH_USER.fullmatch(userinfo):
            user = userinfo  # a login name such as `git`, which ssh URLs need; never a password
        else:
            raise _credentials_refusal()
    if authority.startswith("["):
        host, bracket, port = authority[1:].partition("]")
        if not bracket or (port and not port.startswith(":")):
            raise _Refused("the host is not a valid bracketed IPv6 address", f"type a URL such as {_EXAMPLE}")
        return user, "[" + host + "]", port[1:]
    host, _, port = authority.partition(":")
    if ":" in port:
        raise _Refused("an IPv6 host must be written in brackets, e.g. `https://[2001:db8::1]/name`",
                       f"or use the host's name, e.g. {_EXAMPLE}")
    return user, host, port


def _normal_host(raw: str) -> tuple[str, ipaddress.IPv4Address | ipaddress.IPv6Address | None]:
    """The host in normal form, and the IP address it is when it is an IP literal."""
    bad = _Refused(f"`{_show(raw)}` is not a valid host name", f"type a URL such as {_EXAMPLE}")
    if raw.startswith("["):
        inner = raw[1:-1]
        if "%" in inner:
            raise _Refused("IPv6 zone ids (`%25...`) only name local networks", f"type a public URL such as {_EXAMPLE}")
        try:
            address = ipaddress.IPv6Address(inner)
        except ValueError:
            raise bad from None
        return address.compressed, address
    host = re.sub("[\u3002\uff0e\uff61]", ".", raw)  # the dots IDNA treats as label separators
    host = host[:-1] if host.endswith(".") else host
    if not host or "%" in host:
        raise bad
    if not host.isascii():
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError:
            raise bad from None
    host = host.lower()
    if len(host) > 253:
        raise bad
    labels = host.split(".")
    if _NUMERIC_LABEL.fullmatch(labels[-1]):
        address = _inet_aton(host)
        if address is None:
            raise _Refused(f"`{_show(raw)}` is not a valid IP address", f"type a URL such as {_EXAMPLE}")
        return str(address), address
    if not all(_LABEL.fullmatch(label) for label in labels):
        raise bad
    for label in labels:
        if label.startswith("xn--"):
            try:
                label.encode("ascii").decode("idna")
            except UnicodeError:
                raise bad from None
    return host, None


def _check_addresses(host: str, address: Any, policy: SourcePolicy) -> list[str]:
    """The addresses `host` is or resolves to (looked up once), all of them public; or _Refused."""
    local = _Refused(f"`{host}` is not a public host", "gad-bot only mirrors from public servers, e.g. " + _EXAMPLE)
    if address is not None:
        if not _public(address):
            raise local
        return [str(address)]
    if "." not in host or any(host == s or host.endswith("." + s) for s in _INTERNAL_SUFFIXES):
        raise local
    try:
        answers = list(policy.resolver(host) or ())
    except Exception:  # the resolver is pluggable I/O; any failure means we cannot vouch for the host
        answers = []
    if not answers:
        raise _Refused(f"`{host}` cannot be resolved", "check the spelling of the host, e.g. " + _EXAMPLE)
    checked = []
    for answer in answers:
        try:
            resolved = ipaddress.ip_address(str(answer).split("%", 1)[0])
        except ValueError:
            raise _Refused(f"`{host}` resolves to an address gad-bot cannot check",
                           "ask the operator to look at the host's DNS") from None
        if "%" in str(answer) or not _public(resolved):
            raise _Refused(f"`{host}` resolves to an address that is not public ({resolved})",
                           "gad-bot only mirrors from public servers, e.g. " + _EXAMPLE)
        checked.append(str(resolved))
    return checked


def _check_lists(host: str, policy: SourcePolicy) -> None:
    if _host_matches(host, policy.denied_hosts):
        raise _Refused(f"`{host}` is on this workspace's list of denied hosts", "ask the operator which hosts are allowed")
    if policy.allowed_hosts and not _host_matches(host, policy.allowed_hosts):
        allowed = ", ".join(f"`{_show(h, 40)}`" for h in policy.allowed_hosts[:5])
        raise _Refused(f"`{host}` is not among the hosts this workspace mirrors from ({allowed})",
                       "track a repository on one of them, or ask the operator to add the host to GAD_ALLOWED_HOSTS")


def _check_ssh_named(host: str, policy: SourcePolicy) -> None:
    """ssh:// only to a host the operator named itself in GAD_ALLOWED_HOSTS (not a subdomain, not
    an address): libssh2 resolves the name again on its own and takes no proxy, so a name a
    stranger controls could lead it anywhere after the check (DNS rebinding)."""
    if host not in {_normal_host_entry(entry) for entry in policy.allowed_hosts}:
        raise _Refused(f"`ssh://` sources are fetched only from hosts the operator names in GAD_ALLOWED_HOSTS, "
                       f"and `{_show(host, 60)}` is not one of them",
                       f"type an `https://` URL such as {_EXAMPLE}, or ask the operator to add the host")


def _check(text: Any, policy: SourcePolicy) -> _Parsed:
    if not isinstance(text, str):
        raise _Refused("the source is not text", f"type a URL such as {_EXAMPLE}")
    _check_characters(text)
    if _TRANSPORT.match(text):
        raise _Refused("git transport helpers such as `ext::` are not allowed", f"type a URL such as {_EXAMPLE}")
    scheme_match = _SCHEME.match(text)
    if not scheme_match:
        if is_local_path(text):
            raise _Refused("local paths cannot be tracked from Slack",
                           f"type a URL such as {_EXAMPLE}, or ask the operator to run `gad-bot track PATH` on the server")
        if _SCP_LIKE.match(text):
            before = text.split(":", 1)[0].lower()
            if before in ("http", "https", "ssh", "git", "file"):
                raise _Refused("the URL is missing the `//` after the scheme", f"type it as {_EXAMPLE}")
            ssh = "`ssh://git@host/owner/name`" if policy.allow_ssh else _EXAMPLE.replace("github.com", "host")
            raise _Refused("`user@host:path` (scp-like) sources are not accepted", f"write it as {ssh}")
        raise _Refused(f"`{_show(text)}` is not a URL", "type the whole address starting with `https://`, e.g. " + _EXAMPLE)
    scheme = scheme_match.group(1).lower()
    authority, path, _query, _fragment = _split_url(text)
    user, raw_host, port_text = _split_authority(authority, scheme)
    if scheme == "file":
        raise _Refused("local `file://` URLs cannot be tracked from Slack",
                       f"type a URL such as {_EXAMPLE}, or ask the operator to run `gad-bot track PATH` on the server")
    if scheme == "http":
        raise _Refused("plain `http://` is not encrypted", "type the same address with `https://`")
    if scheme == "git":
        raise _Refused("the `git://` protocol is neither encrypted nor authenticated", "type the address with `https://`")
    if scheme == "ssh" and not policy.allow_ssh:
        raise _Refused("`ssh://` sources are not enabled here",
                       f"type an `https://` URL such as {_EXAMPLE}, or ask the operator to set GAD_SSH_KEY")
    if scheme not in ("https", "ssh"):
        raise _Refused(f"`{_show(scheme)}://` URLs are not accepted", f"type an `https://` URL such as {_EXAMPLE}")
    if "?" in text or "#" in text:
        raise _Refused("a repository URL has no `?...` or `#...` part", f"type it without them, e.g. {_EXAMPLE}")
    if port_text:
        if not re.fullmatch(r"[0-9]{1,5}", port_text) or not 0 < int(port_text) < 65536:
            raise _Refused("the port is not a number from 1 to 65535", f"type a URL such as {_EXAMPLE}")
    port = int(port_text) if port_text else None
    host, address = _normal_host(raw_host)
    _check_lists(host, policy)
    path = path.rstrip("/")
    segments = urllib.parse.unquote(path).split("/")[1:]
    if not path or not any(segments):
        raise _Refused(f"the URL names the host `{host}` but no repository", f"add the path, e.g. {_EXAMPLE}")
    if any(s in (".", "..") for s in segments):
        raise _Refused("the URL path has `.` or `..` segments", f"type the repository's own address, e.g. {_EXAMPLE}")
    _check_addresses(host, address, policy)
    if scheme == "ssh":
        _check_ssh_named(host, policy)
    path = urllib.parse.quote(path, safe="/%!$&'()*+,;=:@-._~")
    return _Parsed(scheme, user, host, port, path)


def check_remote_source(text: str, policy: SourcePolicy) -> str:
    """The normalised URL to clone for `text`, or SourceError saying why it may not be mirrored."""
    try:
        return _check(text, policy).url()
    except _Refused as refused:
        raise SourceError(_sentence(refused.reason, refused.hint)) from None


def check_connect(host: str, port: int, policy: SourcePolicy) -> list[str]:
    """The addresses a fetch may connect to for `host:port` (a CONNECT target), or SourceError.

    The host gets the checks a typed URL's host gets (denied and allowed hosts, internal names,
    every address public) and is resolved exactly once: the caller connects to one of the
    returned addresses and to nothing else, so a DNS answer that changes afterwards (rebinding)
    cannot lead it anywhere the policy did not see.
    """
    try:
        if not isinstance(host, str) or not host or not isinstance(port, int) or not 0 < port < 65536:
            raise _Refused("the connection has no valid host and port", "track the repository's own address")
        _check_characters(host)
        raw = f"[{host}]" if ":" in host and not host.startswith("[") else host
        name, address = _normal_host(raw)
        if address is not None:  # "not a public host" says more about 127.0.0.1 than the allow list would
            _check_addresses(name, address, policy)
        _check_lists(name, policy)
        return _check_addresses(name, address, policy)
    except _Refused as refused:
        raise SourceError(_sentence(refused.reason, refused.hint)) from None


def check_ssh_host(host: str, port: int, policy: SourcePolicy) -> None:
    """SourceError unless an ssh:// fetch may go to `host`: public, and named in GAD_ALLOWED_HOSTS."""
    check_connect(host, port, policy)
    try:
        _check_characters(host)
        name, _address = _normal_host(host)
        _check_ssh_named(name, policy)
    except _Refused as refused:
        raise SourceError(_sentence(refused.reason, refused.hint)) from None


def redact(url: str) -> str:
    """`url` with any user name, password or token replaced by `***`, for messages and logs; never raises."""
    try:
        if isinstance(url, (bytes, bytearray)):
            url = bytes(url).decode("utf-8", errors="replace")
        text = url if isinstance(url, str) else str(url)
        text, found = _USERINFO.subn(lambda m: m.group(1) + "***@", text)
        if found:
            return text
        # scp-like `user@host:path`, `ext::TOKEN@host`, or a URL missing its scheme: an "@" before the first "/"
        head, slash, tail = text.partition("/")
        return ("***@" + head.rpartition("@")[2] if "@" in head else head) + slash + tail
    except Exception:
        return "***"


def is_local_path(text: str) -> bool:
    """Whether `text` names a directory on this machine (`/x`, `./x`, `../x`, `~/x`, `.`, `..`, `file://...`)."""
    if not isinstance(text, str):
        return False
    return (text in (".", "..", "~") or text.startswith(("/", "./", "../", "~/", "~"))
            or text.lower().startswith("file://"))


_GENERIC_OWNERS = {"git", "scm", "r", "p", "repo", "repos", "pub", "cgit", "gitweb", "srv", "projects", "src"}


def _slug(segment: str) -> str:
    # Fold accents and compatibility forms (`İ`, `ﬁ`, full-width letters) so names stay readable and typeable.
    segment = "".join(c for c in unicodedata.normalize("NFKD", segment) if not unicodedata.combining(c)).lower()
    if segment.endswith(".git"):
        segment = segment[:-4]
    segment = re.sub(r"[^\w.\-]+", "-", segment)
    segment = re.sub(r"^[^\w]+", "", segment)
    return segment.rstrip(".-")


def default_name(source: str) -> str:
    """A readable name for a source: `owner/name` for forge URLs, else the repository's or directory's name."""
    try:
        name = _default_name(source.strip())
    except Exception:
        name = ""
    return name if re.fullmatch(r"[\w][\w.\-/]*", name) else "repo"


def _default_name(source: str) -> str:
    if is_local_path(source):
        if source.lower().startswith("file://"):
            source = urllib.parse.unquote(urllib.parse.urlsplit(source).path) or "/"
        path = Path(os.path.expanduser(source))
        parts = [p for p in path.parts if p not in ("/", "")]
        if not parts or parts[-1] in (".", "..") or ".." in parts:
            path = Path(os.path.abspath(path))
            parts = [p for p in path.parts if p != "/"]
        if parts and parts[-1] == ".git":
            parts = parts[:-1]
        return _slug(parts[-1]) if parts else ""
    match = _SCHEME.match(source)
    if match:
        rest = source[match.end():]
        authority, _, path = rest.partition("/")
        host = authority.rpartition("@")[2].split(":")[0].strip("[]").lower()
        path = urllib.parse.unquote(re.split(r"[?#]", path, maxsplit=1)[0])
    elif _SCP_LIKE.match(source) and not _TRANSPORT.match(source):
        authority, _, path = source.partition(":")
        host = authority.rpartition("@")[2].lower()
    else:
        host, path = "", source.split("::")[-1]
    segments = [s for s in path.split("/") if s and s not in (".", "..")]
    if segments and segments[-1].lower() == ".git":
        segments = segments[:-1]
    slugs = [s for s in (_slug(seg) for seg in segments) if s]
    if not slugs:
        return _slug(host.split(".")[0]) if host else ""
    if len(slugs) == 1 or slugs[-2] in _GENERIC_OWNERS:
        return slugs[-1]
    return f"{slugs[-2]}/{slugs[-1]}"
