"""Gated DeltaNet linear-attention layers (Qwen3-Next's ``linear_attention`` layers).

A linear-attention layer keeps no KV cache: each of its ``num_value_heads`` heads
holds a fixed ``key_head_dim x value_head_dim`` state per sequence, updated by the
gated delta rule ``S <- g S + beta k (v - g S^T k)^T`` and read as ``o = S^T q``
(Yang et al. 2024, "Gated Delta Networks"), plus a causal depthwise convolution over
q, k and v of width ``conv_kernel``. Query and key heads (``num_key_heads``) are
shared by groups of value heads, as GQA shares K/V heads.

Read from a Hugging Face ``config.json`` (transformers' ``Qwen3NextConfig``):
``linear_num_key_heads``, ``linear_num_value_heads``, ``linear_key_head_dim``,
``linear_value_head_dim``, ``linear_conv_kernel_dim``. Shapes per layer
(``K = num_key_heads * key_head_dim``, ``V = num_value_heads * value_head_dim``):
``in_proj_qkvz`` h x (2K + 2V), ``in_proj_ba`` h x 2 num_value_heads, a bias-free
convolution over 2K + V channels, ``dt_bias`` and ``A_log`` per value head, a gated
RMSNorm of ``value_head_dim`` weights, ``out_proj`` V x h. FLOP and bytes per token
are derived in docs/model.md ("Linear-attention layers").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from roofline import InputError

#: config.json keys of a linear-attention layer, each with what it means.
LINEAR_KEYS = {
    "linear_num_key_heads": "query/key heads of the linear-attention layers",
    "linear_num_value_heads": "value heads (one recurrent state each)",
    "linear_key_head_dim": "key head dimension d_k",
    "linear_value_head_dim": "value head dimension d_v",
    "linear_conv_kernel_dim": "short convolution width",
}


@dataclass(frozen=True)
class LinearAttentionConfig:
    """One Gated DeltaNet layer's shapes (module doc); counts are integers >= 1."""

    num_key_heads: int
    num_value_heads: int
    key_head_dim: int
    value_head_dim: int
    conv_kernel: int

    def __post_init__(self) -> None:
        for label in (
            "num_key_heads",
            "num_value_heads",
            "key_head_dim",
            "value_head_dim",
            "conv_kernel",
        ):
            value = getattr(self, label)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InputError(f"linear attention {label} must be an integer >= 1, got {value!r}")
        if self.num_value_heads % self.num_key_heads:
            raise InputError(
                f"linear_num_value_heads ({self.num_value_heads}) must be a multiple of "
                f"linear_num_key_heads ({self.num_key_heads})"
            )

    @property
    def key_width(self) -> int:
        """K: query (and key) width, ``num_key_heads * key_head_dim``."""
        return self.num_key_heads * self.key_head_dim

    @property
    def value_width(self) -> int:
        """V: value (and output gate z) width, ``num_value_heads * value_head_dim``."""
        return self.num_value_heads * self.value_head_dim

    @property
    def conv_channels(self) -> int:
        """Channels of the causal convolution: q, k and v (2K + V)."""
        return 2 * self.key_width + self.value_width

    @property
    def in_proj_width(self) -> int:
        """Output width of the input projections: q, k, v, z (in_proj_qkvz) and the
        per-head beta and decay inputs b, a (in_proj_ba)."""
        return 2 * self.key_width + 2 * self.value_width + 2 * self.num_value_heads

    @property
    def state_elements(self) -> int:
        """Recurrent state per sequence: ``num_value_heads * d_k * d_v`` plus the
        convolution window ``(conv_kernel - 1) * conv_channels``."""
        recurrent = self.num_value_heads * self.key_head_dim * self.value_head_dim
        return recurrent + (self.conv_kernel - 1) * self.conv_channels

    def params(self, hidden_size: int) -> dict[str, float]:
        """Parameters of one layer's mixer: ``in`` (in_proj_qkvz, in_proj_ba), ``out``
        (out_proj) and ``small`` (convolution, dt_bias, A_log, gated-norm weight)."""
        small = self.conv_channels * self.conv_kernel + 2 * self.num_value_heads
        small += self.value_head_dim
        return {
            "in": float(hidden_size * self.in_proj_width),
            "out": float(self.value_width * hidden_size),
            "small": float(small),
        }


def linear_attention_from_config(config: dict[str, Any], origin: str) -> LinearAttentionConfig:
    """The linear-attention layer of a config; a missing or invalid key is named."""
    missing = [key for key in LINEAR_KEYS if config.get(key) is None]
    if missing:
        raise InputError(
            f"{origin}: linear-attention layers need {', '.join(repr(k) for k in missing)} "
            f"({'; '.join(LINEAR_KEYS[k] for k in missing)})"
        )
    values = {}
    for key in LINEAR_KEYS:
        value = config[key]
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise InputError(
                f"{origin}: {key} ({LINEAR_KEYS[key]}) must be an integer >= 1, got {value!r}"
            )
        values[key] = value
    try:
        return LinearAttentionConfig(
            num_key_heads=values["linear_num_key_heads"],
            num_value_heads=values["linear_num_value_heads"],
            key_head_dim=values["linear_key_head_dim"],
            value_head_dim=values["linear_value_head_dim"],
            conv_kernel=values["linear_conv_kernel_dim"],
        )
    except InputError as error:
        raise InputError(f"{origin}: {error}") from None
