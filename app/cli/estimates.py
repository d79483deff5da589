"""``codesign speculate`` and ``codesign disagg``: serving-strategy estimates."""

from __future__ import annotations

import argparse
import dataclasses

from genz import (
    Prediction,
    disaggregated_serving,
    load_model,
    mtp_draft,
    speculative_decoding,
)
from roofline import load_platform, require_positive

from ..formatting import human_bytes, human_seconds, print_json, print_key_values
from .commands import add_command
from .flag_checks import warn_tokenizer
from .platform_args import add_platform_arguments, platform_from_args
from .scenario_args import add_scenario_arguments, scenario_from_args


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``speculate`` and ``disagg``."""
    spec = add_command(subparsers, "speculate")
    spec.add_argument("--model", required=True, help="target model preset or config.json")
    spec.add_argument(
        "--draft",
        required=True,
        help="draft model preset or config.json; 'mtp': the target's multi-token-prediction "
        "head (DeepSeek-V3 style, sharing its embedding and LM head)",
    )
    spec.add_argument("--k", type=int, default=4, help="draft tokens per iteration (default 4)")
    spec.add_argument(
        "--acceptance", type=float, default=0.7, help="per-token acceptance rate in [0, 1)"
    )
    add_platform_arguments(spec)
    add_scenario_arguments(spec)
    spec.add_argument("--json", action="store_true", help="machine-readable output")
    # genz.speculative_decoding names these draft_tokens and acceptance_rate in its errors
    spec.set_defaults(
        func=run_speculate,
        field_flags={"draft_tokens": "--k", "acceptance_rate": "--acceptance"},
    )

    disagg = add_command(subparsers, "disagg")
    disagg.add_argument("--model", required=True, help="model preset or config.json")
    disagg.add_argument("--prefill-hw", required=True, help="platform running prefill")
    disagg.add_argument("--decode-hw", required=True, help="platform running decode")
    disagg.add_argument(
        "--link-gb-per-s",
        type=float,
        help="KV link bandwidth, GB/s (default: prefill platform's scale-out link)",
    )
    add_scenario_arguments(disagg)
    disagg.add_argument("--json", action="store_true", help="machine-readable output")
    disagg.set_defaults(func=run_disagg)


def run_speculate(args: argparse.Namespace) -> None:
    """Print the speculative-decoding estimate."""
    target = load_model(args.model)
    mtp = args.draft == "mtp"
    draft = mtp_draft(target) if mtp else load_model(args.draft)
    platform = platform_from_args(args)
    scenario = scenario_from_args(args, target.default_weight_bits)
    estimate = speculative_decoding(
        target, draft, platform, scenario, args.k, args.acceptance, draft_shares_embeddings=mtp
    )
    warn_tokenizer(target, draft)  # after the checks: a bad flag stays the one line
    if args.json:
        print_json(dataclasses.asdict(estimate))
        return
    total = estimate.target_footprint_bytes + estimate.draft_footprint_bytes
    wall = [] if estimate.fits else [_wall_line("capacity wall", estimate.suggestions)]
    print_key_values(
        [
            ("target / draft", f"{target.name} / {draft.name} on {platform.name}"),
            ("draft tokens, acceptance", f"{estimate.draft_tokens}, {estimate.acceptance_rate:g}"),
            ("expected tokens / iteration", f"{estimate.expected_tokens_per_iteration:.3f}"),
            ("target decode step", human_seconds(estimate.target_step_s)),
            ("draft step", human_seconds(estimate.draft_step_s)),
            ("verify pass (k+1 tokens)", human_seconds(estimate.verify_s)),
            ("TPOT with speculation", human_seconds(estimate.tpot_s)),
            ("speed-up", f"{estimate.speedup:.2f}x" + ("" if estimate.fits else " (does not fit)")),
            (
                "memory per device",
                f"target {human_bytes(estimate.target_footprint_bytes)} + draft "
                f"{human_bytes(estimate.draft_footprint_bytes)} = {human_bytes(total)} of "
                f"{human_bytes(estimate.capacity_bytes)} (decimal, "
                f"{total / estimate.capacity_bytes:.0%})",
            ),
            *wall,
        ]
    )


def _wall_line(label: str, suggestions: tuple[str, ...]) -> tuple[str, str]:
    """The ``predict``-style verdict past the capacity wall."""
    return label, "DOES NOT FIT: " + "; or ".join(suggestions)


def _memory_text(prediction: Prediction) -> str:
    verdict = prediction.capacity
    return (
        f"{human_bytes(verdict.footprint_bytes)} of {human_bytes(verdict.capacity_bytes)} "
        f"(decimal, {verdict.utilization:.0%})"
    )


def run_disagg(args: argparse.Namespace) -> None:
    """Print the disaggregated-serving estimate."""
    model = load_model(args.model)
    prefill_platform, decode_platform = (
        load_platform(args.prefill_hw),
        load_platform(args.decode_hw),
    )
    scenario = scenario_from_args(args, model.default_weight_bits)
    link = None
    if args.link_gb_per_s is not None:
        link = require_positive("--link-gb-per-s", args.link_gb_per_s) * 1e9
    estimate = disaggregated_serving(
        model, prefill_platform, decode_platform, scenario, link_bandwidth_bytes_per_s=link
    )
    if args.json:
        print_json(estimate.to_dict())
        return
    sides = (("prefill", estimate.prefill), ("decode", estimate.decode))
    print_key_values(
        [
            ("model", model.name),
            ("prefill on / decode on", f"{estimate.prefill_platform} / {estimate.decode_platform}"),
            ("TTFT (prefill platform)", human_seconds(estimate.ttft_s)),
            (
                "KV transfer",
                f"{human_bytes(estimate.kv_transfer_bytes)} (decimal) in {human_seconds(estimate.kv_transfer_s)}",
            ),
            ("TPOT (decode platform)", human_seconds(estimate.tpot_s)),
            ("end-to-end, disaggregated", human_seconds(estimate.e2e_s)),
            (
                f"end-to-end, all on {estimate.prefill_platform}",
                human_seconds(estimate.colocated_prefill_platform_e2e_s),
            ),
            (
                f"end-to-end, all on {estimate.decode_platform}",
                human_seconds(estimate.colocated_decode_platform_e2e_s),
            ),
            *((f"memory per device, {side}", _memory_text(p)) for side, p in sides),
            *(
                _wall_line(f"capacity wall, {side} on {p.platform}", p.suggestions)
                for side, p in sides
                if not p.fits
            ),
        ]
    )
