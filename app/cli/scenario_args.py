"""The scenario option group (batch, tokens, bits, chunking, parallelism) of every command.

Options come from `genz.AXES` (flag, type, default, help) and values are checked against
the axes' ranges here, so an error names the option the user typed (``--input must be an
integer in [1, 100000000], got 0``) rather than a `Scenario` field.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from genz import (
    ARCHITECTURE_AXES,
    AXES,
    DEFAULT_BATCH,
    DEFAULT_BITS,
    DEFAULT_INPUT_TOKENS,
    DEFAULT_OUTPUT_TOKENS,
    MESH_AXES,
    Axis,
    ModelConfig,
    Parallelism,
    Precision,
    Scenario,
    load_precision,
    load_use_cases,
    use_case,
    with_layer_mix,
    with_lora,
)
from roofline import InputError

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
    """``--parallel-samples``, ``--beam-width`` (sequences decoded per request) and
    ``--images`` (`genz.MODE_AXES`)."""
    group = parser.add_argument_group("decoding mode")
    for name in ("parallel_samples", "images", "beam_width"):
        axis = AXES[name]
        group.add_argument(axis.flag, type=int, default=None, help=axis.help)


def add_offload_arguments(parser: argparse.ArgumentParser) -> None:
    """``--weight-offload`` and ``--kv-offload`` (fractions kept in host memory)."""
    group = parser.add_argument_group("offload to host memory (the platform's host link)")
    for name in ("weight_offload", "kv_offload"):
        axis = AXES[name]
        group.add_argument(axis.flag, type=float, default=None, help=axis.help)


def add_architecture_arguments(parser: argparse.ArgumentParser) -> None:
    """``--sliding-window`` and ``--attention-layers`` (`genz.ARCHITECTURE_AXES`): the model's
    window size or attention/state-space layer mix replaced (`genz.with_layer_mix`)."""
    group = parser.add_argument_group("architecture variants")
    for axis in ARCHITECTURE_AXES.values():
        group.add_argument(axis.flag, type=int, default=None, help=axis.help)


#: ``--lora-targets`` when not given.
DEFAULT_LORA_TARGETS = "qkv,o"


def add_lora_arguments(parser: argparse.ArgumentParser) -> None:
    """``--lora-rank``, ``--lora-adapters`` and ``--lora-targets`` (`genz.with_lora`)."""
    lora = parser.add_argument_group("multi-LoRA serving (S-LoRA / Punica batching)")
    lora.add_argument("--lora-rank", type=int, default=None, help="adapter rank r")
    lora.add_argument(
        "--lora-adapters", type=int, default=1, help="distinct adapters resident (default 1)"
    )
    lora.add_argument(
        "--lora-targets",
        default=DEFAULT_LORA_TARGETS,
        help="projections with adapters, comma-separated from qkv, o, ffn (default qkv,o)",
    )


def lora_model_from_args(args: argparse.Namespace, model: ModelConfig) -> ModelConfig:
    """``model`` serving the ``--lora-*`` adapters (unchanged without ``--lora-rank``)."""
    if args.lora_rank is None:  # adapters and targets describe the rank's adapters
        for flag, value, default in (
            ("--lora-adapters", args.lora_adapters, 1),
            ("--lora-targets", args.lora_targets, DEFAULT_LORA_TARGETS),
        ):
            if value != default:
                raise InputError(f"{flag} goes with --lora-rank (the adapters' rank)")
        return model
    targets = tuple(part.strip() for part in args.lora_targets.split(",") if part.strip())
    return with_lora(model, args.lora_rank, args.lora_adapters, targets)


def model_from_args(args: argparse.Namespace, model: ModelConfig) -> ModelConfig:
    """``model`` with the ``--sliding-window`` / ``--attention-layers`` given (checked by flag)."""
    options = vars(args)
    changes = {}
    for name, axis in ARCHITECTURE_AXES.items():
        value = options.get(axis.dest)
        if value is not None:
            axis.check(value, axis.flag)
            changes[name] = value
    flags = {name: axis.flag for name, axis in ARCHITECTURE_AXES.items()}
    return with_layer_mix(model, **changes, flags=flags) if changes else model


def _mode(options: dict[str, object], name: str) -> float:
    """The checked value of a `genz.MODE_AXES` option, its default when not given."""
    axis = AXES[name]
    value = options.get(axis.dest)
    if value is None:
        return float(axis.default or 0.0)
    axis.check(value, axis.flag)
    return value  # type: ignore[return-value]


def offload_from_args(args: argparse.Namespace) -> tuple[float, float]:
    """The checked ``(--weight-offload, --kv-offload)`` shares (0 when not given)."""
    options = vars(args)
    return _mode(options, "weight_offload"), _mode(options, "kv_offload")


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
        parallel_samples=int(_mode(options, "parallel_samples")),
        beam_width=int(_mode(options, "beam_width")),
        weight_offload=_mode(options, "weight_offload"),
        kv_offload=_mode(options, "kv_offload"),
        images=int(_mode(options, "images")),
    )
