"""Collective-communication times on a platform's interconnect (seconds).

Alpha-beta models, ``time = base + steps * latency + bytes_on_the_wire / (link_bw * eff)``:

- ring all-reduce of S bytes over n devices: ``base + 2(n-1)/n * S / bw + 2(n-1) * latency``
- ring all-gather / all-to-all: ``base + (n-1)/n * S / bw + (n-1) * latency``
- point-to-point: ``S / bw + latency``

``latency`` is ``Interconnect.link_latency_s`` (per hop) and ``base`` is
``Interconnect.collective_latency_s``, paid once per collective on n >= 2 devices
(0 unless the platform sets it; `benchmarks/validate_collectives.py` compares both
terms with published all-reduce times).

Groups larger than ``devices_per_node`` use the scale-out network when the
platform gives one (the slowest link in a ring sets its pace). Every function
broadcasts over numpy arrays of message sizes and group sizes.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .errors import InputError
from .platform import Platform


def collective_base_s(platform: Platform, group_size: ArrayLike) -> NDArray[np.float64]:
    """``Interconnect.collective_latency_s`` where ``group_size`` >= 2, else 0, seconds."""
    n = np.asarray(group_size, float)
    base = 0.0 if platform.interconnect is None else platform.interconnect.collective_latency_s
    return np.where(n > 1, base, 0.0)


def link_parameters(
    platform: Platform, group_size: ArrayLike
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Effective (bandwidth bytes/s after efficiency, latency s) for groups of ``group_size``."""
    n = np.asarray(group_size, float)
    link = platform.interconnect
    if link is None:
        if np.any(n > 1):
            raise InputError(
                f"{platform.name} has no interconnect; parallel degree must be 1, got {int(n.max())}"
            )
        return np.full_like(n, np.inf), np.zeros_like(n)
    bandwidth = np.full_like(n, link.link_bandwidth_bytes_per_s)
    latency = np.full_like(n, link.link_latency_s)
    if link.scaleout_bandwidth_bytes_per_s is not None:
        off_node = n > link.devices_per_node
        bandwidth = np.where(
            off_node,
            min(link.link_bandwidth_bytes_per_s, link.scaleout_bandwidth_bytes_per_s),
            bandwidth,
        )
        latency = np.where(
            off_node, max(link.link_latency_s, link.scaleout_latency_s or 0.0), latency
        )
    return bandwidth * platform.efficiency.interconnect, latency


def _ring(
    platform: Platform, message_bytes: ArrayLike, group_size: ArrayLike, passes: int
) -> NDArray[np.float64]:
    n = np.asarray(group_size, float)
    message = np.asarray(message_bytes, float)
    if (n < 1).any() or (message < 0).any():
        raise InputError("group_size must be >= 1 and message_bytes >= 0")
    bandwidth, latency = link_parameters(platform, n)
    # n >= 1, so the division is safe; one device has no hops (and no link: infinite
    # bandwidth), so both terms are exactly 0 without special-casing it.
    hops = passes * (n - 1)
    wire = hops / n * message / bandwidth + hops * latency
    return np.asarray(wire + collective_base_s(platform, n))


def all_reduce_time(
    platform: Platform, message_bytes: ArrayLike, group_size: ArrayLike
) -> NDArray[np.float64]:
    """Ring all-reduce of ``message_bytes`` per device over ``group_size`` devices, seconds."""
    return _ring(platform, message_bytes, group_size, passes=2)


def all_gather_time(
    platform: Platform, message_bytes: ArrayLike, group_size: ArrayLike
) -> NDArray[np.float64]:
    """Ring all-gather producing ``message_bytes`` on every device, seconds."""
    return _ring(platform, message_bytes, group_size, passes=1)


def all_to_all_time(
    platform: Platform, message_bytes: ArrayLike, group_size: ArrayLike
) -> NDArray[np.float64]:
    """All-to-all where each device holds ``message_bytes`` and keeps 1/n of it, seconds."""
    return _ring(platform, message_bytes, group_size, passes=1)


def point_to_point_time(platform: Platform, message_bytes: ArrayLike) -> NDArray[np.float64]:
    """One send of ``message_bytes`` to a neighbouring device, seconds."""
    if np.any(np.asarray(message_bytes, float) < 0):
        raise InputError("message_bytes must be >= 0")
    bandwidth, latency = link_parameters(platform, 2)
    return np.asarray(message_bytes, float) / bandwidth + latency
