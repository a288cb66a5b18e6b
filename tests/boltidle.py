"""Wait for an in-process Bolt app to go idle: the event that proves a negative check could have failed.

With `process_before_response=False` (as gad-bot runs), `App.dispatch` acks and hands the listener and its lazy
functions to one thread pool before it returns; nothing else submits to it. Shutting that pool down and waiting
for it therefore waits for everything the requests dispatched so far will ever do (a Web API call, a
response_url POST): after `drain(app)`, "nothing was posted" means nothing will be. The app takes no more
requests afterwards, so it is a test's last step with that app.
"""

from __future__ import annotations


def drain(app) -> None:
    """Wait until every listener and lazy function `app` has started has returned."""
    app.listener_runner.listener_executor.shutdown(wait=True)
