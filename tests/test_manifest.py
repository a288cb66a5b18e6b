"""manifest.yml is what an admin pastes into "Create app from manifest": it must be valid and minimal."""

from __future__ import annotations

import json
import os
from pathlib import Path

import jsonschema
import pytest
import yaml

REPO = Path(__file__).resolve().parent.parent
MANIFEST = REPO / "manifest.yml"
SCHEMA_NAME = "slack/manifest.schema.1.0.0.json"

# Every bot scope the features use, and no other: adding one is a deliberate act (and a re-install).
EXPECTED_BOT_SCOPES = {
    "commands",  # /gad
    "chat:write",  # answers and digests
    "chat:write.public",  # digests in public channels the bot was not invited to
    "files:write",  # digest charts, CSV exports
    "users:read",  # subscriber's time zone, is the user a workspace admin, a guest, of another organization
    "users:read.email",  # /gad me and teams: a member's commits found by their profile's e-mail
    "usergroups:read",  # user groups in audiences, and team:@group
    "channels:read",  # Home: the public channels a person is in, for their digests
    "groups:read",  # ... and the private ones
    "links:read",  # link_shared: links of the unfurl domains pasted in messages
    "links:write",  # chat.unfurl: the card of a tracked repository
}


def _schema_path() -> Path | None:
    candidates = [REPO.parent / "shared" / SCHEMA_NAME]
    if os.environ.get("GAD_SHARED_DIR"):
        candidates.append(Path(os.environ["GAD_SHARED_DIR"]) / SCHEMA_NAME)
    return next((path for path in candidates if path.is_file()), None)


@pytest.fixture(scope="module")
def manifest() -> dict:
    return yaml.safe_load(MANIFEST.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def schema() -> dict:
    path = _schema_path()
    if path is None:
        pytest.skip(f"Slack's manifest schema is absent: neither ../shared/{SCHEMA_NAME} next to the checkout "
                    f"nor $GAD_SHARED_DIR/{SCHEMA_NAME} exists")
    return json.loads(path.read_text(encoding="utf-8"))


def test_manifest_validates_against_slacks_schema(manifest, schema):
    validator_class = jsonschema.validators.validator_for(schema)
    validator_class.check_schema(schema)
    validator = validator_class(schema, format_checker=validator_class.FORMAT_CHECKER)
    errors = [f"{'/'.join(map(str, e.absolute_path)) or '(root)'}: {e.message}" for e in validator.iter_errors(manifest)]
    assert not errors, "\n".join(errors)


def test_background_color_is_a_hex_colour(manifest):
    # The schema spells this constraint as "regex", which JSON Schema ignores; Slack enforces it.
    import re

    assert re.fullmatch(r"#[0-9a-fA-F]{3}([0-9a-fA-F]{3})?", manifest["display_information"]["background_color"])


def test_display_information_explains_2gad(manifest):
    info = manifest["display_information"]
    assert info["name"] == "gad-bot"
    assert "2GAD" in info["description"]
    assert "2GAD" in info["long_description"]


def test_gad_slash_command_has_a_usage_hint(manifest):
    commands = {c["command"]: c for c in manifest["features"]["slash_commands"]}
    assert set(commands) == {"/gad"}
    gad = commands["/gad"]
    assert gad["description"].strip()
    assert "REPO" in gad["usage_hint"] and "help" in gad["usage_hint"]
    # Socket Mode needs no request URL; a stray one would point Slack at a host that may not exist.
    assert "url" not in gad


def test_bot_user_exists(manifest):
    assert manifest["features"]["bot_user"]["display_name"] == "gad-bot"


def test_bot_scopes_are_exactly_the_expected_ones(manifest):
    scopes = manifest["oauth_config"]["scopes"]
    assert set(scopes["bot"]) == EXPECTED_BOT_SCOPES
    assert len(scopes["bot"]) == len(set(scopes["bot"])), "a scope is listed twice"
    assert not scopes.get("user"), "gad-bot acts as itself, never as a user"


def test_every_scope_has_a_comment_saying_why():
    lines = MANIFEST.read_text(encoding="utf-8").splitlines()
    for scope in EXPECTED_BOT_SCOPES:
        line = next(line for line in lines if line.strip().startswith(f"- {scope} ") or line.strip() == f"- {scope}")
        assert "#" in line and line.split("#", 1)[1].strip(), f"scope {scope} has no comment saying why"


def test_socket_mode_is_the_default(manifest):
    settings = manifest["settings"]
    assert settings["socket_mode_enabled"] is True
    # In Socket Mode Slack ignores request URLs; keeping them out makes the HTTP switch explicit.
    assert "request_url" not in settings["event_subscriptions"]
    assert "request_url" not in settings["interactivity"]


def test_home_tab_and_its_event(manifest):
    assert manifest["features"]["app_home"]["home_tab_enabled"] is True
    assert "app_home_opened" in manifest["settings"]["event_subscriptions"]["bot_events"]


def test_interactivity_is_enabled(manifest):
    assert manifest["settings"]["interactivity"]["is_enabled"] is True


def test_http_mode_switch_is_documented_in_the_manifest():
    text = MANIFEST.read_text(encoding="utf-8")
    assert "https://YOUR-HOST/slack/events" in text
    assert "socket_mode_enabled: false" in text


def test_the_messages_tab_shows_what_gad_bot_sends_to_a_dm(manifest):
    """CSVs of private answers go to the person's DM with the app (tests/test_surfaces.py:
    test_csv_of_a_private_question_goes_to_the_askers_dm); Slack shows that conversation only with the
    Messages tab on. The bot reads no messages, so it is read-only: people type /gad, not a message."""
    home = manifest["features"]["app_home"]
    assert home["messages_tab_enabled"] is True and home["messages_tab_read_only_enabled"] is True
