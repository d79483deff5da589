"""The Dockerfile and compose.yaml say what the docs say: the same ``codesign app`` call
(flags `codesign app` accepts), a health check on Streamlit's health endpoint, a
non-root user, and a build context without the local venv, git history or test output.
(No container is built here: see docs/dashboard.md, "Deployment".)"""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml

from app.cli import build_parser

ROOT = Path(__file__).resolve().parents[1]
DOCKERFILE = (ROOT / "Dockerfile").read_text()


def instruction(name: str) -> str:
    """The argument of the Dockerfile's last ``name`` instruction (continuations joined)."""
    joined = DOCKERFILE.replace("\\\n", " ")
    found = re.findall(rf"^{name}\s+(.+)$", joined, flags=re.MULTILINE)
    assert found, name
    return found[-1].strip()


def parsed(argv: list[str]):
    assert argv[:2] == ["codesign", "app"], argv
    return build_parser().parse_args(argv[1:])


def test_dockerfile_cmd_is_a_codesign_app_call_on_every_interface() -> None:
    args = parsed(json.loads(instruction("CMD")))
    assert (args.address, args.port, args.max_upload_mb) == ("0.0.0.0", 8501, 20)
    assert instruction("EXPOSE") == str(args.port)


def test_compose_runs_the_dockerfile_command_published_on_loopback() -> None:
    service = yaml.safe_load((ROOT / "compose.yaml").read_text())["services"]["dashboard"]
    assert service["build"] == "."
    assert service["command"] == json.loads(instruction("CMD"))
    assert service["ports"] == ["127.0.0.1:8501:8501"]


def test_health_check_asks_streamlit_on_the_served_port() -> None:
    check = instruction("HEALTHCHECK")
    assert "http://127.0.0.1:8501/_stcore/health" in check and "--timeout" in check


def test_runs_as_a_non_root_user_and_keeps_the_context_small() -> None:
    assert instruction("USER") not in ("root", "0")
    ignored = (ROOT / ".dockerignore").read_text().split()
    assert {".git", ".venv*", "test-artifacts"} <= set(ignored)
