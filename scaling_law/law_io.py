"""Save and load fitted laws as JSON (no pickle, no eval; size-limited; keys checked).

`save_law` writes exactly the file named: the path is resolved, must not be a
directory or a symbolic link, and its folder must exist; the write goes to a
temporary file in that folder and is renamed into place.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any

from roofline import InputError, load_user_document

from .law import ScalingLaw

FORMAT = "llm-codesign/scaling-law"
VERSION = 1
MAX_LAW_BYTES = 20_000_000
_KEYS = {
    "format",
    "version",
    "form",
    "params",
    "intervals",
    "standard_errors",
    "fixed",
    "confidence",
    "bootstrap_params",
    "include_embeddings",
    "moe_parameters",
    "gamma_w",
    "reference_bits",
    "metadata",
    "domain",
}


def law_to_dict(law: ScalingLaw) -> dict[str, Any]:
    """JSON-ready mapping of a law (intervals as ``[low, high]`` lists)."""
    return {
        "format": FORMAT,
        "version": VERSION,
        "form": law.form,
        "params": dict(law.params),
        "intervals": {k: None if v is None else list(v) for k, v in law.intervals.items()},
        "standard_errors": dict(law.standard_errors),
        "fixed": list(law.fixed),
        "confidence": law.confidence,
        "bootstrap_params": [list(sample) for sample in law.bootstrap_params],
        "include_embeddings": law.include_embeddings,
        "moe_parameters": law.moe_parameters,
        "gamma_w": law.gamma_w,
        "reference_bits": law.reference_bits,
        "metadata": _json_ready(dict(law.metadata)),
        "domain": {name: list(bounds) for name, bounds in law.domain.items()},
    }


def law_from_dict(document: Any, origin: str = "<dict>") -> ScalingLaw:
    """Rebuild a `ScalingLaw` from `law_to_dict` output; unknown keys are rejected."""
    if not isinstance(document, dict):
        raise InputError(f"{origin}: expected a JSON object at top level")
    unknown = sorted(set(document) - _KEYS)
    if unknown:
        raise InputError(
            f"{origin}: unknown key {unknown[0]!r}; accepted: {', '.join(sorted(_KEYS))}"
        )
    if document.get("format") != FORMAT or document.get("version") != VERSION:
        raise InputError(f"{origin}: not a scaling law file (format {FORMAT!r}, version {VERSION})")
    for key in ("form", "params"):
        if key not in document:
            raise InputError(f"{origin}: missing required key {key!r}")
    intervals = document.get("intervals", {})
    if not isinstance(intervals, dict) or not all(
        value is None or (isinstance(value, list) and len(value) == 2)
        for value in intervals.values()
    ):
        raise InputError(f"{origin}: intervals must map names to [low, high] or null")
    try:
        return ScalingLaw(
            form=str(document["form"]),
            params=_mapping(document["params"], "params", origin),
            intervals={
                k: None if v is None else (float(v[0]), float(v[1])) for k, v in intervals.items()
            },
            standard_errors=_mapping(
                document.get("standard_errors", {}), "standard_errors", origin
            ),
            fixed=tuple(str(name) for name in document.get("fixed", [])),
            confidence=float(document.get("confidence", 0.95)),
            bootstrap_params=tuple(
                tuple(float(v) for v in sample) for sample in document.get("bootstrap_params", [])
            ),
            include_embeddings=bool(document.get("include_embeddings", True)),
            moe_parameters=str(document.get("moe_parameters", "active")),
            gamma_w=float(document.get("gamma_w", ScalingLaw.gamma_w)),
            reference_bits=float(document.get("reference_bits", ScalingLaw.reference_bits)),
            metadata=document.get("metadata", {}),
            domain=_domain(document.get("domain", {}), origin),
        )
    except (TypeError, ValueError) as error:
        raise InputError(f"{origin}: malformed law ({error})") from None
    except InputError as error:
        raise InputError(f"{origin}: {error}") from None


def check_output_path(path: str | Path) -> Path:
    """The resolved file ``path`` if a law may be written there, else `InputError`.

    Refused: a directory, a symbolic link (it could point outside the folder
    named), a path whose folder does not exist.
    """
    target = Path(path)
    if target.is_symlink():
        raise InputError(f"output {path}: is a symbolic link; name a regular file")
    target = target.resolve()
    if target.is_dir():
        raise InputError(f"output {path}: is a directory; name a file such as law.json")
    if not target.parent.is_dir():
        raise InputError(f"output {path}: folder {target.parent} does not exist")
    return target


def save_law(law: ScalingLaw, path: str | Path) -> Path:
    """Write ``law`` as JSON to exactly ``path``; returns the resolved path written."""
    target = check_output_path(path)
    text = json.dumps(law_to_dict(law), indent=2, allow_nan=False) + "\n"
    handle, temporary = tempfile.mkstemp(prefix=".law-", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return target


def load_law(path: str | Path) -> ScalingLaw:
    """Read a law written by `save_law` (JSON only, at most `MAX_LAW_BYTES`)."""
    document = load_user_document(path, kind="law file", max_bytes=MAX_LAW_BYTES, fmt="json")
    return law_from_dict(document, origin=str(path))


def _domain(value: Any, origin: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise InputError(f"{origin}: domain must map quantities to [low, high]")
    if not all(isinstance(v, list) and len(v) == 2 for v in value.values()):
        raise InputError(f"{origin}: domain must map quantities to [low, high]")
    return value


def _mapping(value: Any, key: str, origin: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise InputError(f"{origin}: {key} must be a JSON object")
    return {str(k): None if v is None else float(v) for k, v in value.items()}


def _json_ready(value: Any) -> Any:
    """Non-finite floats become None so the file stays strict JSON."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): _json_ready(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_ready(v) for v in value]
    return value
