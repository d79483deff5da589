"""``codesign app``: start the Streamlit what-if dashboard (``app/dashboard/main.py``)."""

from __future__ import annotations

import argparse
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from roofline import InputError, flag_bound

from .commands import add_command

DASHBOARD = Path(__file__).resolve().parents[1] / "dashboard" / "main.py"
#: ``--max-upload-mb`` default (the largest shipped uploader's limit) and its upper bound.
DEFAULT_MAX_UPLOAD_MB = 20
MAX_UPLOAD_MB = int(flag_bound("app", "--max-upload-mb").high)  # type: ignore[union-attr]
#: Seconds the Streamlit child gets to stop after a forwarded signal before it is killed.
STOP_GRACE_S = 10.0
#: Seconds between checks on the child while it serves.
POLL_S = 0.5
#: `serve_until_stopped`'s result when a forwarded signal stopped the child.
STOPPED = -1


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``app`` sub-command."""
    parser = add_command(subparsers, "app")
    parser.add_argument("--port", type=int, default=8501, help="port to serve on (default 8501)")
    parser.add_argument(
        "--address",
        default="127.0.0.1",
        help="address to bind (default 127.0.0.1; 0.0.0.0 serves every interface)",
    )
    parser.add_argument(
        "--max-upload-mb",
        type=int,
        default=DEFAULT_MAX_UPLOAD_MB,
        help=f"largest upload Streamlit accepts, MB (default {DEFAULT_MAX_UPLOAD_MB}; "
        "each uploader keeps its own smaller limit: config.json 1 MB, runs 20 MB)",
    )
    parser.add_argument(
        "--base-url-path",
        default="",
        help="serve under this path, e.g. 'codesign' behind a reverse proxy at /codesign/",
    )
    parser.set_defaults(func=run_app)


def streamlit_command(
    port: int, address: str, max_upload_mb: int = 20, base_url_path: str = ""
) -> list[str]:
    """The ``streamlit run`` call that serves the dashboard headless (no usage stats),
    with Streamlit's developer toolbar (the "Deploy" button) hidden, uploads capped at
    ``max_upload_mb`` and, behind a reverse proxy, under ``base_url_path``."""
    command = [
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
        "--client.toolbarMode",
        "viewer",
        "--server.maxUploadSize",
        str(max_upload_mb),
    ]
    if base_url_path:
        command += ["--server.baseUrlPath", base_url_path.strip("/")]
    return command


def run_app(args: argparse.Namespace) -> None:
    """Serve until interrupted; a failing Streamlit's exit code becomes ours.

    SIGTERM and SIGINT are forwarded to the Streamlit child and waited for (killed
    after `STOP_GRACE_S`), so stopping ``codesign app`` also frees the port.
    """
    base = args.base_url_path.strip("/")
    if base and not all(
        part.replace("-", "").replace("_", "").isalnum() for part in base.split("/")
    ):
        raise InputError(
            f"--base-url-path must be letters, digits, '-', '_' and '/', got {args.base_url_path!r}"
        )
    check_port_free(args.address, args.port)
    suffix = f"/{base}/" if base else ""
    print(f"dashboard: http://{args.address}:{args.port}{suffix} (Ctrl+C stops it)", flush=True)
    code = serve_until_stopped(streamlit_command(args.port, args.address, args.max_upload_mb, base))
    if code not in (0, STOPPED):
        raise SystemExit(code)


def check_port_free(address: str, port: int) -> None:
    """Raise `InputError` naming the port when ``address:port`` cannot be bound."""
    try:
        family, kind, proto, _, where = socket.getaddrinfo(
            address, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
    except socket.gaierror as error:
        raise InputError(f"--address {address!r} is not a usable address ({error})") from None
    with socket.socket(family, kind, proto) as probe:
        # As Streamlit's server binds: a port left in TIME_WAIT is reusable, a listener is not.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(where)
        except OSError as error:
            raise InputError(
                f"--port {port}: {address}:{port} is not available ({error.strerror}); "
                "stop what serves there or pick another --port"
            ) from None


def serve_until_stopped(command: list[str]) -> int:
    """Run ``command``; forward SIGTERM/SIGINT to it and wait. Returns its exit code, or
    `STOPPED` when a forwarded signal stopped it."""
    stop: list[float] = []  # deadline for the child once a signal arrived
    child: subprocess.Popen[bytes] | None = None

    def forward(signum: int, _frame: object) -> None:
        if not stop:
            stop.append(time.monotonic() + STOP_GRACE_S)
        if child is not None and child.poll() is None:
            child.send_signal(signum)

    forwarded = (signal.SIGTERM, signal.SIGINT)
    previous = {signum: signal.signal(signum, forward) for signum in forwarded}
    try:
        child = subprocess.Popen(command)
        if stop:  # a signal came before the child existed
            child.terminate()
        while True:
            try:
                code = child.wait(timeout=POLL_S)
                break
            except subprocess.TimeoutExpired:
                if stop and time.monotonic() > stop[0]:
                    child.kill()
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    return STOPPED if stop else code
