"""Reading files users hand us: existence, a size limit, UTF-8, then YAML or JSON as data.

Every failure is one `InputError` line naming the file and what it should be.
Parsing is ``yaml.safe_load`` or ``json.loads`` only (no eval, no pickle); JSON's
``NaN``/``Infinity`` constants are refused.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from .errors import InputError


def read_user_text(path: str | Path, *, kind: str, max_bytes: int) -> tuple[Path, str]:
    """Return ``(path, text)`` of a UTF-8 file of at most ``max_bytes`` bytes.

    ``kind`` names the file in messages (``'bits file'`` -> "bits file not found: x").
    """
    source = Path(path)
    if not source.is_file():
        raise InputError(f"{kind} not found: {source}")
    if source.stat().st_size > max_bytes:
        raise InputError(f"{source}: larger than {max_bytes} bytes; not a {kind}")
    try:
        return source, source.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise InputError(f"{source}: not UTF-8 text; not a {kind}") from None


def parse_document(text: str, source: str | Path, *, fmt: str) -> Any:
    """Parse ``text`` as ``fmt`` (``'yaml'`` or ``'json'``) into plain Python data."""
    try:
        if fmt == "json":
            return json.loads(text, parse_constant=_reject_constant)
        return yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError, ValueError) as error:
        first_line = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise InputError(f"{source}: not valid {fmt.upper()} ({first_line})") from None


def load_user_document(
    path: str | Path, *, kind: str, max_bytes: int, fmt: str | None = None
) -> Any:
    """Read and parse a YAML/JSON file; ``fmt`` defaults to JSON for ``.json``, else YAML."""
    source, text = read_user_text(path, kind=kind, max_bytes=max_bytes)
    return parse_document(text, source, fmt=fmt or ("json" if source.suffix == ".json" else "yaml"))


def _reject_constant(name: str) -> float:
    raise ValueError(f"non-finite number {name} is not allowed")
