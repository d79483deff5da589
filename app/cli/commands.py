"""The sub-commands of ``codesign``: name, the module that defines it, one-line help.

This table is all ``codesign --help`` needs, so listing the commands imports no command
module (they pull in numpy, pandas, the ILP and fitting stacks). `app.cli` imports a
command's module only when that command runs; the module's ``register`` adds its
parsers with `add_command`, which takes the help from here.
"""

from __future__ import annotations

import argparse
from typing import NamedTuple


class Command(NamedTuple):
    """One sub-command: ``module`` (under ``app``) defines its options and handler."""

    name: str
    module: str
    help: str


COMMANDS: dict[str, Command] = {
    command.name: command
    for command in (
        Command("hw", "hw", "list and show hardware presets, or design one"),
        Command("roofline", "hw", "time one operator with the roofline model"),
        Command("models", "predict", "list model presets with parameter counts"),
        Command("predict", "predict", "TTFT, TPOT, throughput, memory and bounds"),
        Command("speculate", "estimates", "speculative-decoding speed-up estimate"),
        Command("disagg", "estimates", "disaggregated prefill/decode estimate"),
        Command(
            "serve",
            "serve",
            "simulate serving under load: TTFT/TPOT percentiles, goodput, capacity",
        ),
        Command("app", "dashboard", "start the what-if dashboard (Streamlit)"),
        Command(
            "requirements",
            "requirements",
            "least bandwidth, compute, capacity and devices meeting an SLO",
        ),
        Command("oicf", "requirements", "OI and CF of prefill/decode across workflows"),
        Command(
            "quantize",
            "quantize",
            "choose per-layer bit widths within memory/latency budgets (ILP)",
        ),
        Command("fit", "scaling", "fit a scaling law to training runs (CSV)"),
        Command("loss", "scaling", "predict loss and perplexity with a fitted law"),
        Command(
            "search",
            "codesign",
            "Pareto frontier of a hardware x model x precision design space",
        ),
        Command(
            "recommend",
            "codesign",
            "write config.json, bits.yaml and platform.yaml of the best designs",
        ),
        Command("calibrate", "calibrate", "fit a serving-stack (runtime) profile to runs"),
        Command(
            "calibrate-transfer",
            "calibrate_transfer",
            "fit the transferable model on the measurement store, write its profiles",
        ),
    )
}


def add_command(subparsers: argparse._SubParsersAction, name: str) -> argparse.ArgumentParser:
    """Add sub-command ``name`` with its help from `COMMANDS`; returns its parser."""
    return subparsers.add_parser(name, help=COMMANDS[name].help)
