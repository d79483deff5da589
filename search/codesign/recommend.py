"""Recommended designs as files: one folder per design under the folder the user named.

Each folder holds ``config.json`` (Hugging Face fields: ``architectures``,
``hidden_size``, ``num_hidden_layers``, ``num_attention_heads``,
``num_key_value_heads``, ``head_dim``, ``intermediate_size``, ``vocab_size``... plus
``_name``/``_source``), ``bits.yaml`` (`genz.bits_file` format: the ILP allocation in
``ilp`` mode, else the uniform bits), ``platform.yaml`` (the ``data/hardware``
schema; ``source`` says which preset and scale factors it derives from) and
``design.json`` (the predicted metrics, SI units, and the ``codesign predict`` /
``codesign loss`` calls that reproduce them).

Nothing is written outside the output folder: it must not be a symbolic link, its
parent must exist, folder names are sanitised and checked to resolve inside it, and
files that are symbolic links are refused. An existing non-empty folder is refused
unless ``force`` (then only the files named above are overwritten).
"""

from __future__ import annotations

import io
import json
import re
import shlex
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from genz import ARCHITECTURE_AXES, AXES, MODE_AXES, Precision, precision_to_dict
from roofline import InputError, Platform
from scaling_law import ScalingLaw, scaling_dir

from .evaluate import Plan
from .frame import design_platform, row_fields
from .ilp import allocation_precision
from .intervals import INTERVAL_COLUMNS
from .model import DEFAULT_LAW_FILE, hf_config, resolve_law
from .space import DesignSpace
from .sweep import CodesignResult

FILES = ("config.json", "bits.yaml", "platform.yaml", "design.json")
MAX_NAME = 120
#: Metrics copied into design.json (SI units).
DESIGN_METRICS = (
    "training_time_s",
    "params",
    "active_params",
    "loss",
    "perplexity",
    "ttft_s",
    "tpot_s",
    "e2e_s",
    "throughput_tokens_per_s",
    "footprint_bytes",
    "weights_bytes",
    "kv_cache_bytes",
    "capacity_bytes",
)


def platform_to_dict(platform: Platform, source: str) -> dict[str, Any]:
    """``platform`` in the ``data/hardware`` YAML schema (human units)."""
    document: dict[str, Any] = {
        "name": platform.name,
        "display_name": platform.display_name,
        "kind": platform.kind,
        "source": source,
        "peak_tflops": {dtype: peak / 1e12 for dtype, peak in platform.peak_flops_per_s.items()},
        "memory": [
            {
                "name": level.name,
                "bandwidth_gb_per_s": level.bandwidth_bytes_per_s / 1e9,
                "capacity_gb": level.capacity_bytes / 1e9,
            }
            for level in platform.memory
        ],
    }
    link = platform.interconnect
    if link is not None:
        document["interconnect"] = {
            "link_bandwidth_gb_per_s": link.link_bandwidth_bytes_per_s / 1e9,
            "link_latency_us": link.link_latency_s * 1e6,
            "devices_per_node": link.devices_per_node,
        }
        if link.scaleout_bandwidth_bytes_per_s is not None:
            document["interconnect"]["scaleout_bandwidth_gb_per_s"] = (
                link.scaleout_bandwidth_bytes_per_s / 1e9
            )
        if link.scaleout_latency_s is not None:
            document["interconnect"]["scaleout_latency_us"] = link.scaleout_latency_s * 1e6
        if link.collective_latency_s:
            document["interconnect"]["collective_latency_us"] = link.collective_latency_s * 1e6
    efficiency = platform.efficiency
    document["efficiency"] = {
        "compute": efficiency.compute,
        "memory": efficiency.memory,
        "interconnect": efficiency.interconnect,
    }
    document["kernel_overhead_us"] = platform.kernel_overhead_s * 1e6
    for key in ("power_w", "price_usd", "price_usd_per_hour"):
        if getattr(platform, key) is not None:
            document[key] = getattr(platform, key)
    power = platform.power_model
    if power is not None:
        document["power_model"] = {
            "idle_w": power.idle_w,
            "pj_per_flop": power.j_per_flop * 1e12,
            "pj_per_byte": power.j_per_byte * 1e12,
            "source": power.source or "(none given)",
        }
    return document


def uniform_precision(row: Mapping[str, Any]) -> Precision:
    """The design's uniform bits as a `Precision`."""
    return Precision(
        weight_bits=float(row["weight_bits"]),
        activation_bits=float(row["activation_bits"]),
        kv_bits=float(row["kv_bits"]),
    )


def design_files(
    space: DesignSpace,
    row: Mapping[str, Any],
    precision: Precision | None = None,
) -> dict[str, bytes]:
    """The four files of one design (see module doc), as bytes by file name."""
    name = str(row.get("design", "design"))
    base = space.model.base_name
    config = hf_config(
        space.model,
        row_fields(row),
        name,
        f"codesign search of {space.name} ({space.origin}); shape derived from {base}",
    )
    platform = design_platform(space, row)
    preset = next(p for p in space.hardware.platforms if p.name == str(row["platform"]))
    scales = (
        f"compute x{float(row['compute_scale']):g}, memory bandwidth "
        f"x{float(row['bandwidth_scale']):g}, capacity x{float(row['capacity_scale']):g}, "
        f"link bandwidth x{float(row['link_bandwidth_scale']):g}"
    )
    source = f"derived from preset {preset.name} by codesign search ({scales}); preset source: {preset.source}"
    bits = precision or uniform_precision(row)
    summary = {
        "design": name,
        "space": space.name,
        "platform": platform.name,
        "metrics": {key: float(row[key]) for key in DESIGN_METRICS},
        "law": {
            "file": str(law_file(space)),
            "training_tokens": _tokens(space, row),
            "precision_model": str(row["precision_model"]),
            "extrapolated": bool(row["extrapolated"]),
            "outside_domain": [name for name in str(row["outside_domain"]).split(",") if name],
            "loss_interval": {key: float(row[key]) for key in INTERVAL_COLUMNS if key in row},
        },
        "edge_of_space": [name for name in str(row["edge_axes"]).split(",") if name],
        "precision": "ILP allocation (bits.yaml)" if precision is not None else "uniform",
        "commands": {
            "latency_memory": predict_command(
                row, None if space.hardware.runtime is None else space.hardware.runtime.name
            ),
            "loss": loss_command(space, row),
        },
        "note": "model predictions (genz roofline + fitted loss law), not measurements",
    }
    return {
        "config.json": (json.dumps(config, indent=2) + "\n").encode(),
        "bits.yaml": yaml.safe_dump(precision_to_dict(bits), sort_keys=False).encode(),
        "platform.yaml": yaml.safe_dump(
            platform_to_dict(platform, source), sort_keys=False
        ).encode(),
        "design.json": (json.dumps(summary, indent=2) + "\n").encode(),
    }


def predict_command(row: Mapping[str, Any], runtime: str | None = None) -> str:
    """The ``codesign predict`` call (run inside the design folder) of the design's metrics
    (``--runtime`` when the space names a serving-stack profile)."""
    parts = ["codesign", "predict", "--model", "config.json", "--hw", "platform.yaml"]
    parts += ["--bits-file", "bits.yaml", "--batch", str(int(row["batch"]))]
    parts += ["--input", str(int(row["input_tokens"])), "--output", str(int(row["output_tokens"]))]
    for axis in ("tp", "pp", "ep", "dp"):
        parts += [f"--{axis}", str(int(row[axis]))]
    for name in MODE_AXES:  # decoding modes, images, offload: only where not the default
        if name in row and float(row[name]) != AXES[name].default:
            parts += [AXES[name].flag, f"{float(row[name]):g}"]
    for name, spec in ARCHITECTURE_AXES.items():  # window / mix: where the space varies them
        if name in row:
            parts += [spec.flag, str(int(row[name]))]
    if runtime is not None:
        parts += ["--runtime", runtime]
    return " ".join(shlex.quote(part) for part in parts)


def loss_command(space: DesignSpace, row: Mapping[str, Any]) -> str:
    """The ``codesign loss`` call of the design's predicted loss (uniform bits)."""
    parts = [
        "codesign",
        "loss",
        "--law",
        str(law_file(space)),
        "--tokens",
        f"{_tokens(space, row):.6g}",
    ]
    for flag, key in (
        ("--layers", "layers"),
        ("--hidden", "hidden"),
        ("--ffn", "intermediate_size"),
        ("--heads", "heads"),
        ("--kv-heads", "kv_heads"),
        ("--head-dim", "head_dim"),
        ("--vocab", "vocab"),
        ("--experts", "experts"),
        ("--top-k", "top_k"),
    ):
        parts += [flag, str(int(row[key]))]
    if space.model.gated_ffn:
        parts.append("--gated")
    if space.model.tie_embeddings:
        parts.append("--tie-embeddings")
    parts += ["--weight-bits", f"{float(row['weight_bits']):g}"]
    if space.law.precision_model != "ptq":
        parts += ["--precision-model", space.law.precision_model]
    return " ".join(shlex.quote(part) for part in parts)


def law_file(space: DesignSpace) -> Path:
    """The law file the space uses (absolute): its ``law.path`` or the shipped fit."""
    return (space.law.path or scaling_dir() / DEFAULT_LAW_FILE).resolve()


def _tokens(space: DesignSpace, row: Mapping[str, Any]) -> float:
    if space.law.training_tokens is not None:
        return float(space.law.training_tokens)
    return float(space.law.tokens_per_parameter or 20.0) * float(row["params"])


def zip_design(files: Mapping[str, bytes], folder: str) -> bytes:
    """The design's files as a zip archive in memory (one folder inside)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, content in files.items():
            archive.writestr(f"{folder}/{name}", content)
    return buffer.getvalue()


def folder_name(rank: int, label: str) -> str:
    """``'01-L16-H1024-...'``: only letters, digits, ``.``, ``_`` and ``-``."""
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", label).lstrip(".")[:MAX_NAME] or "design"
    return f"{int(rank):02d}-{safe}"


def prepare_output(out_dir: str | Path, force: bool) -> Path:
    """The resolved output folder, created if missing; refuses a symbolic link, a file,
    a missing parent, or a non-empty folder without ``force``."""
    target = Path(out_dir)
    if target.is_symlink():
        raise InputError(f"out-dir {out_dir}: is a symbolic link; name a real folder")
    target = target.resolve()
    if target.exists() and not target.is_dir():
        raise InputError(f"out-dir {out_dir}: exists and is not a folder")
    if not target.parent.is_dir():
        raise InputError(f"out-dir {out_dir}: parent folder {target.parent} does not exist")
    if target.is_dir() and any(target.iterdir()) and not force:
        raise InputError(f"out-dir {out_dir}: is not empty; pass --force to overwrite")
    target.mkdir(exist_ok=True)
    return target


def write_recommendations(
    result: CodesignResult,
    out_dir: str | Path,
    top: int = 5,
    force: bool = False,
    law: ScalingLaw | None = None,
) -> list[Path]:
    """Write the ``top`` best-ranked frontier designs, one folder each; returns the folders."""
    if isinstance(top, bool) or not isinstance(top, int) or top < 1:
        raise InputError(f"top must be an integer >= 1, got {top!r}")
    if not result.success:
        raise InputError(result.message)
    space = result.space
    root = prepare_output(out_dir, force)
    law = law or resolve_law(space.law)
    plan = Plan(space, law, result.objectives, result.constraints)
    chosen: pd.DataFrame = result.frontier.nsmallest(top, "rank")
    written = []
    for row in chosen.to_dict("records"):
        precision = allocation_precision(plan, row) if space.precision.ilp_formats else None
        folder = root / folder_name(row["rank"], str(row["design"]))
        if folder.resolve().parent != root:
            raise InputError(f"design folder {folder.name!r} would leave {root}")
        if folder.is_symlink():
            raise InputError(f"{folder}: is a symbolic link; refusing to write through it")
        folder.mkdir(exist_ok=True)
        for name, content in design_files(space, row, precision).items():
            path = folder / name
            if path.is_symlink():
                raise InputError(f"{path}: is a symbolic link; refusing to write through it")
            path.write_bytes(content)
        written.append(folder)
    return written
