"""``codesign serve --engine-version`` and ``--device-gemm-rates``: the flags; what
they apply is `app.serving_stack` (shared with the dashboard's Serving page)."""

from __future__ import annotations

import argparse


def add_stack_arguments(parser: argparse.ArgumentParser) -> None:
    """``--engine-version`` and ``--device-gemm-rates`` (both off by default)."""
    group = parser.add_argument_group("serving stack (version family, device GEMM rate)")
    group.add_argument(
        "--engine-version",
        help="engine and release, e.g. 'vLLM 0.10', 'TensorRT-LLM 1.0', 'SGLang 0.3': a "
        "line newer than the --runtime profile's drops its per-sequence cost; the line's "
        "fitted request and per-chunk costs are charged (data/runtimes/serving_costs)",
    )
    group.add_argument(
        "--device-gemm-rates",
        action="store_true",
        help="scale the --runtime profile's compute efficiency by the device's cited "
        "achievable-GEMM fraction over its fitted devices' (data/hardware/microbenchmarks.csv)",
    )
