"""Collective-communication times on a platform's interconnect (seconds).

Alpha-beta models: ``time = steps * latency + bytes_on_the_wire / (link_bw * eff)``.
Groups larger than ``devices_per_node`` use the scale-out network when the
platform gives one (the slowest link in a ring sets its pace).
"""

from __future__ import annotations

from .errors import InputError, require_non_negative
from .platform import Platform


def _link(platform: Platform, group_size: int) -> tuple[float, float]:
    """Effective (bandwidth bytes/s, latency s) for a group of ``group_size`` devices."""
    link = platform.interconnect
    if link is None:
        raise InputError(
            f"{platform.name} has no interconnect; parallel degree must be 1, got {group_size}"
        )
    bandwidth, latency = link.link_bandwidth_bytes_per_s, link.link_latency_s
    if group_size > link.devices_per_node and link.scaleout_bandwidth_bytes_per_s is not None:
        bandwidth = min(bandwidth, link.scaleout_bandwidth_bytes_per_s)
        latency = max(latency, link.scaleout_latency_s or 0.0)
    return bandwidth * platform.efficiency.interconnect, latency


def _check(group_size: int, message_bytes: float) -> None:
    if not isinstance(group_size, int) or group_size < 1:
        raise InputError(f"group_size must be an integer >= 1, got {group_size!r}")
    require_non_negative("message_bytes", message_bytes)


def all_reduce_time(platform: Platform, message_bytes: float, group_size: int) -> float:
    """Ring all-reduce of ``message_bytes`` per device: ``2(n-1)/n S/bw + 2(n-1) lat``."""
    _check(group_size, message_bytes)
    if group_size == 1:
        return 0.0
    bandwidth, latency = _link(platform, group_size)
    n = group_size
    return 2 * (n - 1) / n * message_bytes / bandwidth + 2 * (n - 1) * latency


def all_gather_time(platform: Platform, message_bytes: float, group_size: int) -> float:
    """Ring all-gather of a ``message_bytes`` result: ``(n-1)/n S/bw + (n-1) lat``."""
    _check(group_size, message_bytes)
    if group_size == 1:
        return 0.0
    bandwidth, latency = _link(platform, group_size)
    n = group_size
    return (n - 1) / n * message_bytes / bandwidth + (n - 1) * latency


def all_to_all_time(platform: Platform, message_bytes: float, group_size: int) -> float:
    """All-to-all where each device holds ``message_bytes`` and keeps 1/n of it."""
    _check(group_size, message_bytes)
    if group_size == 1:
        return 0.0
    bandwidth, latency = _link(platform, group_size)
    n = group_size
    return (n - 1) / n * message_bytes / bandwidth + (n - 1) * latency


def point_to_point_time(platform: Platform, message_bytes: float) -> float:
    """One send of ``message_bytes`` to a neighbouring device (pipeline stage hand-off)."""
    _check(2, message_bytes)
    bandwidth, latency = _link(platform, 2)
    return message_bytes / bandwidth + latency
