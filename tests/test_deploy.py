"""deploy/ and docs/operations.md agree with the code: files exist, settings match SETTINGS, pins cover pyproject."""

from __future__ import annotations

import configparser
import json
import re
import shlex
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from bot.config import SETTINGS

REPO = Path(__file__).resolve().parent.parent
DEPLOY = REPO / "deploy"
DOCKERFILE = DEPLOY / "Dockerfile"
COMPOSE = DEPLOY / "compose.yml"
UNIT = DEPLOY / "gad-bot.service"
ENV_EXAMPLE = DEPLOY / "gad-bot.env.example"
LOCK = DEPLOY / "requirements.lock"
OPERATIONS = REPO / "docs" / "operations.md"

# Secrets have no default; the example shows a placeholder instead. Only these may differ from SETTINGS.
SECRETS = {"SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET", "SLACK_APP_TOKEN", "GAD_HTTPS_TOKENS"}
PLACEHOLDER = "REPLACE-ME"


# --- Dockerfile -----------------------------------------------------------------------------------

def dockerfile_instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, with comments dropped and continuation lines joined."""
    instructions, pending = [], ""
    for raw in DOCKERFILE.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if pending and line.startswith("#"):
            continue  # comment lines inside a continuation are ignored by Docker too
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        full = (pending + line).strip()
        pending = ""
        keyword, _, args = full.partition(" ")
        instructions.append((keyword.upper(), args.strip()))
    assert not pending, "Dockerfile ends inside a continued line"
    return instructions


def _exec_form(args: str) -> list[str] | None:
    try:
        value = json.loads(args)
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, list) else None


def _copy_sources(args: str) -> list[str]:
    words = _exec_form(args) or shlex.split(args)
    words = [w for w in words if not w.startswith("--")]
    return words[:-1]


def test_dockerfile_copies_only_files_that_exist():
    copies = [(kw, args) for kw, args in dockerfile_instructions() if kw in ("COPY", "ADD")]
    assert copies, "the Dockerfile copies nothing"
    for keyword, args in copies:
        assert keyword == "COPY", "use COPY, not ADD (no remote URLs or tar auto-extraction)"
        assert "--from" not in args
        for source in _copy_sources(args):
            assert (REPO / source).exists(), f"COPY {source}: no such file in the repository (context is the repo root)"


def test_dockerfile_base_user_volume_healthcheck_cmd():
    instructions = dockerfile_instructions()
    by_kind: dict[str, list[str]] = {}
    for keyword, args in instructions:
        by_kind.setdefault(keyword, []).append(args)

    # the base image comes from one ARG, pinned by digest or, where the digest could not be looked
    # up, the tag (the Dockerfile says how to pin it)
    assert by_kind["FROM"] == ["${PYTHON_IMAGE}"]
    (arg,) = [a for a in by_kind["ARG"] if a.startswith("PYTHON_IMAGE=")]
    assert re.fullmatch(r"PYTHON_IMAGE=python:3\.11-slim(@sha256:[0-9a-f]{64})?", arg), arg
    assert "docker buildx imagetools inspect" in DOCKERFILE.read_text(encoding="utf-8")
    # /data private in the image: a fresh volume inherits the mode
    assert any(re.search(r"install -d -m 0700 -o gad-bot -g gad-bot /data\b", a) for a in by_kind["RUN"])

    users = by_kind.get("USER", [])
    assert users, "the image must not run as root"
    last_user = users[-1].split(":")[0]
    assert last_user not in ("root", "0"), f"USER {users[-1]} is root"
    assert last_user == "10001"
    # Switch user after the last RUN (installs need root) and before CMD.
    kinds = [k for k, _ in instructions]
    assert max(i for i, k in enumerate(kinds) if k == "RUN") < kinds.index("USER") < kinds.index("CMD")

    volumes = [v for args in by_kind.get("VOLUME", []) for v in (_exec_form(args) or args.split())]
    assert "/data" in volumes
    env = " ".join(by_kind.get("ENV", []))
    assert re.search(r"\bGAD_DATA_DIR=/data\b", env)

    assert "3000" in " ".join(by_kind.get("EXPOSE", []))

    (health,) = by_kind["HEALTHCHECK"]
    assert "NONE" not in health.split()
    command = health.split("CMD", 1)[1].strip()
    assert (_exec_form(command) or shlex.split(command)) == ["gad-bot", "healthcheck"]

    assert _exec_form(by_kind["CMD"][-1]) == ["gad-bot", "serve"]


def test_the_healthcheck_caveat_of_oci_builds_is_documented_where_images_are_built():
    """The OCI image format has no HEALTHCHECK: buildah and podman drop it unless told `--format docker`. No
    container builder runs here, so what is checked is that both places an operator builds from say so."""
    for text in (DOCKERFILE.read_text(encoding="utf-8"), OPERATIONS.read_text(encoding="utf-8")):
        assert re.search(r"OCI[^.]*HEALTHCHECK", text, re.S) and "--format docker" in text


def test_dockerfile_installs_from_the_lock_only():
    runs = " ".join(args for kw, args in dockerfile_instructions() if kw == "RUN")
    assert re.search(r"pip install --no-deps -r \S*requirements\.lock", runs)
    assert re.search(r"pip install --no-deps (?!-r )\S+", runs), "the project itself, also with --no-deps"
    # system packages: git (the indexer streams `git log`/`git diff-tree`) and SLOCCount (`vs:cocomo`),
    # nothing else by accident
    packages = re.findall(r"apt-get install (?:-\S+ )*([\w .+-]+?)(?: &&|$)", runs)
    assert sorted(p for group in packages for p in group.split()) == ["git", "sloccount"], packages
    assert "rm -rf /var/lib/apt/lists/*" in runs, "apt's package lists stay out of the image"


# --- compose.yml ----------------------------------------------------------------------------------

def test_compose_builds_the_dockerfile_with_a_named_volume_and_env_file():
    compose = yaml.safe_load(COMPOSE.read_text(encoding="utf-8"))
    assert list(compose["services"]) == ["gad-bot"]
    service = compose["services"]["gad-bot"]

    build = service["build"]
    context = (COMPOSE.parent / build["context"]).resolve()
    assert context == REPO
    assert (context / build["dockerfile"]).resolve() == DOCKERFILE

    env_files = service["env_file"]
    env_files = [env_files] if isinstance(env_files, str) else env_files
    assert "gad-bot.env" in env_files
    assert service["environment"]["GAD_DATA_DIR"] == "/data"

    named = set(compose["volumes"])
    mounts = [v.split(":") for v in service["volumes"]]
    assert any(source in named and target == "/data" for source, target, *_ in mounts), mounts
    assert service["restart"] == "unless-stopped"
    # logs are bounded: json-file rotates at max-size and keeps max-file files
    logging_ = service["logging"]
    assert logging_["driver"] == "json-file"
    assert re.fullmatch(r"\d+[km]", logging_["options"]["max-size"]) and int(logging_["options"]["max-file"]) >= 1
    # open files as the systemd unit allows them (a container's default may be 1,024)
    assert service["ulimits"]["nofile"] == {"soft": 65536, "hard": 65536}


def test_compose_passes_the_base_image_pin_through_with_the_dockerfiles_default():
    """Compose builds with PYTHON_IMAGE from GAD_PYTHON_IMAGE (deploy/.env), falling back to the Dockerfile's own
    default, so that an operator pins the digest in one line without editing either file."""
    build = yaml.safe_load(COMPOSE.read_text(encoding="utf-8"))["services"]["gad-bot"]["build"]
    (arg,) = [a for k, a in dockerfile_instructions() if k == "ARG" and a.startswith("PYTHON_IMAGE=")]
    default = arg.split("=", 1)[1]
    assert build["args"] == {"PYTHON_IMAGE": f"${{GAD_PYTHON_IMAGE:-{default}}}"}
    assert "GAD_PYTHON_IMAGE=python:3.11-slim@sha256:" in OPERATIONS.read_text(encoding="utf-8")


def test_every_example_alert_has_a_runbook_section():
    """docs/operations.md's example Prometheus rules: each alert has its `#### Runbook: NAME` section, with steps."""
    text = OPERATIONS.read_text(encoding="utf-8")
    (rules,) = [block for block in re.findall(r"```yaml\n(.*?)```", text, re.S) if "alert:" in block]
    alerts = [rule["alert"] for group in yaml.safe_load(rules)["groups"] for rule in group["rules"]]
    assert len(alerts) >= 2 and len(set(alerts)) == len(alerts), alerts
    sections = dict(re.findall(r"^#### Runbook: (\S+)\n(.*?)(?=^#)", text, re.M | re.S))
    assert sorted(sections) == sorted(alerts)
    for alert in alerts:
        assert "gad-bot " in sections[alert] and len(sections[alert].split()) >= 20, (alert, sections[alert])


def test_compose_documents_the_http_port():
    text = COMPOSE.read_text(encoding="utf-8")
    assert re.search(r"#\s*-\s*\"?[\d.:]*3000:3000\"?", text), "the HTTP-mode port mapping should be there, commented"
    assert "HTTP mode" in text


# --- systemd unit ---------------------------------------------------------------------------------

REQUIRED_SERVICE_DIRECTIVES = {
    "User": "gad-bot",
    "EnvironmentFile": "/etc/gad-bot/gad-bot.env",
    "ExecStart": "/opt/gad-bot/.venv/bin/gad-bot serve",
    "Restart": "on-failure",
    "RestartPreventExitStatus": "2",  # a configuration error (exit 2) is not retried every 10 s
    "StateDirectoryMode": "0700",
    "NoNewPrivileges": "yes",
    "ProtectSystem": "strict",
    "ProtectHome": "yes",
    "ReadWritePaths": "/var/lib/gad-bot",
    "PrivateTmp": "yes",
    "StateDirectory": "gad-bot",
    "KillSignal": "SIGTERM",
    "TimeoutStopSec": "30",
    "ProtectKernelTunables": "yes",
    "ProtectKernelModules": "yes",
    "ProtectControlGroups": "yes",
    "RestrictAddressFamilies": "AF_INET AF_INET6 AF_UNIX",
    "RestrictSUIDSGID": "yes",
    "LockPersonality": "yes",
    "LimitNOFILE": "65536",  # systemd's default 1,024 stopped the sync of an organization of 8,000 (issue 32)
}


def _unit() -> configparser.ConfigParser:
    parser = configparser.ConfigParser(strict=False, interpolation=None, delimiters=("=",),
                                       comment_prefixes=("#", ";"), empty_lines_in_values=False)
    parser.optionxform = str  # systemd keys are case-sensitive
    parser.read_string(UNIT.read_text(encoding="utf-8"))
    return parser


def _unit_values(key: str) -> list[str]:
    """Every value of a key that may repeat (Environment=), which configparser would collapse."""
    return [line.split("=", 1)[1].strip() for line in UNIT.read_text(encoding="utf-8").splitlines()
            if line.startswith(f"{key}=")]


def test_systemd_unit_has_the_required_directives():
    unit = _unit()
    assert set(unit.sections()) == {"Unit", "Service", "Install"}
    service = unit["Service"]
    for key, value in REQUIRED_SERVICE_DIRECTIVES.items():
        assert service.get(key) == value, f"[Service] {key}={service.get(key)!r}, expected {value!r}"
    assert service.get("RestartSec")
    assert "GAD_DATA_DIR=/var/lib/gad-bot" in _unit_values("Environment")
    assert unit["Install"]["WantedBy"] == "multi-user.target"
    assert "network-online.target" in unit["Unit"]["After"]


def _systemd_analyze_verify(path: Path) -> tuple[int, str]:
    result = subprocess.run(["systemd-analyze", "verify", "--man=no", str(path)],
                            capture_output=True, text=True, timeout=60)
    return result.returncode, (result.stdout + result.stderr).strip()


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed")
def test_systemd_unit_passes_systemd_analyze_verify(tmp_path):
    probe = tmp_path / "probe" / "gad-bot-probe.service"
    probe.parent.mkdir()
    probe.write_text("[Service]\nExecStart=/bin/true\n")
    code, output = _systemd_analyze_verify(probe)
    if code != 0 or output:
        pytest.skip(f"systemd-analyze cannot verify units on this machine: {output or code}")

    # The venv the unit points at does not exist here; verify would only report that.
    text = UNIT.read_text(encoding="utf-8")
    assert "ExecStart=/opt/gad-bot/.venv/bin/gad-bot " in text
    unit = tmp_path / "gad-bot.service"
    unit.write_text(text.replace("ExecStart=/opt/gad-bot/.venv/bin/gad-bot ", "ExecStart=/bin/true "))
    code, output = _systemd_analyze_verify(unit)
    assert code == 0 and not output, output


# --- gad-bot.env.example --------------------------------------------------------------------------

_VARIABLE_LINE = re.compile(r"^(?P<comment>#\s?)?(?P<name>[A-Z][A-Z0-9]*_[A-Z0-9_]+)=(?P<value>.*)$")


def env_example() -> list[dict]:
    """One dict per variable line: name, value, commented, and the comment block just above it."""
    entries, block = [], []
    for line in ENV_EXAMPLE.read_text(encoding="utf-8").splitlines():
        match = _VARIABLE_LINE.match(line)
        if match:
            entries.append({"name": match["name"], "value": match["value"], "commented": bool(match["comment"]),
                            "doc": " ".join(block), "line": line})
            block = []
        elif line.startswith("#"):
            block.append(line.lstrip("#").strip())
        else:
            block = []
    return entries


def test_env_example_names_exactly_the_settings_in_order():
    assert [e["name"] for e in env_example()] == list(SETTINGS)


@pytest.mark.parametrize("name", list(SETTINGS))
def test_env_example_default_and_meaning(name):
    (entry,) = [e for e in env_example() if e["name"] == name]
    default, meaning = SETTINGS[name]
    assert " ".join(meaning.split()) in entry["doc"], f"{name}: the comment above it must give its meaning"
    if name in SECRETS:
        assert default == "", f"{name} is a secret and must not have a default"
        assert PLACEHOLDER in entry["value"], f"{name}: show a {PLACEHOLDER} placeholder, never a real value"
    else:
        assert entry["value"] == default, f"{name}: example says {entry['value']!r}, SETTINGS says {default!r}"
        # An uncommented empty value would override Environment= in the unit and compose's GAD_DATA_DIR.
        assert entry["commented"] == (default == ""), f"{name}: comment it out exactly when it has no default"


def test_env_example_is_readable_by_systemd_and_compose():
    for line in ENV_EXAMPLE.read_text(encoding="utf-8").splitlines():
        if line and not line.startswith("#"):
            assert re.fullmatch(r"[A-Z][A-Z0-9_]*=[^\s\"']*", line), f"unquoted NAME=value without spaces: {line!r}"


# --- requirements.lock ----------------------------------------------------------------------------

def lock_entries() -> list[tuple[str, list[str]]]:
    """(requirement, its --hash options) per entry, continuation lines joined and comments dropped."""
    entries, pending = [], ""
    for raw in LOCK.read_text(encoding="utf-8").splitlines():
        line = raw.split("#", 1)[0].strip() if not raw.lstrip().startswith("--hash") else raw.strip()
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        line, pending = (pending + line).strip(), ""
        if not line:
            continue
        requirement, *options = line.split()
        assert not requirement.startswith("-"), f"no options or editable installs in the lock: {line!r}"
        assert all(option.startswith("--hash=sha256:") for option in options), f"only hashes as options: {line!r}"
        entries.append((requirement, [option.split(":", 1)[1] for option in options]))
    return entries


def lock_pins() -> dict[str, str]:
    pins = {}
    for line, _ in lock_entries():
        requirement = Requirement(line)
        (specifier,) = requirement.specifier
        assert specifier.operator == "==", f"not pinned with ==: {line!r}"
        pins[canonicalize_name(requirement.name)] = specifier.version
    return pins


def test_lock_has_hashes_for_every_pin():
    """pip-compile --generate-hashes: pip then checks every download (and refuses anything unhashed)."""
    entries = lock_entries()
    assert len(entries) > 20
    for requirement, hashes in entries:
        assert hashes and all(re.fullmatch(r"[0-9a-f]{64}", h) for h in hashes), f"{requirement} has no sha256 hash"
    assert "pip-compile --generate-hashes" in LOCK.read_text(encoding="utf-8")[:600]  # the header says how it was made


def test_the_documented_lock_refresh_keeps_the_hashes_and_the_build_backend_is_pinned():
    """Issue 32: operations.md's refresh command dropped --generate-hashes, and setuptools was `>=68`."""
    docs = (REPO / "docs" / "operations.md").read_text(encoding="utf-8")
    documented = re.search(r"```sh\n(pip-compile [^`]*?pyproject\.toml)\n```", docs)
    assert documented, "docs/operations.md shows no pip-compile command"
    header = re.search(r"#\s+(pip-compile .*pyproject\.toml)", LOCK.read_text(encoding="utf-8"))[1]
    flags = lambda command: {word.split("=")[0] for word in command.replace("\\\n", " ").split() if word.startswith("--")}
    assert flags(documented[1]) == flags(header) and "--generate-hashes" in flags(header), (documented[1], header)
    build = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["build-system"]["requires"]
    assert build and all(re.fullmatch(r"[A-Za-z0-9_.-]+==[0-9][0-9A-Za-z.]*", r) for r in build), build


def test_lock_pins_every_runtime_dependency_within_its_range():
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    pins = lock_pins()
    for line in project["dependencies"]:
        requirement = Requirement(line)
        name = canonicalize_name(requirement.name)
        assert name in pins, f"{requirement.name} (pyproject.toml) is not pinned in deploy/requirements.lock; re-run pip-compile"
        assert requirement.specifier.contains(pins[name], prereleases=True), \
            f"{name}=={pins[name]} in the lock does not satisfy {line!r} in pyproject.toml; re-run pip-compile"


# --- docs/operations.md ---------------------------------------------------------------------------

def test_operations_doc_lists_every_setting_with_its_default():
    text = OPERATIONS.read_text(encoding="utf-8")
    rows = {m[1]: m[0] for m in re.finditer(r"^\| `([A-Z][A-Z0-9_]+)` \|.*$", text, flags=re.MULTILINE)}
    for name, (default, _) in SETTINGS.items():
        assert name in text, f"{name} is not documented in docs/operations.md"
        assert name in rows, f"{name} has no row in the settings table of docs/operations.md"
        if default:
            assert f"`{default}`" in rows[name].split("|")[2], f"{name}: the table should give the default {default!r}"
    assert set(rows) == set(SETTINGS), f"undocumented or stale rows: {set(rows) ^ set(SETTINGS)}"


def test_operations_doc_explains_every_bot_scope():
    manifest = yaml.safe_load((REPO / "manifest.yml").read_text(encoding="utf-8"))
    text = OPERATIONS.read_text(encoding="utf-8")
    for scope in manifest["oauth_config"]["scopes"]["bot"]:
        assert f"| `{scope}` |" in text, f"bot scope {scope} is not explained in docs/operations.md"


# --- the CLI commands the deploy files and the doc rely on ----------------------------------------

NEEDED_COMMANDS = ("serve", "healthcheck", "doctor", "backup", "restore", "status", "sync", "track", "repos")
# Named by the brief, not written yet: the test tolerates their absence until they land.
PENDING_COMMANDS: set[str] = set()


def test_cli_has_the_commands_deploy_and_docs_use():
    from bot.faces.cli import cli

    missing = [name for name in NEEDED_COMMANDS if name not in cli.commands]
    unexpected = [name for name in missing if name not in PENDING_COMMANDS]
    assert not unexpected, f"deploy/ or docs/operations.md use `gad-bot {' '.join(unexpected)}`, which does not exist"
    if missing:
        pytest.xfail(f"pending: gad-bot {', '.join(missing)} (used by docs/operations.md)")


def test_dockerignore_keeps_secrets_and_the_virtualenv_out_of_the_context():
    """operations.md says the repository's .dockerignore does this; the Dockerfile's header lists the entries."""
    ignored = (REPO / ".dockerignore").read_text(encoding="utf-8").split()
    header = DOCKERFILE.read_text(encoding="utf-8").split("at least these entries:\n", 1)[1].split("\n# (")[0]
    for entry in header.replace("#", " ").split():
        assert entry in ignored, entry
    assert "deploy/gad-bot.env" in ignored and ".venv" in ignored
    assert "Put a `.dockerignore`" not in (REPO / "docs" / "operations.md").read_text(encoding="utf-8")
