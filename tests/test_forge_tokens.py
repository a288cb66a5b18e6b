"""Each forge reads its token from its own header, as its public API docs say (GitHub "Authenticating to the REST
API": `Authorization: Bearer` or `token`; GitLab "REST API authentication": `PRIVATE-TOKEN` or `Authorization:
Bearer`; Gitea "API Usage": `Authorization: token`). The loopback forge (tests/forgestub.py) refuses any other form,
so a client that sends one forge's header to another fails here as it would there."""

from __future__ import annotations

import http.client

import pytest

from bot.config import Settings
from bot.engine.engine import Engine
from bot.store.forges import ForgeClient
from tests.forgestub import API_PREFIX, ForgeStub

TOKEN = "forge-token-123"
FORMS = {"github bearer": ("Authorization", f"Bearer {TOKEN}"), "github token": ("Authorization", f"token {TOKEN}"),
         "gitlab private-token": ("PRIVATE-TOKEN", TOKEN), "gitea token": ("Authorization", f"token {TOKEN}")}
ACCEPTED = {"github": {("Authorization", f"Bearer {TOKEN}"), ("Authorization", f"token {TOKEN}")},
            "gitlab": {("PRIVATE-TOKEN", TOKEN), ("Authorization", f"Bearer {TOKEN}")},
            "gitea": {("Authorization", f"token {TOKEN}")}}


def listing_path(kind: str) -> str:
    return API_PREFIX[kind] + ("/groups/acme/projects?include_subgroups=true" if kind == "gitlab" else "/orgs/acme/repos")


def get(stub: ForgeStub, path: str, headers: dict[str, str]) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", stub.port, timeout=10)
    try:
        conn.request("GET", path, headers=headers)
        answer = conn.getresponse()
        return answer.status, answer.read()
    finally:
        conn.close()


@pytest.mark.parametrize("kind", ["github", "gitlab", "gitea"])
def test_the_stand_in_forge_reads_only_its_own_token_headers(kind, tmp_path):
    with ForgeStub(tmp_path / "srv", kind, token=TOKEN) as stub:
        stub.add("acme/web")
        stub.add("acme/secret", private=True)
        forms = {*FORMS.values(), ("Authorization", f"Bearer {TOKEN}"), ("PRIVATE-TOKEN", f"Bearer {TOKEN}")}
        for header, value in sorted(forms):
            status, body = get(stub, listing_path(kind), {header: value})
            if (header, value) in ACCEPTED[kind]:
                assert status == 200 and b"acme/secret" in body, (header, value, status)
            else:
                assert status == 401 and b"acme/" not in body, (header, value, status)
        # the right form with a token the forge does not know is refused too; no credentials at all is anonymous
        (header, value), *_ = sorted(ACCEPTED[kind])
        assert get(stub, listing_path(kind), {header: value.replace(TOKEN, "guessed")})[0] == 401
        status, body = get(stub, listing_path(kind), {})
        assert status == 200 and b"acme/web" in body and b"acme/secret" not in body


@pytest.mark.parametrize("kind", ["github", "gitlab", "gitea"])
def test_gad_bot_sends_each_forge_its_own_header_and_sees_the_private_repositories(kind, tmp_path):
    """What an operator sees: the token in GAD_HTTPS_TOKENS opens the organization's private repository on every forge
    kind (sent in another forge's header, the listing would be refused)."""
    with ForgeStub(tmp_path / "srv", kind, token=TOKEN) as stub:
        stub.add("acme/web")
        stub.add("acme/secret", private=True, commits=[("dee@acme.example", "2024-04-01")])
        engine = Engine.open(Settings.from_env({"GAD_DATA_DIR": str(tmp_path / "data"),
                                                "GAD_FORGES": stub.forges_setting,
                                                "GAD_HTTPS_TOKENS": f"127.0.0.1={TOKEN}"}))
        result = engine.track_org(engine.org_owner(stub.owner_url("acme")))
        assert sorted(engine.projects()[result.org]) == ["acme/secret", "acme/web"]
        sent = {header: value for header, value in ForgeClient(token=TOKEN).headers_for(kind).items()
                if header in ("Authorization", "PRIVATE-TOKEN")}
        assert set(sent.items()) <= ACCEPTED[kind] and len(sent) == 1
