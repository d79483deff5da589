"""Zamba2's shared transformer blocks (Zyphra; transformers' ``Zamba2Config``,
``model_type`` ``zamba2``).

A Zamba2 model is a stack of Mamba-2 layers. At the ``hybrid`` layers of
``layers_block_type`` (transformers' ``hybrid_layer_ids``) one of ``num_mem_blocks``
*shared* transformer blocks runs first, the blocks taken in turn (ABAB...): it reads the
concatenation ``[hidden, original embedding]`` (2h wide), normalises it (an RMSNorm of
2h weights), runs attention with q, k, v projections 2h -> heads x 2h/heads and an
output projection back to h, then an RMSNorm of h and a gated MLP
(``gate_up_proj`` h -> 2 intermediate, ``down_proj`` intermediate -> h). Its weights are
stored once per block; each invocation adds weights of its own: a linear h -> h whose
output is added to the Mamba-2 layer's input, and, when enabled, rank-``adapter_rank``
adapters on the MLP's ``gate_up_proj`` (h -> r -> 2 intermediate) and on q, k and v
(2h -> r -> 2h each). Each invocation keeps its own KV cache (transformers'
``Zamba2HybridDynamicCache`` holds keys and values per layer index).

Read keys: transformers' names, or the release configs' names of Zyphra's fork
(`FORK_NAMES`, e.g. Zamba2-7B's original ``config.json``). Parameter counts, FLOP and
bytes are derived in docs/model.md ("Shared transformer blocks (Zamba2)").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from roofline import InputError

from .layer_kinds import SHARED, SSM, SSMConfig

#: Zyphra-fork release-config names and the transformers names they mean.
FORK_NAMES = {
    "state_size": "mamba_d_state",
    "conv_dimension": "mamba_d_conv",
    "expansion_factor": "mamba_expand",
    "ffn_hidden_size": "intermediate_size",
    "lora_rank": "adapter_rank",
    "use_shared_block_lora": "use_shared_mlp_adapter",
    "use_shared_attention_lora": "use_shared_attention_adapter",
}
#: config.json keys of a Zamba2 model this module reads (beside the common ones).
ZAMBA2_KEYS = {
    "layers_block_type",
    "hybrid_layer_ids",
    "num_mem_blocks",
    "mamba_d_state",
    "mamba_d_conv",
    "mamba_expand",
    "mamba_ngroups",
    "n_mamba_heads",
    "mamba_headdim",
    "use_shared_mlp_adapter",
    "use_shared_attention_adapter",
    "adapter_rank",
    "add_bias_linear",
    "gated_linear_unit",
    *FORK_NAMES,
}


@dataclass(frozen=True)
class SharedBlockConfig:
    """The shared transformer blocks of a Zamba2 model (module doc).

    ``num_blocks`` blocks of stored weights; ``adapter_rank`` r of the per-invocation
    adapters, on the MLP's gate/up projection when ``mlp_adapters`` and on q, k, v
    when ``attention_adapters``. The invocations are the model's ``shared_attention``
    layers (`genz.layer_kinds.SHARED`).
    """

    num_blocks: int
    adapter_rank: int = 128
    mlp_adapters: bool = True
    attention_adapters: bool = False

    def __post_init__(self) -> None:
        for label in ("num_blocks", "adapter_rank"):
            value = getattr(self, label)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InputError(f"shared block {label} must be an integer >= 1, got {value!r}")

    def invocation_params(self, hidden: int, intermediate: int) -> dict[str, float]:
        """Weights of one invocation by weight group: the linear h x h (``attn_out``),
        the q/k/v adapters ``3 r (2h + 2h)`` (``attn_qkv``) and the MLP adapter
        ``r (h + 2 intermediate)`` (``ffn_up_gate``)."""
        r = self.adapter_rank
        qkv = 3 * r * (2 * hidden + 2 * hidden) if self.attention_adapters else 0
        mlp = r * (hidden + 2 * intermediate) if self.mlp_adapters else 0
        return {
            "attn_out": float(hidden * hidden),
            "attn_qkv": float(qkv),
            "ffn_up_gate": float(mlp),
        }


def _get(config: dict[str, Any], key: str, default: Any = None) -> Any:
    """``config[key]`` under its transformers name or its Zyphra-fork name."""
    if config.get(key) is not None:
        return config[key]
    for fork, name in FORK_NAMES.items():
        if name == key and config.get(fork) is not None:
            return config[fork]
    return default


def _positive(config: dict[str, Any], key: str, origin: str, what: str, default: Any = None) -> int:
    value = _get(config, key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        fork = [name for name, new in FORK_NAMES.items() if new == key]
        also = f" (or {fork[0]!r})" if fork else ""
        raise InputError(
            f"{origin}: zamba2 config needs {key!r}{also} ({what}) as an integer >= 1, "
            f"got {value!r}"
        )
    return value


def _flag(config: dict[str, Any], key: str, origin: str, default: bool) -> bool:
    value = _get(config, key, default)
    if not isinstance(value, bool):
        raise InputError(f"{origin}: {key} must be true or false, got {value!r}")
    return value


def _layer_kinds(config: dict[str, Any], num_layers: int, origin: str) -> tuple[str, ...]:
    """``layers_block_type`` (``mamba`` / ``hybrid`` per layer) as layer kinds, checked
    against ``hybrid_layer_ids`` when both are given."""
    types = config.get("layers_block_type")
    if not isinstance(types, list) or len(types) != num_layers:
        raise InputError(
            f"{origin}: zamba2 config needs 'layers_block_type', a list of num_hidden_layers "
            f"({num_layers}) entries 'mamba' or 'hybrid', got {types!r:.60}"
        )
    for index, name in enumerate(types):
        if name not in ("mamba", "hybrid"):
            raise InputError(
                f"{origin}: layers_block_type[{index}] = {name!r}; accepted: mamba, hybrid"
            )
    hybrid = [i for i, name in enumerate(types) if name == "hybrid"]
    if not hybrid:
        raise InputError(f"{origin}: layers_block_type has no 'hybrid' layer (no shared block)")
    stated = config.get("hybrid_layer_ids")
    if stated is not None and stated != hybrid:
        raise InputError(
            f"{origin}: hybrid_layer_ids {stated!r:.60} disagrees with the 'hybrid' entries "
            f"of layers_block_type {hybrid!r:.60}"
        )
    return tuple(SHARED if name == "hybrid" else SSM for name in types)


def zamba2_fields(config: dict[str, Any], origin: str) -> dict[str, Any]:
    """`genz.model.ModelConfig` fields of a Zamba2 ``config.json`` (module doc); every
    missing or invalid key is refused by name in one line."""
    hidden = _positive(config, "hidden_size", origin, "model width h")
    num_layers = _positive(config, "num_hidden_layers", origin, "layers")
    heads = _positive(config, "num_attention_heads", origin, "shared-attention heads")
    kv_heads = _positive(config, "num_key_value_heads", origin, "KV heads", default=heads)
    intermediate = _positive(config, "intermediate_size", origin, "shared MLP width")
    if (2 * hidden) % heads:
        raise InputError(
            f"{origin}: num_attention_heads ({heads}) must divide the shared attention's "
            f"width 2 x hidden_size ({2 * hidden})"
        )
    if _flag(config, "add_bias_linear", origin, False):
        raise InputError(f"{origin}: add_bias_linear true (biased linears) is not modelled")
    if not _flag(config, "gated_linear_unit", origin, True):
        raise InputError(
            f"{origin}: gated_linear_unit false is not modelled (transformers' Zamba2MLP is gated)"
        )
    attention_adapters = _flag(config, "use_shared_attention_adapter", origin, False)
    if attention_adapters and kv_heads != heads:
        raise InputError(
            f"{origin}: use_shared_attention_adapter needs num_key_value_heads == "
            f"num_attention_heads ({heads}): the k and v adapters are 2h wide, got {kv_heads}"
        )
    inner = _positive(config, "mamba_expand", origin, "Mamba-2 expansion", default=2) * hidden
    if config.get("n_mamba_heads") is not None:
        mamba_heads = _positive(config, "n_mamba_heads", origin, "Mamba-2 heads")
    else:
        head_width = _positive(config, "mamba_headdim", origin, "Mamba-2 head width")
        if inner % head_width:
            raise InputError(
                f"{origin}: mamba_headdim ({head_width}) must divide d_inner "
                f"mamba_expand x hidden_size ({inner})"
            )
        mamba_heads = inner // head_width
    ssm = SSMConfig(
        version=2,
        inner_size=inner,
        state_size=_positive(config, "mamba_d_state", origin, "SSM state size N"),
        conv_kernel=_positive(config, "mamba_d_conv", origin, "convolution width", default=4),
        num_heads=mamba_heads,
        groups=_positive(config, "mamba_ngroups", origin, "Mamba-2 groups", default=1),
        conv_bias=True,  # transformers' Zamba2MambaMixer: Conv1d(bias=True) always
    )
    shared = SharedBlockConfig(
        num_blocks=_positive(config, "num_mem_blocks", origin, "shared transformer blocks"),
        adapter_rank=_positive(config, "adapter_rank", origin, "adapter rank", default=128),
        mlp_adapters=_flag(config, "use_shared_mlp_adapter", origin, True),
        attention_adapters=attention_adapters,
    )
    return {
        "hidden_size": hidden,
        "num_layers": num_layers,
        "num_heads": heads,
        "num_kv_heads": kv_heads,
        "head_dim": 2 * hidden // heads,
        "intermediate_size": intermediate,
        "vocab_size": _positive(config, "vocab_size", origin, "vocabulary"),
        "gated_ffn": True,
        "tie_word_embeddings": bool(config.get("tie_word_embeddings", True)),
        "max_context": config.get("max_position_embeddings") or 0,
        "layer_types": _layer_kinds(config, num_layers, origin),
        "ssm": ssm,
        "shared_block": shared,
        "ffn_on_mixer_layers": False,
        "norms_per_layer": 1,
    }
