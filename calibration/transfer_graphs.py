"""Which measured rows replay their decode steps as CUDA graphs: a stack attribute read
from the row's runtime, date, device class and batch, never fitted.

A CUDA (or HIP) graph captures a decode step's kernels once and replays the whole step
with one launch, so the per-kernel launch cost (`calibration.transfer`'s ``kappa``)
almost vanishes from the decode pass; prefill passes run eagerly in every engine below.
`GRAPH_RULES` lists, per engine, since when and where it does so by default, each with
the release or pull request that introduced it:

- vLLM: decode CUDA graphs unless ``--enforce-eager``, from vllm-project/vllm#1926
  (merged 2023-12, first in the December 2023 release); on ROCm builds through the same
  PyTorch graph API (vllm-project/vllm#15413 keeps ROCm in graph mode but for one model).
  Intel GPUs (the XPU backend) run eagerly.
- llama.cpp's CUDA backend: ggml-org/llama.cpp#6766 (merged 2024-05), graphs for
  batch-1 token generation only (larger batches rebuild the graph and ran eagerly until
  ggml-org/llama.cpp#19645, 2026-02, which allows batches up to 4); HIP graphs stayed
  off by default (ggml-org/llama.cpp#11362, 2025-01); Metal, SYCL and CPU builds have
  none. A source dated in the merge month is counted eager (its build may predate it).
- gpt-fast (pytorch-labs/gpt-fast ``generate.py``): ``decode_one_token`` is compiled with
  ``torch.compile(mode="reduce-overhead")``, i.e. CUDA graphs, in every benchmark of
  its README (``--compile``); prefill is compiled without graphs.

Not listed, so eager: TensorRT-LLM's engine runtime (CUDA graphs are opt-in,
``--enable_cuda_graph`` of its session benchmark, and unsupported with in-flight batching,
NVIDIA/TensorRT-LLM#402, 2023-11; on by default only in its PyTorch backend from
NVIDIA/TensorRT-LLM#5480, 2025-07, later than every TensorRT-LLM row stored), DeepSpeed,
AutoAWQ, exllama, TurboMind, MLC and the rest: their fused kernels launch fewer kernels,
which their stack's own ``kappa`` absorbs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from genz.fitting import Array

from .store import StoredRow


@dataclass(frozen=True)
class GraphRule:
    """Rows that replay decode as graphs: runtime ``runtime`` (and, for ``other``, an
    ``engine`` named in the row's source text), on ``device_classes``, dated ``since``
    (``YYYY-MM``) or later, or undated (a source that states no date is read against
    the releases current when it was stored, long after every ``since``), at batch at most
    ``max_batch`` (None: any); ``citation`` says where the default comes from."""

    runtime: str
    device_classes: tuple[str, ...]
    since: str
    citation: str
    max_batch: int | None = None
    engine: str | None = None

    def applies(self, item: StoredRow, device_class: str) -> bool:
        """Whether the rule covers ``item`` on a device of ``device_class``."""
        row = item.row
        if row.runtime != self.runtime or device_class not in self.device_classes:
            return False
        if self.engine is not None and self.engine not in row.source:
            return False
        if self.max_batch is not None and row.batch > self.max_batch:
            return False
        month = item.info.date[:7]
        return not month or month >= self.since


GRAPH_RULES: tuple[GraphRule, ...] = (
    GraphRule("vllm", ("nvidia-gpu", "amd-gpu"), "2024-01", "vllm-project/vllm#1926"),
    GraphRule("llama.cpp", ("nvidia-gpu",), "2024-06", "ggml-org/llama.cpp#6766", max_batch=1),
    GraphRule(
        "other",
        ("nvidia-gpu", "amd-gpu"),
        "",
        "pytorch-labs/gpt-fast generate.py",
        engine="gpt-fast",
    ),
)


def stack_graphs(runtime: str, year: str, device_class: str) -> bool:
    """Whether a stack (``runtime``, version family ``year``: ``YYYY`` or ``undated``)
    replays decode as graphs on ``device_class`` at batch 1 by `GRAPH_RULES`, read as for
    a build of the end of that year (undated: current); rules that need the engine's name
    from a row's source (``engine``) do not apply."""
    month = f"{year}-12" if year.isdigit() else ""
    return any(
        rule.runtime == runtime
        and rule.engine is None
        and device_class in rule.device_classes
        and (rule.max_batch is None or rule.max_batch >= 1)
        and (not month or month >= rule.since)
        for rule in GRAPH_RULES
    )


def decode_graphs(stored: Sequence[StoredRow], device_classes: Sequence[str]) -> Array:
    """Per row, whether its decode steps replay as graphs (`GRAPH_RULES`)."""
    return np.array(
        [
            any(rule.applies(item, str(kind)) for rule in GRAPH_RULES)
            for item, kind in zip(stored, device_classes, strict=True)
        ],
        bool,
    )
