"""``codesign app`` as a real process: SIGTERM stops the Streamlit child too; a busy port
is a one-line error before any URL is printed (issue #11)."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: Streamlit's first start on a loaded 2-core machine can take tens of seconds.
START_TIMEOUT_S = 120.0
#: What "stops promptly" means for the parent, its child and the port.
STOP_TIMEOUT_S = 15.0

pytestmark = pytest.mark.skipif(
    not Path("/proc/self/task").is_dir(), reason="reads child processes from Linux /proc"
)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _app(port: int, log: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CODESIGN_DATA_DIR": str(ROOT / "data")}
    with log.open("wb") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "app.cli", "app", "--port", str(port)],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=ROOT,
            start_new_session=True,  # signals sent to the test runner do not reach it
        )


def _children(pid: int) -> list[int]:
    text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    return [int(child) for child in text.split()]


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"  # a zombie has stopped; only its exit status is left


def _serves(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2) as reply:
            return reply.status == 200
    except OSError:
        return False


def _port_open(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(1)
        return probe.connect_ex(("127.0.0.1", port)) == 0


@contextlib.contextmanager
def _reaped(processes: list[int]) -> Iterator[None]:
    """Kill (by pid) whatever the test started that is still alive when it ends."""
    try:
        yield
    finally:
        for pid in processes:
            if _alive(pid):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)


def _wait_until(condition, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.2)
    return condition()


def test_sigterm_stops_the_streamlit_child_and_frees_the_port(tmp_path: Path) -> None:
    port = _free_port()
    log = tmp_path / "app.log"
    parent = _app(port, log)
    started: list[int] = [parent.pid]
    with _reaped(started):
        assert _wait_until(lambda: _serves(port) or parent.poll() is not None, START_TIMEOUT_S)
        assert parent.poll() is None, log.read_text()
        children = _children(parent.pid)
        started.extend(children)
        assert children, "codesign app should run Streamlit as a child process"
        parent.send_signal(signal.SIGTERM)
        parent.wait(timeout=STOP_TIMEOUT_S)
        assert _wait_until(lambda: not any(map(_alive, children)), STOP_TIMEOUT_S), (
            f"Streamlit child {children} still running after SIGTERM to codesign app"
        )
        assert _wait_until(lambda: not _port_open(port), STOP_TIMEOUT_S)
        assert parent.returncode == 0, log.read_text()


def test_busy_port_is_a_one_line_error_before_any_url(tmp_path: Path) -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = int(holder.getsockname()[1])
        env = {**os.environ, "PYTHONPATH": str(ROOT), "CODESIGN_DATA_DIR": str(ROOT / "data")}
        run = subprocess.run(
            [sys.executable, "-m", "app.cli", "app", "--port", str(port)],
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
            cwd=ROOT,
            check=False,
        )
    assert run.returncode == 2, run.stdout + run.stderr
    assert "http://" not in run.stdout
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and f"--port {port}: 127.0.0.1:{port} is not available" in lines[0]
