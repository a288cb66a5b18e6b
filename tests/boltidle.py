"""Wait for an in-process Bolt app to go idle: the event that proves a negative check could have failed.

With `process_before_response=False` (as gad-bot runs), `App.dispatch` hands the ack and plain listeners to one
thread pool and the lazy functions to another (bot/faces/slack.py build_app) before it returns; nothing else submits
to them. Shutting both down and waiting for them therefore waits for everything the requests dispatched so far
will ever do (a Web API call, a response_url POST): after `drain(app)`, "nothing was posted" means nothing will be. The app takes no more
requests afterwards, so it is a test's last step with that app.
"""

from __future__ import annotations


def drain(app) -> None:
    """Wait until every listener and lazy function `app` has started has returned."""
    runner = app.listener_runner
    runner.listener_executor.shutdown(wait=True)
    runner.lazy_listener_runner.executor.shutdown(wait=True)
