"""``codesign calibrate-transfer``'s work: fit the transferable model on the measurement
store and write its runtime profiles (`calibration.transfer_profile`); re-run a
profile's ``calibrated_from`` command.

The command line stored in every value is the canonical one (`transfer_command`), so a
written profile names what re-derives it: `rederive_transfer` parses it, refits on the
store and returns the same document. ``--variant DEVICE_PRIORS/STACKS`` picks the model
variant (`calibration.transfer_terms.parse_variant`); the default's command names none.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from genz import RuntimeProfile
from roofline import InputError

from .store import load_store
from .transfer import TransferFit, fit_transfer
from .transfer_profile import (
    GENERIC_NAME,
    generic_document,
    stack_document,
    stack_profile_name,
)
from .transfer_terms import DEFAULT_VARIANT, build_terms, parse_variant, stack_key

COMMAND = ("codesign", "calibrate-transfer")
#: ``--stacks`` values that are not stack names.
ALL_STACKS, NO_STACKS = "all", "none"


@dataclass(frozen=True)
class TransferExport:
    """The fit and the profile documents it gives: profile name -> YAML mapping (the
    generic profile first)."""

    fit: TransferFit
    documents: dict[str, dict[str, Any]]
    command: str


def transfer_command(stacks: str, out_dir: str, variant: str = DEFAULT_VARIANT) -> str:
    """The canonical command line that writes these profiles (stored in each value);
    ``--variant`` only when it is not the default."""
    chosen = [] if variant == DEFAULT_VARIANT else ["--variant", variant]
    return shlex.join([*COMMAND, *chosen, "--stacks", stacks, "--out-dir", out_dir])


def export_transfer(stacks: str, out_dir: str, variant: str = DEFAULT_VARIANT) -> TransferExport:
    """Fit ``variant`` (``DEVICE_PRIORS/STACKS``) on every stored row and build the
    generic profile and the ``stacks``' ones (``all``, ``none`` or comma-separated
    ``runtime|harness|year`` names)."""
    device_priors, structure = parse_variant(variant)
    stored = load_store()
    chosen = choose_stacks(sorted({stack_key(item) for item in stored}), stacks)
    terms = build_terms(stored, device_priors=device_priors, stacks=structure)
    fit = fit_transfer(terms, np.ones(len(terms), bool))
    command = transfer_command(stacks, out_dir, variant)
    documents = {GENERIC_NAME: generic_document(fit, command)}
    for stack in chosen:
        documents[stack_profile_name(stack)] = stack_document(fit, stack, command)
    return TransferExport(fit, documents, command)


def choose_stacks(fitted: Sequence[str], stacks: str) -> list[str]:
    """The stacks ``--stacks`` names among the ``fitted``; an unknown name is an error
    listing them."""
    if stacks == ALL_STACKS:
        return list(fitted)
    if stacks == NO_STACKS:
        return []
    chosen = [name.strip() for name in stacks.split(",") if name.strip()]
    for name in chosen:
        if name not in fitted:
            raise InputError(
                f"--stacks: unknown stack {name!r}; accepted: {ALL_STACKS}, {NO_STACKS} or "
                f"comma-separated names of: {', '.join(fitted)}"
            )
    return chosen


def parse_transfer_command(command: str) -> tuple[str, str, str]:
    """``--stacks``, ``--out-dir`` and ``--variant`` of a ``codesign calibrate-transfer``
    command."""
    words = shlex.split(command)
    if tuple(words[:2]) != COMMAND:
        raise InputError(f"not a codesign calibrate-transfer command: {command!r}")
    found = dict(zip(words[2::2], words[3::2], strict=False))
    return (
        found.get("--stacks", ALL_STACKS),
        found.get("--out-dir", "."),
        found.get("--variant", DEFAULT_VARIANT),
    )


def rederive_transfer(profile: RuntimeProfile, command: str) -> dict[str, Any]:
    """The document ``command`` (the ``calibrated_from`` of the profile's values, e.g.
    its ``kernel_launch_s``) writes for ``profile`` today."""
    stacks, out_dir, variant = parse_transfer_command(command)
    documents = export_transfer(stacks, out_dir, variant).documents
    if profile.name not in documents:
        raise InputError(f"{command!r} writes no profile named {profile.name!r}")
    return documents[profile.name]


def transfer_profile_paths(export: TransferExport, out_dir: str | Path) -> dict[str, Path]:
    """Where each profile of ``export`` is written: ``<out_dir>/<name>.yaml``."""
    folder = Path(out_dir)
    return {name: folder / f"{name}.yaml" for name in export.documents}
