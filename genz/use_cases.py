"""Use-case presets (token shapes) from ``data/use_cases.yaml``."""

from __future__ import annotations

from dataclasses import dataclass

import yaml

from roofline import InputError, data_dir, unknown_name

ALLOWED_KEYS = {"description", "input_tokens", "output_tokens", "source"}


@dataclass(frozen=True)
class UseCase:
    """A named request shape: prompt and generated tokens per request."""

    name: str
    description: str
    input_tokens: int
    output_tokens: int
    source: str


def load_use_cases() -> dict[str, UseCase]:
    """All shipped use cases by name."""
    path = data_dir() / "use_cases.yaml"
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:  # a CODESIGN_DATA_DIR without the shipped file
        raise InputError(
            f"{path}: cannot be read ({error.strerror}); the data folder needs use_cases.yaml"
        ) from None
    # A shipped file: libyaml's safe loader when present (10x faster; every CLI command
    # that offers --use-case reads this file to list the names in its help).
    document = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    cases = {}
    for name, entry in document.items():
        unknown = sorted(set(entry) - ALLOWED_KEYS)
        if unknown:
            raise InputError(f"use case {name}: unknown key {unknown[0]!r}")
        cases[name] = UseCase(
            name=name,
            description=str(entry["description"]),
            input_tokens=int(entry["input_tokens"]),
            output_tokens=int(entry["output_tokens"]),
            source=str(entry["source"]),
        )
    return cases


def use_case(name: str) -> UseCase:
    """Look a use case up by name."""
    cases = load_use_cases()
    if name not in cases:
        raise unknown_name("use case", name, sorted(cases))
    return cases[name]
