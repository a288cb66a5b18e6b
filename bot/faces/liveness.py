"""Is `serve` running on this data directory? One lock held for the serving process's life, and a heartbeat.

    with ServeLock.acquire(settings) as lock:   # ConfigError (one sentence) when another serve holds it
        heartbeat = Heartbeat(settings); heartbeat.start() ... heartbeat.stop()

The lock (`serve.lock`, flock) is the truth: the kernel frees it with the process, `kill -9`
included, so `serve_pid` can ask it from any process (`status`, `doctor`) without trusting a
file's age. The heartbeat file (`serve.heartbeat`, touched every HEARTBEAT_SECONDS) is what the
container HEALTHCHECK reads cheaply; only the lock's holder ever writes or removes it, so a second
`serve` that is refused never removes the live one's heartbeat.

stdlib only (fcntl).
"""

from __future__ import annotations

import errno
import fcntl
import os
import threading
import time
from pathlib import Path

from ..config import Settings
from ..errors import ConfigError

HEARTBEAT_SECONDS = 30
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


class ServeLock:
    """The exclusive lock on `serve.lock`, held until `release()` or the process ends."""

    def __init__(self, fd: int):
        self.fd = fd

    @classmethod
    def acquire(cls, settings: Settings) -> "ServeLock":
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
    """Touch the heartbeat file every HEARTBEAT_SECONDS; only a `ServeLock` holder may run one."""

    def __init__(self, settings: Settings, lock: ServeLock):
        super().__init__(name="heartbeat", daemon=True)
        self.path = heartbeat_path(settings)
        self.lock = lock
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.is_set():
            self.path.touch()
            self.stopped.wait(HEARTBEAT_SECONDS)

    def stop(self) -> None:
        self.stopped.set()
        if self.lock.fd >= 0:  # still ours: nobody else can have started beating meanwhile
            self.path.unlink(missing_ok=True)
