"""Operators of a VLM's vision tower and projector (`genz.vision`), appended to the
prefill pass of a request that carries images."""

from __future__ import annotations

from typing import Any

from roofline import OperatorKind

from .op_terms import OpTerms, PassShape, elementwise_terms, gemm_terms
from .vision import VisionConfig


def vision_ops(vision: VisionConfig, shape: PassShape, runs: Any) -> list[OpTerms]:
    """Operators of the tower and projector for ``shape.batch`` images (per device; tp
    splits heads and MLP columns), each run ``runs`` times per pass (``1 / chunks`` when
    the prefill pass they join is repeated per chunk)."""
    h, s = float(vision.hidden_size), float(vision.patches + 1)
    t = shape.tp
    images = shape.batch / shape.ep
    tokens = images * s
    heads = vision.num_heads / t
    d = h / vision.num_heads
    layers = vision.num_layers * runs
    pairs = s * s  # bidirectional
    a_bytes = shape.activation_bits / 8
    ops = [
        elementwise_terms("vit_norms", OperatorKind.NORM, 2 * layers, tokens * h, 4.0, shape),
        gemm_terms("vit_qkv", "embedding", layers, tokens, h, 3 * h / t, shape),
        OpTerms(
            "vit_attention",
            OperatorKind.ATTENTION,
            "attention",
            layers,
            4.0 * images * heads * d * pairs + 5.0 * images * heads * pairs,
            4.0 * tokens * heads * d * a_bytes,
            shape.activation_bits,
        ),
        gemm_terms("vit_out", "embedding", layers, tokens, h / t, h, shape),
        gemm_terms("vit_fc1", "embedding", layers, tokens, h, vision.intermediate_size / t, shape),
        elementwise_terms(
            "vit_gelu",
            OperatorKind.ELEMENTWISE,
            layers,
            tokens * vision.intermediate_size / t,
            8.0,
            shape,
        ),
        gemm_terms("vit_fc2", "embedding", layers, tokens, vision.intermediate_size / t, h, shape),
    ]
    patch_tokens = images * vision.patches
    width = float(vision.text_hidden_size)
    ops.append(gemm_terms("projector_in", "embedding", runs, patch_tokens, h, width, shape))
    for _ in range(vision.projector_layers - 1):
        ops.append(gemm_terms("projector", "embedding", runs, patch_tokens, width, width, shape))
    return ops
