"""Every parsed flag checked against the one table of bounds (`roofline.bounds`).

`app.cli.main` calls `check_flags` between parsing and running a command, so a value
out of range is refused with one line naming the flag the user typed, before any work
(``serve --input 0`` no longer runs with the default; ``serve --seed -1`` no longer
ends in a numpy traceback; ``serve --out somedir/`` is refused before the simulation,
not after it).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

#: Flags that name a file the command writes (a folder or a missing folder is refused).
OUTPUT_FILE_FLAGS = frozenset({"--out", "--frontier-out"})


def check_flags(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Raise `roofline.InputError` for the first given flag outside its bound.

    A nested command (``hw design``) is checked under its full name, so the table can
    give its flags their own entries.
    """
    from roofline import check_flag

    command = getattr(args, "command", None)
    if command is None:
        return
    found = dict(command_parsers(parser))
    words = [command]
    sub = found.get(command)
    while sub is not None and (nested := _nested_command(sub, args)) is not None:
        words.append(nested)
        sub = found.get(" ".join(words))
    command = " ".join(words)
    if sub is None:
        return
    for action in sub._actions:
        flags = [flag for flag in action.option_strings if flag.startswith("--")]
        if not flags or action.dest == "help":
            continue
        value = getattr(args, action.dest, None)
        if value is None or value is action.default or _same(value, action.default):
            continue
        flag = flags[0]
        for item in value if isinstance(value, list) else [value]:
            check_flag(command, flag, item)
        if flag in OUTPUT_FILE_FLAGS and isinstance(value, str):
            _check_output_file(flag, value)


def _same(value: object, default: object) -> bool:
    return type(value) is type(default) and value == default


def _check_output_file(flag: str, value: str) -> None:
    from roofline import InputError

    target = Path(value)
    try:
        folder = target.resolve().parent
        if target.is_dir():
            raise InputError(f"{flag} {value}: is a directory; name a file to write")
        if not folder.is_dir():
            raise InputError(f"{flag} folder does not exist: {folder} (for {value})")
    except OSError as error:  # a name over the file system's limit, a loop of links
        raise InputError(f"{flag}: cannot write there: {error.strerror}") from None


def command_parsers(
    parser: argparse.ArgumentParser, prefix: str = ""
) -> list[tuple[str, argparse.ArgumentParser]]:
    """Every command's parser by full name (``'predict'``, ``'hw design'``), nested
    commands included."""
    found: list[tuple[str, argparse.ArgumentParser]] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                full = f"{prefix}{name}"
                found += [(full, sub), *command_parsers(sub, f"{full} ")]
    return found


def _nested_command(sub: argparse.ArgumentParser, args: argparse.Namespace) -> str | None:
    """The nested command ``args`` chose under ``sub`` (None when ``sub`` has none)."""
    for action in sub._actions:
        if isinstance(action, argparse._SubParsersAction):
            chosen = getattr(args, action.dest, None) if action.dest else None
            return chosen if isinstance(chosen, str) else None
    return None


def warn_context(model: Any, tokens: float) -> None:
    """A stderr warning when ``tokens`` (prompt + output) exceed the model's context
    window (``max_position_embeddings``); the prediction still runs (RoPE scaling and
    the like can stretch a window), but the user should know."""
    window = getattr(model, "max_context", 0) or 0
    if window and tokens > window:
        print(
            f"codesign: warning: {tokens:.0f} tokens per request (prompt + output) exceed "
            f"{model.name}'s context window of {window} (max_position_embeddings)",
            file=sys.stderr,
        )


def warn_tokenizer(target: Any, draft: Any) -> None:
    """A stderr warning when the draft's vocabulary differs from the target's: draft
    tokens are then not the target's tokens, so real speculative decoding cannot verify
    them (the estimate assumes ``--acceptance`` anyway)."""
    if target.vocab_size != draft.vocab_size:
        print(
            f"codesign: warning: {draft.name} (vocabulary {draft.vocab_size}) and "
            f"{target.name} (vocabulary {target.vocab_size}) use different tokenizers; "
            "a draft must share the target's tokenizer for its tokens to be verified",
            file=sys.stderr,
        )
