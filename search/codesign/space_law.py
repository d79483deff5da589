"""The ``law`` section of a co-design space: the loss-law file, the training-token rule,
the meaning of weight bits, the data-domain restriction and the other validated forms."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from roofline import InputError

from .axes import check_keys, number

PRECISION_MODELS = ("ptq", "quantised-training")


@dataclass(frozen=True)
class LawSpec:
    """Loss law file (None: the shipped shape-aware Gemstones fit), the training-token rule,
    the meaning of weight bits (``precision_model``), the domain restriction and the
    other validated forms (None: the shipped ones when ``path`` is None, else none)."""

    path: Path | None = None
    training_tokens: float | None = None
    tokens_per_parameter: float | None = 20.0
    precision_model: str = "ptq"
    within_data: bool = False
    forms: tuple[Path, ...] | None = None


def parse_law(section: dict[str, Any], root: Path) -> LawSpec:
    """The ``law`` section (paths relative to ``root``)."""
    where = "law"
    check_keys(
        section,
        (
            "path",
            "training_tokens",
            "tokens_per_parameter",
            "precision_model",
            "within_data",
            "forms",
        ),
        where,
    )
    path = section.get("path")
    if path is not None and not isinstance(path, str):
        raise InputError(f"{where}.path must be a file path, got {path!r}")
    if "training_tokens" in section and "tokens_per_parameter" in section:
        raise InputError(f"{where}: give training_tokens or tokens_per_parameter, not both")
    tokens = per_parameter = None
    if "training_tokens" in section:
        tokens = number(section["training_tokens"], f"{where}.training_tokens")
        if tokens <= 0:
            raise InputError(f"{where}.training_tokens must be > 0, got {tokens:g}")
    else:
        per_parameter = number(
            section.get("tokens_per_parameter", 20), f"{where}.tokens_per_parameter"
        )
        if per_parameter <= 0:
            raise InputError(f"{where}.tokens_per_parameter must be > 0, got {per_parameter:g}")
    precision_model = section.get("precision_model", "ptq")
    if precision_model not in PRECISION_MODELS:
        raise InputError(
            f"{where}.precision_model must be one of {', '.join(PRECISION_MODELS)}, "
            f"got {precision_model!r}"
        )
    within = section.get("within_data", False)
    if not isinstance(within, bool):
        raise InputError(f"{where}.within_data must be true or false, got {within!r}")
    forms = section.get("forms")
    if forms is not None and (
        not isinstance(forms, list) or not all(isinstance(item, str) for item in forms)
    ):
        raise InputError(f"{where}.forms must list law files, got {forms!r}")
    return LawSpec(
        None if path is None else root / path,
        tokens,
        per_parameter,
        precision_model,
        within,
        None if forms is None else tuple(root / item for item in forms),
    )
