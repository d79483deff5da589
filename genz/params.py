"""Parameter counts of a `ModelConfig`, by weight group (the unit the ILP assigns bits to).

Groups: ``attn_qkv`` (Q, K, V projections; MLA down/up projections of Q and the
KV latent), ``attn_kv_up`` (MLA only: latent -> K/V), ``attn_out``, ``ffn_up_gate``,
``ffn_down`` (dense FFN layers), ``experts`` (routed experts), ``shared_experts``,
``router``, ``norms``, ``embedding``, ``lm_head``.

State-space (Mamba) and linear-attention (Gated DeltaNet) layers have no groups of
their own: their input projections
(in_proj; Mamba-1's x_proj and dt_proj; Gated DeltaNet's in_proj_qkvz and in_proj_ba)
count as ``attn_qkv``, out_proj as ``attn_out`` (the mixer's input and output matrices)
and the small vectors (convolution, A, D, dt bias, inner norms) as ``norms``; attention groups count attention layers only.

Zamba2's shared transformer blocks (`genz.shared_block`) count their attention, FFN and
norm weights once per stored block; each invocation adds its linear (``attn_out``) and
adapters (``attn_qkv``, ``ffn_up_gate``).
"""

from __future__ import annotations

from dataclasses import dataclass

from .model import ModelConfig

WEIGHT_GROUPS = (
    "attn_qkv",
    "attn_kv_up",
    "attn_out",
    "ffn_up_gate",
    "ffn_down",
    "experts",
    "shared_experts",
    "router",
    "norms",
    "embedding",
    "lm_head",
)


@dataclass(frozen=True)
class ParameterCount:
    """Total and per-token-active parameters, and the split by weight group."""

    total: float
    active: float
    by_group: dict[str, float]

    @property
    def embedding(self) -> float:
        """Input embedding plus untied LM head parameters."""
        return self.by_group["embedding"] + self.by_group["lm_head"]

    @property
    def non_embedding(self) -> float:
        """Parameters outside the embedding and LM head."""
        return self.total - self.embedding


def attention_params_per_layer(model: ModelConfig) -> dict[str, float]:
    """Parameters of one attention block by group (biases included where present)."""
    h = model.attention_input_size  # 2h into a Zamba2 shared block
    if model.is_mla:
        qk_head = model.qk_nope_head_dim + model.qk_rope_head_dim
        if model.q_lora_rank:
            q = (
                h * model.q_lora_rank
                + model.q_lora_rank
                + model.q_lora_rank * model.num_heads * qk_head
            )
        else:
            q = h * model.num_heads * qk_head
        kv_down = h * (model.kv_lora_rank + model.qk_rope_head_dim) + model.kv_lora_rank
        kv_up = model.kv_lora_rank * model.num_heads * (model.qk_nope_head_dim + model.v_head_dim)
        out = model.num_heads * model.v_head_dim * h
        return {"attn_qkv": q + kv_down, "attn_kv_up": kv_up, "attn_out": out}
    q_width = model.num_heads * model.head_dim
    kv_width = 2 * model.num_kv_heads * model.head_dim
    bias = (q_width + kv_width) if model.qkv_bias else 0
    gate = q_width if model.attention_output_gate else 0  # Qwen3-Next: q_proj also gives a gate
    return {
        "attn_qkv": h * (q_width + gate + kv_width) + bias,
        "attn_kv_up": 0.0,
        "attn_out": q_width * model.hidden_size,
    }


def ffn_matrices(model: ModelConfig) -> int:
    """Matrices per FFN: 3 for gated (gate, up, down), 2 otherwise."""
    return 3 if model.gated_ffn else 2


def parameter_count(model: ModelConfig) -> ParameterCount:
    """Count parameters from the architecture (no weights needed)."""
    h = model.hidden_size
    matrices = ffn_matrices(model)
    attention = attention_params_per_layer(model)
    groups = {
        name: 0.0 for name in ("ffn_up_gate", "ffn_down", "experts", "shared_experts", "router")
    }
    shared = model.shared_block
    # A shared block's weights are stored once per block, however often it runs.
    attention_copies = shared.num_blocks if shared else model.num_attention_layers
    groups.update({name: value * attention_copies for name, value in attention.items()})
    dense_layers = shared.num_blocks if shared else model.num_dense_layers
    groups["ffn_up_gate"] = dense_layers * (matrices - 1) * h * model.intermediate_size
    groups["ffn_down"] = dense_layers * model.intermediate_size * h
    moe_layers = model.num_moe_layers
    expert_params = matrices * h * model.moe_intermediate_size
    groups["experts"] = moe_layers * model.num_experts * expert_params
    groups["shared_experts"] = moe_layers * model.num_shared_experts * expert_params
    groups["router"] = moe_layers * h * model.num_experts
    groups["norms"] = (model.norms_per_layer * model.num_layers + 1) * h
    if shared is not None:  # per block: the 2h input norm and the h pre-FFN norm
        groups["norms"] += shared.num_blocks * 3 * h
        extra = shared.invocation_params(h, model.intermediate_size)
        for name, value in extra.items():
            groups[name] += model.num_shared_layers * value
    if model.ssm is not None:
        mixer = model.ssm.params(h)
        groups["attn_qkv"] += model.num_ssm_layers * mixer["in"]
        groups["attn_out"] += model.num_ssm_layers * mixer["out"]
        groups["norms"] += model.num_ssm_layers * mixer["small"]
    if model.linear_attention is not None:
        mixer = model.linear_attention.params(h)
        groups["attn_qkv"] += model.num_linear_layers * mixer["in"]
        groups["attn_out"] += model.num_linear_layers * mixer["out"]
        groups["norms"] += model.num_linear_layers * mixer["small"]
    groups["embedding"] = model.vocab_size * h
    if model.vision is not None:  # the tower and projector: model-level weights
        groups["embedding"] += model.vision.params()
    groups["lm_head"] = 0.0 if model.tie_word_embeddings else model.vocab_size * h
    total = sum(groups.values())
    inactive = 0.0
    if model.is_moe:
        inactive = moe_layers * (model.num_experts - model.experts_per_token) * expert_params
    ordered = {name: float(groups.get(name, 0.0)) for name in WEIGHT_GROUPS}
    return ParameterCount(total=float(total), active=float(total - inactive), by_group=ordered)


def lora_params(model: ModelConfig) -> dict[str, float]:
    """Parameters of all ``model.lora_adapters`` LoRA adapters by weight group: rank r
    times (input + output width) of every targeted matrix, every layer that has it."""
    r, count = model.lora_rank, model.lora_adapters
    if not r:
        return {}
    h = model.hidden_size
    q_width = model.num_heads * model.head_dim
    qkv_width = q_width + 2 * model.num_kv_heads * model.head_dim
    attention_layers = model.num_attention_layers
    found: dict[str, float] = {}
    if "qkv" in model.lora_targets:
        found["attn_qkv"] = float(count * r * (h + qkv_width) * attention_layers)
    if "o" in model.lora_targets:
        found["attn_out"] = float(count * r * (q_width + h) * attention_layers)
    if "ffn" in model.lora_targets:
        i = model.intermediate_size
        per_layer = (ffn_matrices(model) - 1) * (h + i) + (i + h)
        found["ffn_up_gate"] = float(count * r * per_layer * model.num_dense_layers)
    return found
