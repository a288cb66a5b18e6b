"""A private network namespace where public-looking hosts live on loopback, for the egress attacks.

gad-bot refuses loopback and private addresses for sources typed in Slack, so an attack that
starts at an *allowed* public host (and then redirects, or rebinds its DNS name, to an internal
address) needs a public host on this machine. ``run_pytest_inside`` runs pytest in a new user,
network and mount namespace (``unshare``, no privileges needed) where:

- ``lo`` carries the public addresses in ``ADDRESSES`` besides 127.0.0.1, so servers can listen on
  1.2.3.4:443 and nothing can leave the machine (the namespace has no other interface);
- ``/etc/hosts`` names them (``git.forge-attack.net`` is 1.2.3.4, ...) for every process, libgit2's
  own lookups included;
- ``/etc/resolv.conf`` points at 127.0.0.1, where ``RebindingDns`` answers a name first with a
  public address, then with 127.0.0.1 (DNS rebinding, TTL 0), as an attacker's name server would.

Inside, the tests start real HTTPS git servers (certificates from ``trustme``, trusted by gad-bot
through ``SSL_CERT_FILE``), the Slack stand-in and a real ``gad-bot serve``; nothing of the host's
network or configuration is touched.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

ENV = "GAD_TEST_NETNS"  # set inside the namespace
FORGE = "git.forge-attack.net"  # the host an admin types in /gad track
OTHER = "git.other-attack.net"  # another public host (an allowed redirect target)
REBIND = "rebind.forge-attack.net"  # answered by RebindingDns: public first, then 127.0.0.1
ADDRESSES = {FORGE: "1.2.3.4", OTHER: "5.6.7.8"}


def inside() -> bool:
    return os.environ.get(ENV) == "1"


def unavailable() -> str | None:
    """Why namespaces cannot be used here (None when they can)."""
    if not shutil.which("unshare") or not shutil.which("ip"):
        return "`unshare` or `ip` is not installed"
    probe = subprocess.run(["unshare", "--user", "--map-root-user", "--net", "--mount", "ip", "link", "set", "lo", "up"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        return f"unprivileged user and network namespaces are not allowed here ({probe.stderr.strip()[:200]})"
    return None


_SETUP = """set -e
ip link set lo up
for address in $ADDRESSES; do ip addr add "$address/32" dev lo; done
mount --bind "$1" /etc/hosts
mount --bind "$2" /etc/resolv.conf
shift 2
exec "$@"
"""


def run_pytest_inside(args: Sequence[str], scratch: Path, timeout: float = 600) -> subprocess.CompletedProcess:
    """`python -m pytest ARGS` in a fresh namespace (see the module docstring); its output is returned."""
    scratch.mkdir(parents=True, exist_ok=True)
    hosts = scratch / "hosts"
    hosts.write_text("127.0.0.1 localhost\n::1 localhost\n" + "".join(f"{a} {n}\n" for n, a in ADDRESSES.items()))
    resolv = scratch / "resolv.conf"
    resolv.write_text("nameserver 127.0.0.1\noptions timeout:1 attempts:1\n")
    env = {**os.environ, ENV: "1", "ADDRESSES": " ".join(ADDRESSES.values())}
    command = ["unshare", "--user", "--map-root-user", "--net", "--mount", "sh", "-c", _SETUP, "sh", str(hosts),
               str(resolv), sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "0",  # in this process
               f"--basetemp={scratch / 'tmp'}", *args]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout,
                          cwd=Path(__file__).resolve().parents[2])


class RebindingDns:
    """A DNS server on 127.0.0.1:53 (inside the namespace) answering `answers[name]` in turn, TTL 0.

    Each A query for a name takes the next address of its list (the last one repeats): with
    ``{REBIND: ["1.2.3.4", "127.0.0.1"]}`` the first lookup sees a public address and every later
    one loopback. AAAA queries get no answer, other names NXDOMAIN. ``queries`` counts A lookups.
    """

    def __init__(self, answers: dict[str, list[str]]):
        from dnslib import QTYPE, RCODE, RR, A
        from dnslib.server import BaseResolver, DNSLogger, DNSServer

        self.answers = {name.rstrip(".").lower(): list(addresses) for name, addresses in answers.items()}
        self.queries: dict[str, int] = {}
        lock = threading.Lock()
        outer = self

        class Resolver(BaseResolver):
            def resolve(self, request, handler):
                reply = request.reply()
                name = str(request.q.qname).rstrip(".").lower()
                if name not in outer.answers:
                    reply.header.rcode = RCODE.NXDOMAIN
                    return reply
                if request.q.qtype == QTYPE.A:
                    with lock:
                        turn = outer.queries.get(name, 0)
                        outer.queries[name] = turn + 1
                    addresses = outer.answers[name]
                    reply.add_answer(RR(request.q.qname, QTYPE.A, rdata=A(addresses[min(turn, len(addresses) - 1)]),
                                        ttl=0))
                return reply

        self._server = DNSServer(Resolver(), port=53, address="127.0.0.1",
                                 logger=DNSLogger(logf=lambda _: None))

    def __enter__(self) -> "RebindingDns":
        self._server.start_thread()
        return self

    def __exit__(self, *exc) -> None:
        self._server.stop()
