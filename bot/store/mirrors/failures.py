"""What a failed fetch's words mean: the source saying there is no such repository (nothing to retry), or damage
to the mirror's own objects (re-clone), as against the network or the remote."""

from __future__ import annotations

# A sync whose source answers this has nothing to retry: `gad-bot doctor` fails on it at once (is_gone_upstream).
GONE_UPSTREAM = "the source says there is no such repository"
# What servers say for a repository that is not there: smart HTTP's status, git daemon's and the forges' words.
_NO_SUCH_REPOSITORY = ("status code: 404", "status code: 410", "no such repository", "repository not found",
                       "could not be found", "does not appear to be a git repository")


def says_no_such_repository(error: Exception) -> bool:
    text = str(error).lower()
    return any(marker in text for marker in _NO_SUCH_REPOSITORY)


def is_gone_upstream(last_error: str | None) -> bool:
    """Whether a recorded sync error is the source saying the repository is not there (see `fetch.fetch_here`)."""
    return bool(last_error) and GONE_UPSTREAM in last_error


def is_local_damage(error: Exception) -> bool:
    """Whether a fetch failed on the mirror's own objects (not on the network or the remote)."""
    text = str(error).lower()
    return isinstance(error, KeyError) or any(
        marker in text for marker in ("object not found", "packfile", "pack file", "inflate", "corrupt",
                                      "missing object", "failed to parse", "bad object"))
