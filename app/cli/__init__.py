"""``codesign`` console script: one sub-command module per layer, errors as one line.

Start-up stays light: the parser lists every command from `app.cli.commands.COMMANDS` and
imports only the module of the command being run, which adds its options and handler.
``codesign --help`` therefore imports no numpy, pandas, scipy or pulp (nor roofline).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Collection, Mapping, Sequence

from .commands import COMMANDS
from .flag_checks import check_flags


class OneLineArgumentParser(argparse.ArgumentParser):
    """Argument errors print one line (no usage dump) and exit with code 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message}\n")


def build_parser(commands: Collection[str] | None = None) -> argparse.ArgumentParser:
    """The ``codesign`` parser.

    Parameters
    ----------
    commands
        Commands whose options are added (their modules are imported); the others are
        listed by name and help only. None adds every command's options.
    """
    parser = OneLineArgumentParser(
        prog="codesign",
        description="Analytical LLM inference performance modelling and co-design.",
    )
    subparsers = parser.add_subparsers(
        dest="command", required=True, parser_class=OneLineArgumentParser
    )
    wanted = {c.module for c in COMMANDS.values() if commands is None or c.name in commands}
    registered: set[str] = set()
    for command in COMMANDS.values():
        if command.module not in wanted:
            subparsers.add_parser(command.name, help=command.help)
        elif command.module not in registered:
            importlib.import_module(f"{__package__}.{command.module}").register(subparsers)
            registered.add(command.module)
    return parser


def command_of(argv: Sequence[str]) -> set[str]:
    """The sub-command named in ``argv`` (its first word), as a set for `build_parser`."""
    return {argv[0]} if argv and argv[0] in COMMANDS else set()


def flag_named(
    message: str, arguments: Sequence[str], field_flags: Mapping[str, str] | None = None
) -> str:
    """``message`` with a leading field name replaced by the flag the user typed for it.

    The library names its fields (``power_fraction must be in (0, 1], got 2.0``); when
    the command line holds the matching option (``--power-fraction``, or the flag a
    command maps the field to in ``field_flags``: ``draft_tokens`` -> ``--k``), the user
    reads that instead. Other messages are returned unchanged.
    """
    field, _, rest = message.partition(" ")
    flag = (field_flags or {}).get(field, "--" + field.replace("_", "-"))
    typed = any(word == flag or word.startswith(flag + "=") for word in arguments)
    if field.isidentifier() and rest.startswith("must ") and typed:
        return f"{flag} {rest}"
    return message


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the process exit code (0 ok, 1 some rows of a batch failed,
    2 bad input or every row failed)."""
    arguments = sys.argv[1:] if argv is None else list(argv)
    args = argparse.Namespace()
    try:
        # Building a command's parser may read the presets folder, so a wrong
        # CODESIGN_DATA_DIR is an input error here too.
        parser = build_parser(command_of(arguments))
        args = parser.parse_args(arguments)
        check_flags(parser, args)  # the one table of bounds: app/cli/flag_checks.py
        code = args.func(args)  # batch modes return 1 when some rows failed
    except KeyboardInterrupt:
        print("codesign: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as error:
        if not is_input_error(error):
            raise
        message = flag_named(str(error), arguments, getattr(args, "field_flags", None))
        print(f"codesign: error: {message}", file=sys.stderr)
        return 2
    return code if isinstance(code, int) else 0


def is_input_error(error: BaseException) -> bool:
    """True for a `roofline.InputError`.

    roofline is imported here, once an error needs sorting (whoever raised an InputError
    has loaded it already), so ``codesign --help`` starts without it.
    """
    from roofline import InputError

    return isinstance(error, InputError)
