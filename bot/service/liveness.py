"""Is `serve` running on this data directory? One lock held for the serving process's life, and a heartbeat.

    with ServeLock.acquire(settings) as lock:   # ConfigError (one sentence) when another serve holds it
        heartbeat = Heartbeat(settings); heartbeat.start() ... heartbeat.stop()

The lock (`serve.lock`, flock) is the truth: the kernel frees it with the process, `kill -9`
included, so `serve_pid` can ask it from any process (`status`, `doctor`) without trusting a
file's age. The heartbeat file (`serve.heartbeat`, rewritten every HEARTBEAT_SECONDS) is what the
container HEALTHCHECK reads cheaply (its age), and what `gad-bot status` reads of the serving
process's inside (a `ServeState`: queue, workers, the scheduler's jobs); only the lock's holder ever writes or removes it, so a second
`serve` that is refused never removes the live one's heartbeat.

stdlib only (fcntl).
"""

from __future__ import annotations

import errno
import fcntl
import json
import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..config import Settings
from ..errors import ConfigError

log = logging.getLogger(__name__)

HEARTBEAT_SECONDS = 30
RETRY_SECONDS = 5  # after a beat that could not be written (a full disk): soon, so it is fresh again soon after
LOCK_NAME = "serve.lock"
HEARTBEAT_NAME = "serve.heartbeat"


def lock_path(settings: Settings) -> Path:
    return settings.data_dir / LOCK_NAME


def heartbeat_path(settings: Settings) -> Path:
    return settings.data_dir / HEARTBEAT_NAME


def heartbeat_age(settings: Settings) -> float | None:
    """Seconds since the serving process last said it was alive, or None."""
    try:
        return time.time() - heartbeat_path(settings).stat().st_mtime
    except OSError:
        return None


def serve_pid(settings: Settings) -> int | None:
    """The process id of the `serve` holding this data directory's lock, or None when none does."""
    try:
        fd = os.open(lock_path(settings), os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError as error:
            if error.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                return None
            text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
            return int(text) if text.isdigit() else 0  # held (a pid not written yet reads as 0)
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


@dataclass(frozen=True)
class JobState:
    id: str
    name: str
    last_run: str | None  # ISO 8601, UTC
    last_outcome: str | None
    next_run: str | None


@dataclass(frozen=True)
class ServeState:
    """What the serving process says of itself at each heartbeat."""

    pid: int
    written_at: float  # time.time()
    version: str = ""
    mode: str = ""
    queue_waiting: int = 0
    reports_running: int = 0
    workers: int = 0
    workers_alive: int = 0
    jobs: list[JobState] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # readiness's failing parts (`FAIL disk: ...`), as /readyz

    @classmethod
    def from_json(cls, text: str) -> "ServeState | None":
        try:
            raw = json.loads(text)
            jobs = [JobState(**job) for job in raw.pop("jobs", [])]
            return cls(**raw, jobs=jobs)
        except (ValueError, TypeError):
            return None  # an older serve's empty heartbeat, or one being written


def read_state(settings: Settings) -> ServeState | None:
    """The live `serve`'s last heartbeat, or None (none written, or unreadable)."""
    try:
        return ServeState.from_json(heartbeat_path(settings).read_text(encoding="utf-8"))
    except OSError:
        return None


class ServeLock:
    """The exclusive lock on `serve.lock`, held until `release()` or the process ends."""

    def __init__(self, fd: int):
        self.fd = fd

    @classmethod
    def acquire(cls, settings: Settings, doing: str | None = None) -> "ServeLock":
        """The lock, or ConfigError (one sentence). `doing`: what a command other than `serve` wants
        the lock for (`restore the index`), named in its refusal."""
        try:
            settings.data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd = os.open(lock_path(settings), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError as error:
            raise ConfigError(f"gad-bot cannot write in its data directory {settings.data_dir} "
                              f"({error.strerror}); give the service user write access to it, "
                              "or point GAD_DATA_DIR elsewhere.") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            held = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
            os.close(fd)
            if doing:
                raise ConfigError(f"`gad-bot serve` (process {held or '?'}) is running on {settings.data_dir}; "
                                  f"stop it first (systemctl stop gad-bot, docker compose stop gad-bot), then "
                                  f"{doing}.") from None
            raise ConfigError(f"another `gad-bot serve` (process {held or '?'}) is already running on "
                              f"{settings.data_dir}; stop it first, or give this one its own GAD_DATA_DIR.") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        return cls(fd)

    def release(self) -> None:
        if self.fd >= 0:
            os.ftruncate(self.fd, 0)
            os.close(self.fd)  # closing the descriptor frees the flock
            self.fd = -1

    def __enter__(self) -> "ServeLock":
        return self

    def __exit__(self, *exc) -> None:
        self.release()


class Heartbeat(threading.Thread):
    """Touch the heartbeat file every HEARTBEAT_SECONDS; only a `ServeLock` holder may run one.

    It outlives what it cannot write: on a full disk (or any OSError) the old file's time is still
    refreshed (`utime` needs no free block), so liveness keeps saying the process runs (restarting it
    would not free space) while readiness says the disk is full; the thread says so once in the log,
    tries again every RETRY_SECONDS, and writes the whole heartbeat again as soon as there is room.
    """

    def __init__(self, settings: Settings, lock: ServeLock, describe: Callable[[], ServeState] | None = None):
        super().__init__(name="heartbeat", daemon=True)
        self.path = heartbeat_path(settings)
        self.lock = lock
        self.describe = describe or (lambda: ServeState(os.getpid(), time.time()))
        self.stopped = threading.Event()
        self._woken = threading.Event()
        self.failing: str | None = None  # why the last beat could not be written whole

    def wake(self) -> None:
        """Beat now: what serve says of itself changed (readiness), and `gad-bot status` should read it at once."""
        self._woken.set()

    def run(self) -> None:
        while not self.stopped.is_set():
            self._woken.clear()
            try:
                self.beat()
            except Exception:  # nothing may end this thread but stop(): `healthcheck` reads its beats
                log.exception("the heartbeat failed; trying again")
            self._woken.wait(RETRY_SECONDS if self.failing else HEARTBEAT_SECONDS)

    def beat(self) -> None:
        """Rewrite the heartbeat whole (a reader never sees half of one); on a write error, refresh its time."""
        try:
            state = self.describe()
        except Exception:  # what it says is a courtesy; that it beats is the point
            log.exception("describing serve for its heartbeat failed")
            state = ServeState(os.getpid(), time.time())
        temporary = self.path.with_name(self.path.name + ".tmp")
        try:
            temporary.write_text(json.dumps(asdict(state)), encoding="utf-8")
            os.replace(temporary, self.path)
        except OSError as error:
            temporary.unlink(missing_ok=True)  # a half-written one takes the space the next beat needs
            try:
                os.utime(self.path)  # the old heartbeat, fresh: the process is alive, only the disk is not well
            except OSError:
                pass
            if self.failing is None:
                log.error("cannot write the heartbeat %s (%s); refreshing its time meanwhile and trying again every "
                          "%s s", self.path, error.strerror or error, RETRY_SECONDS)
            self.failing = error.strerror or str(error)
            return
        if self.failing is not None:
            log.info("the heartbeat is written again (it could not be: %s)", self.failing)
            self.failing = None

    def stop(self) -> None:
        self.stopped.set()
        self._woken.set()
        if self.lock.fd >= 0:  # still ours: nobody else can have started beating meanwhile
            self.path.unlink(missing_ok=True)
