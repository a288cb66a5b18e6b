"""What serve remembers of the requests it answered: webhook delivery ids and bodies, Slack request signatures
(the replay guards)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from .base import IndexFile, _iso, parse_time


class Serving(IndexFile):
    # -- webhook deliveries ------------------------------------------------------
    def record_delivery(self, delivery: str, host: str, at: datetime, keep: timedelta) -> bool:
        """Remember a webhook delivery id; False when it was already there (a replay). Ids older than `keep` go."""
        return self._remember_once("webhook_deliveries", (delivery, host), at, keep)

    def delivery_seen(self, delivery: str, since: datetime) -> bool:
        """Whether a webhook delivery id was recorded at `since` or later (nothing is recorded)."""
        return self.conn.execute("SELECT 1 FROM webhook_deliveries WHERE delivery = ? AND received_at >= ?",
                                 (delivery, _iso(since))).fetchone() is not None

    def record_webhook_body(self, host: str, digest: str, at: datetime, keep: timedelta, repository: str = "") -> str:
        """Remember the digest of a webhook body `host` sent: '' (a duplicate) when it is there already (the same
        body again, under another delivery id), 'new' when it was not, 'again' when it was but is taken anew.
        Digests older than `keep` go. With `repository` (the tracked repository the body is for), a body is a
        duplicate of the last one accepted for its repository only, since a push's body need not name its time
        (GitLab's: A->B, B->A, then A->B again repeats the first body, and is a new push): a body that another
        one for its repository followed is taken 'again', and its row made the latest (no second row)."""
        # to the microsecond: which body came last for a repository, even of several sent within one second
        received = at.astimezone(timezone.utc).isoformat(timespec="microseconds")
        with self.transaction() as db:
            db.execute("DELETE FROM webhook_bodies WHERE received_at < ?", (_iso(at - keep),))
            seen = db.execute("SELECT received_at FROM webhook_bodies WHERE host = ? AND digest = ?",
                              (host, digest)).fetchone()
            if seen is None:
                db.execute("INSERT INTO webhook_bodies (host, digest, received_at, repository) VALUES (?, ?, ?, ?)",
                           (host, digest, received, repository))
                return "new"
            followed = repository and db.execute(
                "SELECT 1 FROM webhook_bodies WHERE host = ? AND repository = ? AND digest != ? AND received_at > ?",
                (host, repository, digest, seen[0])).fetchone()
            if not followed:
                return ""
            db.execute("UPDATE webhook_bodies SET received_at = ?, repository = ? WHERE host = ? AND digest = ?",
                       (received, repository, host, digest))
            return "again"

    def _remember_once(self, table: str, key: tuple[str, str], at: datetime, keep: timedelta) -> bool:
        """Insert `key` received `at` into `table` (key columns, then received_at) unless it is there; rows
        received before `at - keep` are forgotten first. True when it was new."""
        with self.transaction() as db:
            db.execute(f"DELETE FROM {table} WHERE received_at < ?", (_iso(at - keep),))
            cursor = db.execute(f"INSERT OR IGNORE INTO {table} VALUES (?, ?, ?)", (*key, _iso(at)))
            return cursor.rowcount == 1

    def slack_request_seen(self, signature: str, now: float) -> bool:
        """Whether a Slack request's signature is remembered and its time has not passed (nothing is written)."""
        return self.conn.execute("SELECT 1 FROM slack_requests WHERE signature = ? AND until >= ?",
                                 (signature, int(now))).fetchone() is not None

    def record_slack_request(self, signature: str, until: int, now: float) -> bool:
        """Remember a Slack request's signature until `until` (epoch seconds); False when it was
        already there (a replay). Signatures whose time has passed are forgotten first."""
        with self.transaction() as db:
            db.execute("DELETE FROM slack_requests WHERE until < ?", (int(now),))
            cursor = db.execute("INSERT OR IGNORE INTO slack_requests VALUES (?, ?)", (signature, until))
            return cursor.rowcount == 1

    def last_deliveries(self) -> dict[str, datetime]:
        """When the last webhook of each forge host was accepted."""
        rows = self.conn.execute("SELECT host, max(received_at) FROM webhook_deliveries GROUP BY host").fetchall()
        return {host: parse_time(when) for host, when in rows}
