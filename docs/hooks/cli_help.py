"""MkDocs hook: put the live ``codesign <command> --help`` text into the command reference.

A page writes ``<!-- codesign-help: predict -->`` (or ``hw show``); the build replaces the
marker with a ``text`` block holding what that command prints for ``--help``, so the
reference never drifts from the parser. The help texts come from one child process
(``python -c`` calling the console script's ``app.cli:main``) run in the repository root on
this checkout's code and ``data/``, 80 columns wide; a command that fails to print its help
fails the build.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from mkdocs.exceptions import PluginError

MARKER = re.compile(r"<!--\s*codesign-help:\s*([a-z][a-z -]*?)\s*-->")
ROOT = Path(__file__).resolve().parents[2]

_CHILD = """
import contextlib, io, json, sys
from app.cli import main
texts = {}
for command in json.loads(sys.argv[1]):
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer), contextlib.suppress(SystemExit):
        main([*command.split(), "--help"])
    texts[command] = buffer.getvalue()
print(json.dumps(texts))
"""

_texts: dict[str, str] = {}


def on_files(files, config):
    """Collect every marker of the site and ask the CLI for all help texts at once."""
    commands: set[str] = set()
    for file in files.documentation_pages():
        commands.update(MARKER.findall(Path(file.abs_src_path).read_text(encoding="utf-8")))
    _texts.clear()
    if not commands:
        return files
    # This checkout's code and shipped data, whatever is installed or configured.
    env = dict(
        os.environ,
        COLUMNS="80",
        PYTHONPATH=str(ROOT),
        CODESIGN_DATA_DIR=str(ROOT / "data"),
        NO_COLOR="1",
    )
    child = subprocess.run(
        [sys.executable, "-c", _CHILD, json.dumps(sorted(commands))],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if child.returncode != 0:
        raise PluginError(f"cli_help: codesign --help failed:\n{child.stderr}")
    _texts.update(json.loads(child.stdout.splitlines()[-1]))
    for command, text in _texts.items():
        if not text.startswith("usage: codesign"):
            raise PluginError(f"cli_help: 'codesign {command} --help' printed no usage")
    return files


def on_page_markdown(markdown, page, config, files):
    """Replace each marker by the command's help text."""

    def block(match: re.Match[str]) -> str:
        command = match.group(1)
        return f"```text\n$ codesign {command} --help\n{_texts[command].rstrip()}\n```"

    return MARKER.sub(block, markdown)
