"""``codesign app``: start the Streamlit what-if dashboard (``app/dashboard.py``)."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from roofline import InputError

DASHBOARD = Path(__file__).resolve().parent / "dashboard.py"


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``app`` sub-command."""
    parser = subparsers.add_parser("app", help="start the what-if dashboard (Streamlit)")
    parser.add_argument("--port", type=int, default=8501, help="port to serve on (default 8501)")
    parser.add_argument(
        "--address",
        default="127.0.0.1",
        help="address to bind (default 127.0.0.1; 0.0.0.0 serves every interface)",
    )
    parser.set_defaults(func=run_app)


def streamlit_command(port: int, address: str) -> list[str]:
    """The ``streamlit run`` call that serves the dashboard headless (no usage stats)."""
    return [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        str(DASHBOARD),
        "--server.headless",
        "true",
        "--server.port",
        str(port),
        "--server.address",
        address,
        "--browser.gatherUsageStats",
        "false",
    ]


def run_app(args: argparse.Namespace) -> None:
    """Serve until interrupted; a failing Streamlit's exit code becomes ours."""
    if not 1 <= args.port <= 65535:
        raise InputError(f"--port must be in [1, 65535], got {args.port}")
    print(f"dashboard: http://{args.address}:{args.port} (Ctrl+C stops it)", flush=True)
    try:
        completed = subprocess.run(streamlit_command(args.port, args.address), check=False)
    except KeyboardInterrupt:
        return
    if completed.returncode != 0:
        raise SystemExit(completed.returncode)
