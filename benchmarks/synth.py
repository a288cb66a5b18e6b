"""Deterministic synthetic git history for benchmarks, written through `git fast-import`.

    python benchmarks/synth.py --commits 1000000 --out benchmarks/work/repo-1000000 [--seed 1]
    python benchmarks/synth.py --out benchmarks/work/upstream --append 1000   # K more commits on main

The repository is bare, with HEAD -> refs/heads/main. One Python process writes the whole
fast-import stream to one `git fast-import`; blobs are a small pool written once and reused
through marks, so a million commits take a few minutes, dominated by fast-import itself.

Shape (all drawn from `random.Random(seed)`, so the same parameters give the same object ids):
- ~3,000 authors with a long-tailed (Zipf-like) activity; each is active for a window of the
  history; names partly non-ASCII; e-mails partly in mixed case, some authors vary the case
  of their address from commit to commit;
- ~60 authors who changed address: commits use the old address before a switch date, and the
  `.mailmap` on main joins both (a few entries differ from the commits' address in case only,
  and a few are name-only entries);
- bot authors (`dependabot[bot]`, `renovate[bot]`, `github-actions[bot]`, and one bot whose
  `[bot]` is only in its e-mail), mostly in later years;
- author time zones from -12:00 to +14:00 (with +05:30, +05:45, +08:45, +12:45 ...), a home zone
  per author and occasional travel; UTC times uniform over the day, so many commits fall on a
  different calendar day in UTC than in the author's zone;
- ~15 years (2010-01-01 .. 2025-01-01) with a growth trend, lognormal weekly bursts, release
  crunches and Christmas dips; ~10% of commits have a committer (a maintainer) and committer
  date different from the author's, author dates then lag by up to 60 days;
- main, one release branch per year (receiving backports for two years), four long-lived
  feature branches (two merged into main now and then, two never), short topic branches merged
  into main (~5% of commits are merges), ~50 `refs/pull/N/head` refs to abandoned topics
  (outside the default scope), and ~500 tags (half annotated);
- each commit touches 1-3 files of a tree of ~280 paths (growing to ~400) under drivers/gpu/...,
  net/..., docs/..., fs/... etc.; authors mostly work in their own two or three directories.
"""

from __future__ import annotations

import argparse
import bisect
import os
import random
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

VERSION = 1  # bump when the shape of the history changes: benchmarks cache repositories by it
START = 1262304000  # 2010-01-01T00:00:00Z
YEARS = 15
SPAN = 1735689600 - START  # .. 2025-01-01T00:00:00Z
WEEK = 7 * 86400
N_AUTHORS = 3000
N_TAGS = 500
BLOB_POOL = 512
FIRST_COMMIT_MARK = 1000

# (offset "+hhmm", weight): the world's zones, weighted roughly by where developers live.
ZONES = [
    ("-1200", 1), ("-1100", 1), ("-1000", 2), ("-0930", 1), ("-0900", 3), ("-0800", 40), ("-0700", 25),
    ("-0600", 20), ("-0500", 35), ("-0400", 25), ("-0330", 3), ("-0300", 12), ("-0200", 2), ("-0100", 2),
    ("+0000", 30), ("+0100", 60), ("+0200", 45), ("+0300", 20), ("+0330", 3), ("+0400", 4), ("+0430", 1),
    ("+0500", 4), ("+0530", 30), ("+0545", 3), ("+0600", 2), ("+0630", 1), ("+0700", 5), ("+0800", 35),
    ("+0845", 1), ("+0900", 20), ("+0930", 2), ("+1000", 8), ("+1030", 1), ("+1100", 2), ("+1200", 4),
    ("+1245", 1), ("+1300", 2), ("+1400", 1),
]

FIRST = ["James", "Mary", "Wei", "Priya", "Olga", "Juan", "Ahmed", "Yuki", "Lars", "Fatima", "Chen", "Anna",
         "Ivan", "Sofia", "Raj", "Emma", "Lukas", "Aisha", "Mateo", "Nina", "Tomasz", "Mei", "Kwame", "Sara",
         "José", "Zoë", "Björn", "Łukasz", "Ólafur", "Dmitri", "Hiroshi", "Ana", "Pierre", "Ngozi", "Arjun",
         "Linnea", "Oğuz", "Mihai", "Greta", "Tanvir", "Kai", "Leila", "Pablo", "Ines", "Sven", "Yara"]
LAST = ["Smith", "Wang", "Patel", "Ivanova", "Garcia", "Khan", "Tanaka", "Nielsen", "Haddad", "Li", "Müller",
        "Kowalski", "Okafor", "Rossi", "Dubois", "Nakamura", "Singh", "Johansson", "Novak", "Fernández",
        "Schmidt", "Kim", "Nguyen", "Andersen", "Popescu", "O'Brien", "da Silva", "van der Berg", "Yılmaz",
        "Brown", "Lopez", "Chowdhury", "Sato", "Petrov", "Hughes", "Moreau", "Ahmadi", "Costa", "Berg"]
DOMAINS = [("example.com", 30), ("example.org", 10), ("corp.example.net", 8), ("mail.example", 12),
           ("users.noreply.github.com", 10), ("kernel.example", 5), ("uni.example.edu", 5), ("Example.COM", 2)]
OLD_DOMAINS = ["oldcorp.example", "Startup.example.io", "previous-job.example"]

DIRS = [
    "drivers/gpu/drm/amd/display", "drivers/gpu/drm/i915", "drivers/gpu/drm/nouveau", "drivers/gpu/host1x",
    "drivers/net/ethernet/intel", "drivers/net/wireless/ath", "drivers/usb/core", "drivers/block",
    "net/ipv4", "net/ipv6", "net/core", "net/bluetooth", "fs/ext4", "fs/btrfs", "fs/nfs", "kernel/sched",
    "kernel/locking", "mm", "include/linux", "include/uapi/linux", "arch/x86/kernel", "arch/arm64/mm",
    "docs/admin-guide", "docs/dev-tools", "docs/process", "tools/perf", "scripts", "lib", "crypto",
    "sound/soc", "security/selinux", "tests/unit", "tests/integration",
]
STEMS = ["core", "main", "util", "init", "debug", "params", "sysfs", "trace", "power", "irq"]
TOP_FILES = ["README", "Makefile", "LICENSE", "CONTRIBUTING.md", "MAINTAINERS"]
BOTS = [
    ("dependabot[bot]", "49699333+dependabot[bot]@users.noreply.github.com", 5),
    ("renovate[bot]", "29139614+renovate[bot]@users.noreply.github.com", 3),
    ("github-actions[bot]", "41898282+github-actions[bot]@users.noreply.github.com", 2),
    ("pre-commit-ci", "66853113+pre-commit-ci[bot]@users.noreply.github.com", 1),
]
BOT_FILES = ["Makefile", "scripts/deps.txt", "tools/perf/requirements.txt", ".github/workflows/ci.yml"]
FEATURES = [  # (branch, merged into main now and then?)
    ("feature/gpu-rework", True), ("feature/netstack-v2", True), ("next", False), ("wip/docs-overhaul", False)]
TOPIC_SLOTS = 8


SUBDIR_NAMES = ["gpu", "drm", "amd", "display", "dc", "i915", "net", "ethernet", "intel", "wireless", "ath", "usb",
                "core", "host", "media", "platform", "pci", "scsi", "input", "soc", "codecs", "clk", "regulator",
                "pinctrl", "iio", "hid", "mmc", "spi", "i2c", "tty", "serial", "power", "acpi", "firmware", "dma",
                "irqchip", "misc", "staging", "video", "fbdev", "phy", "thermal", "watchdog", "rtc", "mfd", "leds",
                "gpio", "hwmon", "infiniband", "nvme", "vfio", "virtio", "xen", "bluetooth", "can", "mtd", "nfc",
                "remoteproc", "x86", "arm64", "riscv", "mips", "boot", "mm", "kvm", "lib", "include", "uapi"]


def kernel_layout(target_files: int = 70_000) -> tuple[list[str], list[str]]:
    """A tree shaped like a large kernel: ~70,000 files in directories up to 6 deep (the same every time).

    Returns (paths, subsystems): the subsystems are the directories holding files, where authors work.
    """
    rng = random.Random(20261203)
    tops = ["drivers", "arch", "fs", "net", "sound", "include", "kernel", "tools", "Documentation", "mm", "lib",
            "security", "crypto", "block", "samples", "scripts", "virt", "ipc", "init", "certs"]
    weights = [40, 14, 10, 9, 6, 6, 3, 6, 8, 1, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1]
    budget = [max(20, target_files * w // sum(weights)) for w in weights]
    paths: list[str] = []
    subsystems: list[str] = []

    def grow(directory: str, depth: int, files: int) -> None:
        # A directory keeps a share of its files and splits the rest between 2-8 subdirectories.
        if depth >= 6 or files <= 40:
            here = files
            children = 0
        else:
            here = max(3, int(files * rng.uniform(0.05, 0.2)))
            children = rng.randint(2, 8)
        ext = ".rst" if directory.startswith("Documentation") else ".c"
        for k in range(here):
            stem = f"{STEMS[k % len(STEMS)]}{k // len(STEMS) or ''}"
            paths.append(f"{directory}/{stem}{ext if k % 5 else '.h'}")
        subsystems.append(directory)
        rest = files - here
        for name in rng.sample(SUBDIR_NAMES, children):
            grow(f"{directory}/{name}", depth + 1, rest // children)

    for top, files in zip(tops, budget):
        grow(top, 1, files)
    return list(TOP_FILES) + paths, subsystems


def base_paths() -> list[str]:
    """The ~280 paths of the first commit (the same for every seed)."""
    paths = list(TOP_FILES)
    for i, d in enumerate(DIRS):
        ext = ".rst" if d.startswith("docs") else ".py" if d.startswith("tests") else ".c"
        count = 7 + i % 4
        for j in range(count):
            paths.append(f"{d}/{STEMS[j]}{ext}")
        if ext == ".c" and not d.startswith("include"):
            paths.append(f"{d}/{d.rsplit('/', 1)[-1]}.h")
    return paths


@dataclass
class Author:
    name: str
    email: str
    zone: str
    weight: float
    start: float  # active window, as fractions of the history
    end: float
    dirs: list[int]
    mixed_case: bool = False  # varies the case of its address between commits
    old_email: str | None = None  # used before `switch`
    old_name: str | None = None  # the name used with old_email, when it differed
    switch: float = 0.0


def _email_local(rng: random.Random, first: str, last: str, n: int) -> str:
    plain = lambda s: "".join(c for c in s.lower() if c.isascii() and c.isalnum()) or "dev"
    f, l = plain(first), plain(last)
    form = rng.random()
    if form < 0.4:
        local = f"{f}.{l}"
    elif form < 0.7:
        local = f"{f[0]}{l}"
    elif form < 0.85:
        local = f
    else:
        local = f"{f}{l[:3]}{n % 97}"
    return f"{local}{n}" if rng.random() < 0.5 else local


def make_authors(seed: int, n_dirs: int = len(DIRS)) -> tuple[list[Author], list[str]]:
    """The author pool and the .mailmap lines (deterministic in `seed`)."""
    rng = random.Random(seed * 7919 + 1)
    authors: list[Author] = []
    used: set[str] = set()
    domains, dweights = zip(*DOMAINS)
    for rank in range(N_AUTHORS):
        first, last = rng.choice(FIRST), rng.choice(LAST)
        name = f"{first} {last}"
        domain = rng.choices(domains, dweights)[0]
        while True:
            local = _email_local(rng, first, last, rank)
            if domain == "users.noreply.github.com":
                local = f"{rng.randrange(10**5, 10**8)}+{local.replace('.', '-')}"
            email = f"{local}@{domain}"
            if email.lower() not in used:
                used.add(email.lower())
                break
            rank += N_AUTHORS
        if rng.random() < 0.15:  # some people write their address with capitals
            at = email.index("@")
            email = email[:at].title().replace("+", "+") + email[at:].replace("example", "Example")
        weight = 1.0 / (rank % N_AUTHORS + 4) ** 1.1
        if rank < 30:  # core maintainers: (almost) the whole history
            start, end = rng.uniform(0, 0.2), rng.uniform(0.85, 1.0)
        else:
            start = rng.uniform(-0.1, 0.98)
            length = min(1.2, rng.lognormvariate(-1.6, 1.0))
            end = start + max(length, 0.01)
        zone = rng.choices([z for z, _ in ZONES], [w for _, w in ZONES])[0]
        dirs = rng.sample(range(n_dirs), rng.choice((1, 2, 2, 3)))
        authors.append(Author(name, email, zone, weight, max(0.0, start), min(1.0, end), dirs,
                              mixed_case=rng.random() < 0.05))
    mailmap = ["# Canonical names and addresses (git-check-mailmap(1)).", ""]
    movers = rng.sample(range(5, 400), 60)
    for k, i in enumerate(sorted(movers)):
        a = authors[i]
        first, last = a.name.split(" ", 1)
        old = f"{_email_local(rng, first, last, i)}@{rng.choice(OLD_DOMAINS)}"
        a.old_email = old
        a.switch = rng.uniform(a.start, a.end)
        written = old
        if k % 10 == 3:  # the mailmap spells the old address in another case than the commits do
            written = old.upper() if old != old.upper() else old.lower()
        if k % 3 == 0:
            mailmap.append(f"<{a.email}> <{written}>")
        elif k % 5 == 1:  # matched on name and address: old commits were signed with the first name only
            a.old_name = first
            mailmap.append(f"{a.name} <{a.email}> {first} <{written}>")
        else:
            mailmap.append(f"{a.name} <{a.email}> <{written}>")
    for i in rng.sample(range(400, 1500), 10):  # name-only entries: same address, proper name
        mailmap.append(f"{authors[i].name} <{authors[i].email}>")
    return authors, mailmap


def week_weights(rng: random.Random) -> list[float]:
    """Relative commit rate per week: growth trend x lognormal noise x crunches x holidays."""
    weeks = SPAN // WEEK + 1
    out = []
    crunch = 0
    for w in range(weeks):
        trend = 0.25 + 0.75 * (w / weeks) ** 0.7
        rate = trend * rng.lognormvariate(0, 0.6)
        if crunch:
            rate *= 3.0
            crunch -= 1
        elif rng.random() < 0.02:
            crunch = rng.randint(1, 4)
        day_of_year = (w * 7) % 365.25
        if day_of_year > 355 or day_of_year < 3:
            rate *= 0.25
        out.append(rate)
    return out


class Times:
    """The i-th of n commit times (UTC), by inverse CDF over the weekly weights: monotone, bursty."""

    def __init__(self, rng: random.Random, n: int):
        weights = week_weights(rng)
        self.cum = []
        total = 0.0
        for w in weights:
            total += w
            self.cum.append(total)
        self.total, self.n, self.rng = total, n, rng

    def at(self, i: int) -> int:
        q = (i + self.rng.random()) / self.n * self.total
        w = bisect.bisect_right(self.cum, q)
        w = min(w, len(self.cum) - 1)
        lo = self.cum[w - 1] if w else 0.0
        frac = (q - lo) / (self.cum[w] - lo)
        return START + int((w + frac) * WEEK)


def zone_seconds(zone: str) -> int:
    sign = -1 if zone[0] == "-" else 1
    return sign * (int(zone[1:3]) * 3600 + int(zone[3:5]) * 60)


@dataclass
class Branch:
    ref: str
    tip: int = 0  # mark of the tip commit
    changes: dict[str, int] = field(default_factory=dict)  # path -> blob mark since last merge into main


class Writer:
    """Builds the fast-import stream in memory chunks and writes them to fast-import's stdin."""

    def __init__(self, out):
        self.out = out
        self.buf: list[bytes] = []
        self.size = 0

    def add(self, data: bytes) -> None:
        self.buf.append(data)
        self.size += len(data)
        if self.size > 1 << 20:
            self.flush()

    def flush(self) -> None:
        if self.buf:
            self.out.write(b"".join(self.buf))
            self.buf.clear()
            self.size = 0


def _data(text: str) -> bytes:
    raw = text.encode()
    return b"data %d\n%s\n" % (len(raw), raw)


class Generator:
    def __init__(self, n: int, seed: int, writer: Writer, shape: str = "default"):
        self.n, self.seed, self.w, self.shape = n, seed, writer, shape
        self.rng = random.Random(seed)
        if shape == "kernel":
            self.paths, self.dirs = kernel_layout()
        else:
            self.paths, self.dirs = base_paths(), list(DIRS)
        self.authors, self.mailmap = make_authors(seed, len(self.dirs))
        self.blob = {p: 1 + i % BLOB_POOL for i, p in enumerate(self.paths)}
        self.mark = FIRST_COMMIT_MARK
        self.times = Times(self.rng, n)
        self.maintainers = self.authors[:12]
        self._buckets: dict[int, tuple[list[Author], list[float]]] = {}
        self.bot_names = [b[:2] for b in BOTS]
        self.bot_weights = [b[2] for b in BOTS]
        self.tags = 0
        self.pulls = 0
        self.commits = 0
        self.merges = 0

    # -- people -------------------------------------------------------------
    def _active(self, frac: float) -> tuple[list[Author], list[float]]:
        key = int(frac * 120)  # 120 buckets over the history (1.5 months each)
        if key not in self._buckets:
            mid = (key + 0.5) / 120
            active = [a for a in self.authors if a.start <= mid <= a.end] or self.authors[:30]
            cum, total = [], 0.0
            for a in active:
                total += a.weight
                cum.append(total)
            self._buckets[key] = (active, cum)
        return self._buckets[key]

    def pick_author(self, t: int) -> tuple[str, str, str, Author | None]:
        frac = (t - START) / SPAN
        rng = self.rng
        if frac > 0.45 and rng.random() < 0.03 * (frac - 0.3) / 0.7:
            name, email = rng.choices(self.bot_names, self.bot_weights)[0]
            return name, email, "+0000", None
        active, cum = self._active(frac)
        a = active[bisect.bisect_left(cum, rng.random() * cum[-1])]
        name, email = a.name, a.email
        if a.old_email and frac < a.switch:
            name, email = a.old_name or a.name, a.old_email
        if a.mixed_case and rng.random() < 0.3:
            email = email.upper() if rng.random() < 0.5 else email.lower()
        zone = a.zone if rng.random() > 0.04 else rng.choice(ZONES)[0]
        return name, email, zone, a

    def pick_files(self, a: Author | None) -> list[str]:
        rng = self.rng
        if a is None:
            return [rng.choice(BOT_FILES)]
        if self.shape == "kernel":  # 1-5 files of one subsystem, as most kernel commits are
            cands = self._dir_paths(self.dirs[rng.choice(a.dirs)]) or self.paths
            return sorted(set(rng.choice(cands) for _ in range(rng.choice((1, 1, 1, 2, 2, 3, 4, 5)))))
        out = []
        for _ in range(rng.choice((1, 1, 1, 2, 2, 3))):
            if rng.random() < 0.8:
                cands = self._dir_paths(self.dirs[rng.choice(a.dirs)])
                out.append(rng.choice(cands) if cands else rng.choice(self.paths))
            else:
                out.append(rng.choice(self.paths))
        return sorted(set(out))

    def _dir_paths(self, d: str) -> list[str]:
        cache = getattr(self, "_dir_cache", None)
        if cache is None or cache[0] != len(self.paths):
            by: dict[str, list[str]] = {}
            for p in self.paths:
                by.setdefault(p.rsplit("/", 1)[0] if "/" in p else "", []).append(p)
            self._dir_cache = cache = (len(self.paths), by)
        return cache[1].get(d, [])

    # -- stream -------------------------------------------------------------
    def commit(self, branch: Branch, t: int, who, message: str, files: list[str], *,
               parent: int | None = None, merge: int | None = None, extra: dict[str, int] | None = None,
               committer=None, author_time: int | None = None) -> int:
        self.mark += 1
        mark = self.mark
        name, email, zone, _ = who
        at = author_time if author_time is not None else t
        if committer is None:
            cline = b"committer %s <%s> %d %s\n" % (name.encode(), email.encode(), t, zone.encode())
        else:
            cline = b"committer %s <%s> %d %s\n" % (committer.name.encode(), committer.email.encode(), t,
                                                   committer.zone.encode())
        parts = [b"commit %s\nmark :%d\nauthor %s <%s> %d %s\n" % (branch.ref.encode(), mark, name.encode(),
                                                                  email.encode(), at, zone.encode()),
                 cline, _data(message)]
        if parent is not None:
            parts.append(b"from :%d\n" % parent)
        if merge is not None:
            parts.append(b"merge :%d\n" % merge)
        changed = dict(extra or {})
        for p in files:
            new = (self.blob.get(p, 0) + 1 + self.rng.randrange(BLOB_POOL - 1)) % BLOB_POOL + 1
            self.blob[p] = new
            changed[p] = new
        for p, b in sorted(changed.items()):
            parts.append(b"M 100644 :%d %s\n" % (b, p.encode()))
        parts.append(b"\n")
        self.w.add(b"".join(parts))
        branch.tip = mark
        self.commits += 1
        if merge is not None:
            self.merges += 1
        for p, b in changed.items():
            branch.changes[p] = b
        return mark

    def tag(self, name: str, mark: int, t: int, annotated: bool) -> None:
        if annotated:
            m = self.maintainers[self.tags % len(self.maintainers)]
            self.w.add(b"tag %s\nfrom :%d\ntagger %s <%s> %d %s\n%s" % (
                name.encode(), mark, m.name.encode(), m.email.encode(), t, m.zone.encode(),
                _data(f"Release {name}")))
        else:
            self.w.add(b"reset refs/tags/%s\nfrom :%d\n\n" % (name.encode(), mark))
        self.tags += 1

    def run(self) -> dict:
        rng, n = self.rng, self.n
        for i in range(1, BLOB_POOL + 1):
            self.w.add(b"blob\nmark :%d\n%s" % (i, _data(f"content {i}")))
        self.w.add(b"blob\nmark :%d\n%s" % (BLOB_POOL + 1, _data("\n".join(self.mailmap[:-25]) + "\n")))
        self.w.add(b"blob\nmark :%d\n%s" % (BLOB_POOL + 2, _data("\n".join(self.mailmap) + "\n")))
        main = Branch("refs/heads/main")
        root_author = self.maintainers[0]
        who = (root_author.name, root_author.email, root_author.zone, root_author)
        files = {p: self.blob[p] for p in self.paths}
        files[".mailmap"] = BLOB_POOL + 1
        self.commit(main, START, who, "Initial import", [], extra=files)
        main.changes.clear()
        releases: list[tuple[Branch, float]] = []  # (branch, fraction when cut)
        features = [(Branch(f"refs/heads/{b}"), merged) for b, merged in FEATURES]
        topics: list[Branch | None] = [None] * TOPIC_SLOTS
        feature_starts = [0.08, 0.3, 0.55, 0.8]
        main_tags_every = max(1, n // 300)
        next_release_year = 1
        release_tags_every = max(1, n // 200)
        new_path_every = max(1, n // 120)
        mailmap_update_at = n // 2
        minor = 0
        for i in range(1, n):
            t = self.times.at(i)
            frac = (t - START) / SPAN
            who = self.pick_author(t)
            committer = None
            author_time = None
            if who[3] is not None and rng.random() < 0.10:
                committer = rng.choice(self.maintainers)
                author_time = t - rng.randrange(0, 60 * 86400) if rng.random() < 0.7 else t
            # cut a release branch once a year
            if frac * YEARS >= next_release_year:
                rel = Branch(f"refs/heads/release-{next_release_year}.x")
                rel.tip = main.tip
                self.w.add(b"reset %s\nfrom :%d\n\n" % (rel.ref.encode(), main.tip))
                releases.append((rel, frac))
                self.tag(f"v{next_release_year}.0", main.tip, t, True)
                next_release_year += 1
            for k, (fb, _) in enumerate(features):
                if fb.tip == 0 and frac >= feature_starts[k]:
                    fb.tip = main.tip
                    self.w.add(b"reset %s\nfrom :%d\n\n" % (fb.ref.encode(), main.tip))
            live_releases = [r for r, cut in releases if frac - cut < 2 / YEARS]
            live_features = [f for f in features if f[0].tip]
            r = rng.random()
            if i == mailmap_update_at:
                self.commit(main, t, who, ".mailmap: add more people", [], extra={".mailmap": BLOB_POOL + 2},
                            parent=main.tip)
            elif i % new_path_every == 0:
                d = self.dirs[i // new_path_every % len(self.dirs)]
                path = f"{d}/new{i // new_path_every}.c"
                self.paths.append(path)
                self.blob[path] = 1
                self.commit(main, t, who, f"{d.rsplit('/', 1)[-1]}: add {path.rsplit('/', 1)[-1]}", [],
                            extra={path: 1}, parent=main.tip, committer=committer, author_time=author_time)
            elif r < 0.17 and who[3] is not None:  # work on a topic branch
                slot = rng.randrange(TOPIC_SLOTS)
                topic = topics[slot]
                if topic is None:
                    topic = topics[slot] = Branch(f"refs/heads/topic/slot{slot}")
                    topic.tip = main.tip
                self.commit(topic, t, who, self.message(who), self.pick_files(who[3]), parent=topic.tip,
                            committer=committer, author_time=author_time)
            elif r < 0.215:  # merge a topic into main (or abandon it)
                ready = [k for k, tp in enumerate(topics) if tp is not None and tp.changes]
                if ready:
                    slot = rng.choice(ready)
                    topic = topics[slot]
                    topics[slot] = None
                    if rng.random() < 0.015 and self.pulls < 50:
                        self.pulls += 1
                        self.w.add(b"reset refs/pull/%d/head\nfrom :%d\n\n" % (1000 + self.pulls, topic.tip))
                        continue
                    m = rng.choice(self.maintainers)
                    mwho = (m.name, m.email, m.zone, m)
                    self.commit(main, t, mwho, f"Merge branch 'topic-{i}'", [], parent=main.tip, merge=topic.tip,
                                extra=topic.changes)
                else:
                    self.commit(main, t, who, self.message(who), self.pick_files(who[3]), parent=main.tip,
                                committer=committer, author_time=author_time)
            elif r < 0.265 and live_releases and who[3] is not None:  # backport
                rel = rng.choice(live_releases)
                self.commit(rel, t, who, "[backport] " + self.message(who), self.pick_files(who[3]),
                            parent=rel.tip, committer=committer, author_time=author_time)
            elif r < 0.295 and live_features and who[3] is not None:
                fb, merged = rng.choice(live_features)
                self.commit(fb, t, who, self.message(who), self.pick_files(who[3]), parent=fb.tip,
                            committer=committer, author_time=author_time)
            elif r < 0.2965 and live_features:
                fb, merged = rng.choice(live_features)
                if merged and fb.changes:
                    m = self.maintainers[0]
                    self.commit(main, t, (m.name, m.email, m.zone, m), f"Merge branch '{fb.ref[11:]}'", [],
                                parent=main.tip, merge=fb.tip, extra=fb.changes)
                    fb.changes.clear()
                else:
                    self.commit(main, t, who, self.message(who), self.pick_files(who[3]), parent=main.tip,
                                committer=committer, author_time=author_time)
            else:
                self.commit(main, t, who, self.message(who), self.pick_files(who[3]), parent=main.tip,
                            committer=committer, author_time=author_time)
            if i % main_tags_every == 0 and self.tags < N_TAGS - 1:
                minor += 1
                self.tag(f"v{next_release_year - 1}.{minor}-rc{i % 7}", main.tip, t, minor % 2 == 0)
            if i % release_tags_every == 1 and live_releases and self.tags < N_TAGS - 1:
                rel = live_releases[-1]
                self.tag(f"{rel.ref[11:-2]}.{i // release_tags_every}", rel.tip, t, i % 3 == 0)
        # topic slots are scratch refs: drop them (their merged commits stay reachable from main)
        for slot, topic in enumerate(topics):
            self.w.add(b"reset refs/heads/topic/slot%d\n\n" % slot)
        self.w.add(b"done\n")
        self.w.flush()
        return {"commits": self.commits, "merges": self.merges, "tags": self.tags, "pulls": self.pulls,
                "releases": len(releases), "paths": len(self.paths) + 1}

    def message(self, who) -> str:
        a = who[3]
        d = self.dirs[a.dirs[0]] if a is not None else "deps"
        verb = self.rng.choice(("fix", "add", "clean up", "refactor", "document", "speed up", "handle"))
        return f"{d.rsplit('/', 1)[-1]}: {verb} {self.rng.choice(STEMS)} path"


def git(*args: str, cwd: Path | None = None, **kw) -> subprocess.CompletedProcess:
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null"}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, **kw)


def fast_import(out: Path, feed) -> None:
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null"}
    proc = subprocess.Popen(["git", "fast-import", "--quiet", "--done", "--active-branches=16",
                             "--depth=50"], cwd=out, stdin=subprocess.PIPE, env=env)
    try:
        result = feed(Writer(proc.stdin))
        proc.stdin.close()
    except BrokenPipeError:
        result = None
    if proc.wait() != 0:
        raise SystemExit(f"git fast-import failed with status {proc.returncode}")
    return result


def generate(out: Path, n: int, seed: int, shape: str = "default") -> dict:
    if out.exists() and any(out.iterdir()):
        raise SystemExit(f"{out} exists and is not empty; remove it or use --append")
    out.mkdir(parents=True, exist_ok=True)
    git("init", "--quiet", "--bare", "--initial-branch=main", str(out))
    stats = fast_import(out, lambda w: Generator(n, seed, w, shape).run())
    git("pack-refs", "--all", cwd=out)
    return stats


def append(out: Path, k: int, seed: int) -> dict:
    """K more linear commits on main, newer than everything in the repository."""
    tip = git("rev-parse", "refs/heads/main", cwd=out, capture_output=True, text=True).stdout.strip()
    last = git("log", "-1", "--format=%ct", "refs/heads/main", cwd=out, capture_output=True, text=True).stdout
    rng = random.Random(f"{seed}:{tip}")
    authors, _ = make_authors(seed)
    weights = [a.weight for a in authors]
    paths = base_paths()
    t = int(last) + 60

    def feed(w: Writer) -> dict:
        first = True
        t_now = t
        for _ in range(k):
            t_now += rng.randrange(30, 900)
            a = rng.choices(authors, weights)[0]
            zone = a.zone
            head = b"commit refs/heads/main\nauthor %s <%s> %d %s\ncommitter %s <%s> %d %s\n" % (
                a.name.encode(), a.email.encode(), t_now, zone.encode(), a.name.encode(), a.email.encode(),
                t_now, zone.encode())
            parts = [head, _data(f"{DIRS[a.dirs[0]].rsplit('/', 1)[-1]}: follow-up change")]
            if first:
                parts.append(b"from refs/heads/main^0\n")
                first = False
            for p in sorted(set(rng.choice(paths) for _ in range(rng.choice((1, 1, 2, 3))))):
                parts.append(b"M 100644 inline %s\n%s" % (p.encode(), _data(f"content {rng.randrange(1, BLOB_POOL + 1)}")))
            parts.append(b"\n")
            w.add(b"".join(parts))
        w.add(b"done\n")
        w.flush()
        return {"appended": k}

    return fast_import(out, feed)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--commits", type=int, default=1_000_000, help="commits to generate (default 1,000,000)")
    ap.add_argument("--out", type=Path, required=True, help="directory of the bare repository to create")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--append", type=int, metavar="K", help="append K commits on main of the existing --out repository")
    ap.add_argument("--shape", choices=("default", "kernel"), default="default",
                    help="kernel: ~70,000 files up to 6 directories deep, commits touching 1-5 files of one subsystem")
    args = ap.parse_args(argv)
    started = time.perf_counter()
    if args.append is not None:
        stats = append(args.out, args.append, args.seed)
    else:
        stats = generate(args.out, args.commits, args.seed, args.shape)
    print(f"{args.out}: {stats} in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
