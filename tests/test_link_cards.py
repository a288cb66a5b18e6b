"""The cap on cards per message (bot/faces/links.py: MAX_UNFURLS): a message pasting more links to tracked
repositories than that gets cards for the first MAX_UNFURLS only, in one chat.unfurl, and never a second call;
each card costs a report, and Slack shows a handful. Through tests/test_links.py's real path (a signed
link_shared event -> Bolt -> the engine -> the Slack stand-in)."""

from __future__ import annotations

from tests.boltidle import drain
from tests.test_links import links, stub  # noqa: F401  (fixtures)
from tests.test_surfaces import read


def test_a_message_of_many_tracked_links_gets_five_cards_the_first_five(links, stub):
    urls = [f"{links.base}/web/tree/main/dir{n}" for n in range(7)]
    links.paste(*urls)
    (call,) = stub.wait_for("chat.unfurl", timeout=15)
    cards = call.args["unfurls"]
    assert list(cards) == urls[:5]
    assert all("*2GAD 16 person-days* all time" in read(card) for card in cards.values())
    drain(links.app)
    assert len(stub.calls_to("chat.unfurl")) == 1
