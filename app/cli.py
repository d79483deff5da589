"""``codesign`` console script: one sub-command module per layer, errors as one line."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from roofline import InputError

from . import (
    commands_app,
    commands_codesign,
    commands_hw,
    commands_predict,
    commands_quantize,
    commands_requirements,
    commands_scaling,
    commands_serving,
)


class OneLineArgumentParser(argparse.ArgumentParser):
    """Argument errors print one line (no usage dump) and exit with code 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message}\n")


COMMAND_MODULES = (
    commands_hw,
    commands_predict,
    commands_serving,
    commands_app,
    commands_requirements,
    commands_quantize,
    commands_scaling,
    commands_codesign,
)


def build_parser() -> argparse.ArgumentParser:
    """The full parser; each command module adds its sub-commands."""
    parser = OneLineArgumentParser(
        prog="codesign",
        description="Analytical LLM inference performance modelling and co-design.",
    )
    subparsers = parser.add_subparsers(
        dest="command", required=True, parser_class=OneLineArgumentParser
    )
    for module in COMMAND_MODULES:
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the process exit code (0 ok, 2 bad input)."""
    try:
        # Building the parser reads the presets folder (help texts list presets), so a
        # wrong CODESIGN_DATA_DIR is an input error here too.
        args = build_parser().parse_args(argv)
        args.func(args)
    except InputError as error:
        print(f"codesign: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("codesign: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
