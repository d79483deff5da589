"""Scenario axes, declared once: name, CLI flag, unit, type, default, accepted range, help.

`SCALE_AXES` declares the what-if platform scale factors the same way.

`Scenario`, `Parallelism` and `Precision` check their fields against these ranges,
`evaluate_grid` checks its arrays against them, the CLI builds its scenario option group
from them, the co-design space file reads its workload, precision and parallelism
sections with them and the dashboard takes its defaults and limits from them. Token
defaults (1024 prompt, 128 generated) live here and nowhere else.
"""

from __future__ import annotations

from dataclasses import dataclass

from roofline import InputError

#: Default scenario: one request, 1024 prompt tokens, 128 generated, 16-bit everything.
DEFAULT_BATCH = 1
DEFAULT_INPUT_TOKENS = 1024
DEFAULT_OUTPUT_TOKENS = 128
DEFAULT_BITS = 16.0


@dataclass(frozen=True)
class Axis:
    """One scenario axis.

    Attributes
    ----------
    name
        Field of `Scenario` / keyword of `evaluate_grid` (``'input_tokens'``).
    flag
        CLI option (``'--input'``).
    unit
        What one unit counts (``'tokens'``, ``'bits'``, ``'devices'``, ``'requests'``);
        empty for a dimensionless factor.
    integer
        Whole numbers only (tokens, batch, parallel degrees); bits may be fractional.
    default
        Value when not given; None means "derived" (the model's weight bits, no chunking).
    low, high
        Accepted closed range, in ``unit``.
    help
        One-line description for ``--help`` and the dashboard.
    """

    name: str
    flag: str
    unit: str
    integer: bool
    default: float | None
    low: float
    high: float
    help: str

    @property
    def requirement(self) -> str:
        """What a valid value is, e.g. ``'an integer in [1, 1000000]'``."""
        if self.integer:
            return f"an integer in [{self.low:.0f}, {self.high:.0f}]"
        if self.unit == "fraction":
            return f"a fraction in [{self.low:g}, {self.high:g}]"
        of_unit = f" of {self.unit}" if self.unit else ""
        return f"a number{of_unit} in [{self.low:g}, {self.high:g}]"

    @property
    def dest(self) -> str:
        """Attribute name argparse stores ``flag`` under (``'--input'`` -> ``'input'``)."""
        return self.flag.lstrip("-").replace("-", "_")

    def check(self, value: object, label: str | None = None) -> None:
        """Raise `InputError` unless ``value`` is of this axis' type and in range.

        ``label`` names the value in the message (default: ``name``); pass the CLI flag
        so the user reads the option they typed.
        """
        if isinstance(value, bool) or not isinstance(value, int | float):
            valid = False
        elif self.integer:
            valid = isinstance(value, int) and self.low <= value <= self.high
        else:
            valid = self.low <= value <= self.high
        if not valid:
            raise InputError(f"{label or self.name} must be {self.requirement}, got {value!r}")


def _count(name: str, flag: str, unit: str, default: int | None, high: float, text: str) -> Axis:
    return Axis(name, flag, unit, True, default, 1, high, text)


def _bits(name: str, flag: str, text: str) -> Axis:
    return Axis(name, flag, "bits", False, DEFAULT_BITS, 1, 32, text)


def _fraction(name: str, flag: str, what: str) -> Axis:
    return Axis(
        name,
        flag,
        "fraction",
        False,
        0.0,
        0.0,
        1.0,
        f"share of the {what} kept in host memory, streamed over the host link (default 0)",
    )


#: Every scenario axis by `Axis.name`, in the CLI's option order.
AXES: dict[str, Axis] = {
    axis.name: axis
    for axis in (
        _count(
            "batch",
            "--batch",
            "requests",
            DEFAULT_BATCH,
            1_000_000,
            f"concurrent requests (default {DEFAULT_BATCH})",
        ),
        _count(
            "input_tokens",
            "--input",
            "tokens",
            DEFAULT_INPUT_TOKENS,
            100_000_000,
            f"prompt tokens per request (default {DEFAULT_INPUT_TOKENS})",
        ),
        _count(
            "output_tokens",
            "--output",
            "tokens",
            DEFAULT_OUTPUT_TOKENS,
            100_000_000,
            f"generated tokens per request (default {DEFAULT_OUTPUT_TOKENS})",
        ),
        _bits("weight_bits", "--wbits", "weight bits (default: the model's, 16 for most)"),
        _bits("activation_bits", "--abits", f"activation bits (default {DEFAULT_BITS:g})"),
        _bits("kv_bits", "--kvbits", f"KV-cache bits (default {DEFAULT_BITS:g})"),
        _count(
            "prefill_chunk",
            "--chunk",
            "tokens",
            None,
            100_000_000,
            "chunked-prefill chunk size, tokens",
        ),
        Axis(
            "parallel_samples",
            "--parallel-samples",
            "sequences",
            True,
            1,
            1,
            1024,
            "n samples per request sharing the prompt's KV (vLLM n); all returned",
        ),
        Axis(
            "beam_width",
            "--beam-width",
            "sequences",
            True,
            1,
            1,
            1024,
            "beam search: beams per request sharing the prompt's KV; one returned",
        ),
        Axis(
            "images",
            "--images",
            "images",
            True,
            0,
            0,
            1024,
            "images per request through the model's vision encoder (VLM presets)",
        ),
        _fraction("weight_offload", "--weight-offload", "weights"),
        _fraction("kv_offload", "--kv-offload", "KV cache"),
        _count("tp", "--tp", "devices", 1, 4096, "tensor-parallel degree (default 1)"),
        _count("pp", "--pp", "devices", 1, 4096, "pipeline-parallel degree (default 1)"),
        _count("ep", "--ep", "devices", 1, 4096, "expert-parallel degree (default 1)"),
        _count("dp", "--dp", "devices", 1, 4096, "data-parallel degree (default 1)"),
    )
}
#: The bit-width axes (`Precision` fields).
BITS_AXES = ("weight_bits", "activation_bits", "kv_bits")
#: The device-mesh axes (`Parallelism` fields).
MESH_AXES = ("tp", "pp", "ep", "dp")
#: The token-shape axes of a workload.
WORKLOAD_AXES = ("batch", "input_tokens", "output_tokens")
#: Decoding-mode, offload and image axes of a workload (`Scenario` fields).
MODE_AXES = ("parallel_samples", "beam_width", "images", "weight_offload", "kv_offload")
#: Architecture axes a sweep may vary beside the scenario's: window size and
#: attention/SSM layer mix (`genz.layer_mix`), by name; unset means the model's own.
ARCHITECTURE_AXES: dict[str, Axis] = {
    axis.name: axis
    for axis in (
        Axis(
            "sliding_window",
            "--sliding-window",
            "tokens",
            True,
            None,
            0,
            100_000_000,
            "attention window in tokens replacing the model's (a model without one gets "
            "it on every attention layer); 0: full attention everywhere",
        ),
        Axis(
            "attention_layers",
            "--attention-layers",
            "layers",
            True,
            None,
            0,
            1024,
            "attention layers of a hybrid, the rest state-space, spread evenly "
            "(default: the model's pattern)",
        ),
    )
}
#: The axes `evaluate_grid` broadcasts, in its keyword order (workload, bits, mesh);
#: `MODE_AXES` and `ARCHITECTURE_AXES` follow as keywords.
GRID_AXES = (*WORKLOAD_AXES, *BITS_AXES, *MESH_AXES)
#: `GRID_AXES` without data-parallel replicas (a measurement is of one replica).
REPLICA_AXES = tuple(name for name in GRID_AXES if name != "dp")


def _scale(name: str, flag: str, text: str) -> Axis:
    return Axis(name, flag, "", False, 1.0, 1e-3, 1e3, text)


#: What-if platform scale factors shared by the CLI (``--bw-scale``) and the co-design
#: space file (``hardware.bandwidth_scale``), by space-file name. Each multiplies the
#: preset's value.
SCALE_AXES: dict[str, Axis] = {
    axis.name: axis
    for axis in (
        _scale("compute_scale", "--compute-scale", "multiply every peak"),
        _scale("bandwidth_scale", "--bw-scale", "multiply memory bandwidth"),
        _scale("capacity_scale", "--capacity-scale", "multiply capacity"),
        _scale("link_bandwidth_scale", "--link-bw-scale", "multiply link bandwidth"),
    )
}
