"""``codesign serve --lora-rank`` (multi-LoRA serving) and ``--images`` (VLM prompts):
the lines and JSON fields that report them (the flags are `predict`'s own:
`scenario_args.add_lora_arguments`)."""

from __future__ import annotations

import argparse
from typing import Any


def lora_rows(args: argparse.Namespace) -> list[tuple[str, str]]:
    """The 'LoRA adapters' line, when adapters are served."""
    if args.lora_rank is None:
        return []
    targets = ", ".join(part.strip() for part in args.lora_targets.split(",") if part.strip())
    return [
        (
            "LoRA adapters",
            f"{args.lora_adapters} x rank {args.lora_rank} on {targets} (batched, S-LoRA / "
            "Punica: a step reads each adapter its sequences use)",
        )
    ]


def lora_json(args: argparse.Namespace) -> dict[str, Any]:
    """The adapters' JSON fields (none without ``--lora-rank``)."""
    if args.lora_rank is None:
        return {}
    return {
        "lora_rank": args.lora_rank,
        "lora_adapters": args.lora_adapters,
        "lora_targets": [part.strip() for part in args.lora_targets.split(",") if part.strip()],
    }
