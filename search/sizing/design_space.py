"""A parametric hardware design space evaluated on one workload, for the requirement
searches over designs (`search.sizing.cheapest`, `search.sizing.design_pairs`).

A `DesignGrid` is the product of its axes: dense 16-bit compute (TFLOP/s), memory
(technology x units, optionally GB per unit), on-die SRAM (MB), process node and link
set. Each combination is one `roofline.AcceleratorDesign`; combinations the cost model
refuses (a die beyond the reticle) are left out. `evaluate_space` prices every design
(`roofline.design_cost`) and predicts every mesh of it (`search.sizing.mesh` candidates:
TP inside a node, then PP, EP for MoE) with one vectorised `genz.evaluate_grid` call
per design, giving a `SpaceTable`: one row per (design, mesh), SI units and US$.

A device-hour costs the modelled manufacturing cost over ``lifetime_years`` plus
electricity at the modelled TDP (`search.economics.design_hourly_usd`).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from genz import ModelConfig, Scenario, evaluate_grid
from roofline import (
    AcceleratorDesign,
    DesignCost,
    InputError,
    MemorySpec,
    Platform,
    design_cost,
    design_platform,
    parse_memory,
    process_node,
    require_non_negative,
    require_positive,
)
from search.economics import (
    DESIGN_ELECTRICITY_USD_PER_KWH,
    DESIGN_LIFETIME_YEARS,
    design_hourly_usd,
)

from .mesh import mesh_candidates

#: The default space: about 480 designs from edge-class to flagship parts.
DEFAULT_COMPUTE_TFLOPS = (125.0, 250.0, 500.0, 1000.0, 2000.0)
DEFAULT_MEMORIES = (
    "hbm3e:8",
    "hbm3e:6",
    "hbm3e:4",
    "hbm3:5",
    "hbm2e:5",
    "gddr7:16",
    "gddr7:12",
    "gddr6:12",
    "lpddr5x:32",
    "lpddr5x:16",
    "ddr5:32",
    "ddr5:16",
)
DEFAULT_SRAM_MB = (32.0, 128.0)
DEFAULT_NODES = ("n5", "n3")
DEFAULT_LINKS = ("nvlink4:18,pcie5:16", "pcie5:16")
MAX_DESIGNS = 4096
MAX_SPACE_FILE_BYTES = 200_000

Array = NDArray[np.float64]


def parse_links(text: str) -> dict[str, int]:
    """``'nvlink4:18,pcie5:16'`` -> ``{'nvlink4': 18, 'pcie5': 16}``."""
    links: dict[str, int] = {}
    for item in str(text).split(","):
        name, _, count = item.strip().partition(":")
        try:
            links[name.lower()] = int(count)
        except ValueError:
            raise InputError(
                f"link set must be link:units pairs (e.g. nvlink4:18,pcie5:16), got {text!r}"
            ) from None
    return links


@dataclass(frozen=True)
class DesignGrid:
    """The axes of a design space (module doc); every axis a non-empty tuple.

    ``compute_tflops`` dense bf16 TFLOP/s; ``memories`` `roofline.MemorySpec` (or
    ``'technology:units[:GB]'`` text); ``sram_mb`` decimal MB; ``nodes`` process node
    names; ``links`` link-technology -> units mappings (or ``'nvlink4:18,pcie5:16'``
    text); ``clock_ghz`` the tensor clock; ``vector_ratio`` 16-bit tensor peak over the
    fp32 vector peak.
    """

    compute_tflops: tuple[float, ...] = DEFAULT_COMPUTE_TFLOPS
    memories: tuple[MemorySpec | str, ...] = DEFAULT_MEMORIES
    sram_mb: tuple[float, ...] = DEFAULT_SRAM_MB
    nodes: tuple[str, ...] = DEFAULT_NODES
    links: tuple[Mapping[str, int] | str, ...] = DEFAULT_LINKS
    clock_ghz: float = 1.8
    vector_ratio: float = 16.0
    name_prefix: str = field(default="design")

    def __post_init__(self) -> None:
        for label in ("compute_tflops", "memories", "sram_mb", "nodes", "links"):
            if not getattr(self, label):
                raise InputError(f"design space {label} needs at least one value")
        for value in self.compute_tflops:
            require_positive("design compute_tflops (TFLOP/s)", value)
        for value in self.sram_mb:
            require_non_negative("design sram_mb (MB)", value)
        for node in self.nodes:
            process_node(node)
        require_positive("design clock_ghz (GHz)", self.clock_ghz)
        require_positive("design vector_ratio", self.vector_ratio)
        if self.size > MAX_DESIGNS:
            raise InputError(f"design space has {self.size} designs; at most {MAX_DESIGNS}")

    @property
    def size(self) -> int:
        """Designs in the product of the axes (before the reticle check)."""
        return (
            len(self.compute_tflops)
            * len(self.memories)
            * len(self.sram_mb)
            * len(self.nodes)
            * len(self.links)
        )

    def memory_specs(self) -> list[MemorySpec]:
        """The memory axis as `MemorySpec` values."""
        return [m if isinstance(m, MemorySpec) else parse_memory(m) for m in self.memories]

    def link_sets(self) -> list[dict[str, int]]:
        """The link axis as mappings."""
        return [dict(s) if isinstance(s, Mapping) else parse_links(s) for s in self.links]

    def designs(self) -> list[AcceleratorDesign]:
        """One design per combination of the axes."""
        designs = []
        link_sets = self.link_sets()
        for tflops, memory, mb, node, links in itertools.product(
            self.compute_tflops, self.memory_specs(), self.sram_mb, self.nodes, link_sets
        ):
            unit_gb = (
                "" if memory.capacity_gb_per_unit is None else f"x{memory.capacity_gb_per_unit:g}gb"
            )
            link_label = "+".join(f"{k}x{v}" for k, v in links.items())
            designs.append(
                AcceleratorDesign(
                    compute_tflops={"bf16": float(tflops)},
                    vector_tflops_fp32=float(tflops) / self.vector_ratio,
                    memory=memory,
                    sram_mb=float(mb),
                    node=node,
                    clock_ghz=self.clock_ghz,
                    links=links,
                    name=(
                        f"{self.name_prefix}-{tflops:g}tf-{memory.technology}x{memory.units}"
                        f"{unit_gb}-{mb:g}mb-{node}-{link_label}"
                    ),
                )
            )
        return designs


@dataclass(frozen=True)
class SpaceTable:
    """One row per (design, mesh of one replica): ``design`` indexes ``designs``.

    Times in seconds, throughput in output tokens/s of one replica, bytes per device,
    ``hourly_usd`` per device-hour, ``device_cost_usd`` per device.
    """

    designs: tuple[AcceleratorDesign, ...]
    costs: tuple[DesignCost, ...]
    platforms: tuple[Platform, ...]
    design: NDArray[np.int64]
    tp: NDArray[np.int64]
    pp: NDArray[np.int64]
    ep: NDArray[np.int64]
    devices: NDArray[np.int64]
    ttft_s: Array
    tpot_s: Array
    throughput_tokens_per_s: Array
    footprint_bytes: Array
    capacity_bytes: Array
    kv_cache_bytes: Array
    fits: NDArray[np.bool_]
    prefill_bound: NDArray[np.str_]
    decode_bound: NDArray[np.str_]
    device_cost_usd: Array
    hourly_usd: Array

    def __len__(self) -> int:
        return len(self.design)


def designs_from_file(path: str) -> list[AcceleratorDesign]:
    """The designs of a YAML/JSON file: a space file's ``hardware.design`` section, or
    that mapping alone (the keys of `search.codesign` space files: ``compute_tflops``,
    ``memory``, ``sram_mb``, ``node``, ``clock_ghz``, ``vector_ratio``, ``links``)."""
    from roofline import load_user_document
    from search.codesign.designs import parse_design_section

    document = load_user_document(path, kind="design space", max_bytes=MAX_SPACE_FILE_BYTES)
    if isinstance(document, dict) and "hardware" in document:
        hardware = document["hardware"]
        if not isinstance(hardware, dict) or "design" not in hardware:
            raise InputError(f"{path}: hardware needs a design section")
        return parse_design_section(hardware["design"], f"{path}: hardware.design")
    return parse_design_section(document, f"{path}: design")


def buildable(
    designs: Sequence[AcceleratorDesign],
) -> tuple[list[AcceleratorDesign], list[DesignCost]]:
    """The designs the cost model accepts, with their costs (a die beyond the reticle is
    left out); an error only when none remains."""
    kept, costs = [], []
    first_error: InputError | None = None
    for design in designs:
        try:
            costs.append(design_cost(design))
        except InputError as error:
            first_error = first_error or error
            continue
        kept.append(design)
    if not kept:
        raise InputError(f"design space: no design is buildable: {first_error}")
    return kept, costs


def evaluate_space(
    model: ModelConfig,
    scenario: Scenario,
    designs: Sequence[AcceleratorDesign],
    *,
    max_devices: int = 64,
    lifetime_years: float = DESIGN_LIFETIME_YEARS,
    electricity_usd_per_kwh: float = DESIGN_ELECTRICITY_USD_PER_KWH,
    mesh_batch: int | None = None,
    batch_per_ep_rank: bool = False,
) -> SpaceTable:
    """Every buildable design of ``designs`` at every mesh of up to ``max_devices``
    devices serving ``scenario`` (its own mesh is ignored): a `SpaceTable`.

    ``mesh_batch`` (default the scenario's batch) picks the meshes (EP is capped by it),
    so two tables of one space at different batches have the same rows in the same order.
    ``batch_per_ep_rank`` runs ``scenario.batch`` sequences per EP rank (``batch x ep``
    per replica: EP splits the batch, so a prefill of one prompt per rank keeps every
    expert-parallel device busy with whole sequences).
    """
    if isinstance(max_devices, bool) or not isinstance(max_devices, int) or max_devices < 1:
        raise InputError(f"max_devices must be an integer >= 1, got {max_devices!r}")
    kept, costs = buildable(designs)
    platforms = [design_platform(d, c) for d, c in zip(kept, costs, strict=True)]
    precision = scenario.precision
    columns: dict[str, list[NDArray]] = {}
    for index, (platform, cost) in enumerate(zip(platforms, costs, strict=True)):
        meshes = mesh_candidates(model, platform, mesh_batch or scenario.batch, max_devices)
        tp = np.array([m.tp for m in meshes], float)
        pp = np.array([m.pp for m in meshes], float)
        ep = np.array([m.ep for m in meshes], float)
        grid = evaluate_grid(
            model,
            platform,
            batch=scenario.batch * ep if batch_per_ep_rank else scenario.batch,
            input_tokens=scenario.input_tokens,
            output_tokens=scenario.output_tokens,
            weight_bits=precision.weight_bits,
            activation_bits=precision.activation_bits,
            kv_bits=precision.kv_bits,
            tp=tp,
            pp=pp,
            ep=ep,
            prefill_chunk=scenario.prefill_chunk,
        )
        hourly = design_hourly_usd(
            cost.device_cost_usd, cost.tdp_w, lifetime_years, electricity_usd_per_kwh
        )
        rows = {
            "design": np.full(len(meshes), index),
            "tp": tp.astype(np.int64),
            "pp": pp.astype(np.int64),
            "ep": ep.astype(np.int64),
            "devices": (tp * pp * ep).astype(np.int64),
            "ttft_s": grid.ttft_s,
            "tpot_s": grid.tpot_s,
            "throughput_tokens_per_s": grid.throughput_tokens_per_s,
            "footprint_bytes": grid.footprint_bytes,
            "capacity_bytes": np.full(len(meshes), platform.main_memory.capacity_bytes),
            "kv_cache_bytes": grid.kv_cache_bytes,
            "fits": grid.fits,
            "prefill_bound": grid.bound_names("prefill"),
            "decode_bound": grid.bound_names("decode"),
            "device_cost_usd": np.full(len(meshes), cost.device_cost_usd),
            "hourly_usd": np.full(len(meshes), hourly),
        }
        for key, value in rows.items():
            columns.setdefault(key, []).append(np.atleast_1d(value))
    return SpaceTable(
        designs=tuple(kept),
        costs=tuple(costs),
        platforms=tuple(platforms),
        **{key: np.concatenate(parts) for key, parts in columns.items()},  # type: ignore[arg-type]
    )
