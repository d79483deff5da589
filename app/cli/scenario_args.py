"""The scenario option group (batch, tokens, bits, chunking, parallelism) of every command.

Options come from `genz.AXES` (flag, type, default, help) and values are checked against
the axes' ranges here, so an error names the option the user typed (``--input must be an
integer in [1, 100000000], got 0``) rather than a `Scenario` field.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from genz import (
    AXES,
    DEFAULT_BATCH,
    DEFAULT_BITS,
    DEFAULT_INPUT_TOKENS,
    DEFAULT_OUTPUT_TOKENS,
    MESH_AXES,
    Axis,
    Parallelism,
    Precision,
    Scenario,
    load_precision,
    load_use_cases,
    use_case,
)

#: Axes of the standard group, in ``--help`` order.
SCENARIO_AXES = (
    "batch",
    "input_tokens",
    "output_tokens",
    "weight_bits",
    "activation_bits",
    "kv_bits",
    "prefill_chunk",
    *MESH_AXES,
)


def add_scenario_arguments(
    parser: argparse.ArgumentParser,
    *,
    axes: Sequence[str] = SCENARIO_AXES,
    bits_file: bool = True,
    searched_mesh: bool = False,
    title: str | None = None,
    help_overrides: dict[str, str] | None = None,
) -> None:
    """Add ``--use-case`` and one option per axis in ``axes`` (and ``--bits-file``).

    Parameters
    ----------
    parser
        The command's parser.
    axes
        `genz.AXES` names, in the order shown by ``--help``.
    bits_file
        Offer ``--bits-file`` (a per-group/per-layer allocation) after ``--kvbits``.
    searched_mesh
        Parallel degrees default to None: the command searches the ones not given.
    title
        Put the options in an argument group of this title (default: the parser's).
    help_overrides
        Axis name -> help text replacing the axis' own for this command.
    """
    target = parser.add_argument_group(title) if title else parser
    names = ", ".join(sorted(load_use_cases()))
    target.add_argument("--use-case", help=f"token shape preset: {names}")
    overrides = help_overrides or {}
    for name in axes:
        axis = AXES[name]
        help_text = overrides.get(name, axis.help)
        default = _cli_default(axis)
        if searched_mesh and name in MESH_AXES:
            default, help_text = None, f"fix the {name} degree (default: searched)"
        kind = int if axis.integer else float
        target.add_argument(axis.flag, type=kind, default=default, help=help_text)
        if name == "kv_bits" and bits_file:
            target.add_argument(
                "--bits-file", help="YAML/JSON bit allocation (overrides --wbits/--abits/--kvbits)"
            )


def add_decoding_arguments(parser: argparse.ArgumentParser) -> None:
    """``--parallel-samples`` and ``--beam-width`` (sequences decoded per request)."""
    group = parser.add_argument_group("decoding mode")
    group.add_argument(
        "--parallel-samples",
        type=int,
        default=None,
        help="n samples per request sharing the prompt's KV (vLLM n); all returned",
    )
    group.add_argument(
        "--images",
        type=int,
        default=None,
        help="images per request through the model's vision encoder (VLM presets)",
    )
    group.add_argument(
        "--beam-width",
        type=int,
        default=None,
        help="beam search: beams per request sharing the prompt's KV; one returned",
    )


def add_offload_arguments(parser: argparse.ArgumentParser) -> None:
    """``--weight-offload`` and ``--kv-offload`` (fractions kept in host memory)."""
    group = parser.add_argument_group("offload to host memory (the platform's host link)")
    for flag, what in (("--weight-offload", "weights"), ("--kv-offload", "KV cache")):
        group.add_argument(
            flag,
            type=float,
            default=None,
            help=f"fraction of the {what} in host memory, streamed every pass (0-1)",
        )


def _given(options: dict[str, object], name: str, default: float) -> Any:
    """``options[name]``, or ``default`` when the flag was not given (its range is checked
    before the command runs: `roofline.FLAG_BOUNDS_BY_COMMAND`)."""
    value = options.get(name)
    return default if value is None else value


def _cli_default(axis: Axis) -> float | None:
    """Defaults argparse fills in; token counts stay None so ``--use-case`` can set them,
    weight bits stay None so the model's own width applies."""
    if axis.name in ("input_tokens", "output_tokens", "weight_bits"):
        return None
    return axis.default


def scenario_from_args(args: argparse.Namespace, default_weight_bits: float) -> Scenario:
    """The `Scenario` of the parsed options (explicit tokens override ``--use-case``).

    Options the command does not offer, or leaves unset, take the axis default
    (``default_weight_bits`` for weights). Each given value is checked against its
    axis, and a bad one is reported by its flag.
    """
    options = vars(args)

    def given(name: str) -> float | None:
        """The checked value of the axis' option, None when not given (or not offered)."""
        value = options.get(AXES[name].dest)
        if value is not None:
            AXES[name].check(value, AXES[name].flag)
        return value

    input_tokens, output_tokens = DEFAULT_INPUT_TOKENS, DEFAULT_OUTPUT_TOKENS
    if options.get("use_case"):
        case = use_case(options["use_case"])
        input_tokens, output_tokens = case.input_tokens, case.output_tokens
    if options.get("bits_file"):
        precision = load_precision(options["bits_file"])
    else:
        precision = Precision(
            weight_bits=given("weight_bits") or default_weight_bits,
            activation_bits=given("activation_bits") or DEFAULT_BITS,
            kv_bits=given("kv_bits") or DEFAULT_BITS,
        )
    chunk = given("prefill_chunk")
    return Scenario(
        batch=int(given("batch") or DEFAULT_BATCH),
        input_tokens=int(given("input_tokens") or input_tokens),
        output_tokens=int(given("output_tokens") or output_tokens),
        precision=precision,
        parallelism=Parallelism(**{name: int(given(name) or 1) for name in MESH_AXES}),
        prefill_chunk=None if chunk is None else int(chunk),
        parallel_samples=_given(options, "parallel_samples", 1),
        beam_width=_given(options, "beam_width", 1),
        weight_offload=_given(options, "weight_offload", 0.0),
        kv_offload=_given(options, "kv_offload", 0.0),
        images=_given(options, "images", 0),
    )
