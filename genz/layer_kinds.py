"""Per-layer token mixers: full attention, sliding-window attention, Mamba / Mamba-2,
Gated DeltaNet linear attention (`genz.linear_attention`).

Read from a Hugging Face ``config.json``: Mistral's ``sliding_window`` (every layer
windowed), Gemma-2's alternation (even layers local), Gemma-3's
``sliding_window_pattern`` (every n-th layer global), an explicit ``layer_types`` list
(gpt-oss, newer Gemma configs, Granite-4.0-H), Jamba's ``attn_layer_period`` /
``attn_layer_offset``, Bamba's ``attn_layer_indices``, Falcon-H1 (``model_type`` ``falcon_h1``: attention and Mamba-2 in
parallel in every layer, ``mamba_d_ssm`` its d_inner), Nemotron-H's ``hybrid_override_pattern`` (Mamba-2, attention and
MLP-only layers, each with one sublayer) and pure Mamba / Mamba-2 models
(``model_type`` ``mamba``, ``falcon_mamba``, ``mamba2``), Qwen3-Next's
``full_attention_interval`` (every n-th layer full attention, linear attention elsewhere); Zamba2's
shared-block layers are read by `genz.shared_block`. `SSMConfig` holds one
state-space layer's shapes; its parameter and state counts are documented in
docs/model.md ("State-space layers").
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from roofline import InputError

FULL = "full_attention"
WINDOW = "sliding_attention"
SSM = "mamba"
LINEAR = "linear_attention"
MLP = "mlp"  # a layer with an FFN and no token mixer (Nemotron-H's "-")
PARALLEL = "hybrid"  # attention and Mamba-2 side by side in one layer (Falcon-H1)
#: A Mamba-2 layer preceded by an invocation of a shared transformer block (Zamba2's
#: ``hybrid`` layers, `genz.shared_block`); read from a ``zamba2`` config only.
SHARED = "shared_attention"
LAYER_KINDS = (FULL, WINDOW, SSM, LINEAR, MLP, PARALLEL, SHARED)
#: ``layer_types`` spellings accepted, and the kind each means.
LAYER_TYPE_NAMES = {
    "full_attention": FULL,
    "attention": FULL,
    "global_attention": FULL,
    "sliding_attention": WINDOW,
    "local_attention": WINDOW,
    "mamba": SSM,
    "mamba2": SSM,
    "linear_attention": LINEAR,
    "mlp": MLP,
    "hybrid": PARALLEL,
}
#: Nemotron-H's ``hybrid_override_pattern`` characters: Mamba-2, attention, MLP-only.
NEMOTRON_PATTERN = {"M": SSM, "*": FULL, "-": MLP}
#: Model types whose every layer is a state-space layer (no attention, no MLP).
PURE_SSM_TYPES = {"mamba": 1, "falcon_mamba": 1, "mamba2": 2}


@dataclass(frozen=True)
class SSMConfig:
    """One Mamba (``version`` 1) or Mamba-2 (``version`` 2) layer's shapes.

    ``inner_size`` is d_inner (``expand * hidden``), ``state_size`` N, ``conv_kernel``
    the causal convolution's width; Mamba-1 has ``dt_rank``; Mamba-2 has ``num_heads``
    heads of ``inner_size / num_heads`` channels and ``groups`` groups of B and C.
    ``inner_norm_params`` counts extra norm weights inside the mixer (Jamba's dt/B/C
    norms; Mamba-2's gated norm is counted from ``inner_size`` when ``gated_norm``, which
    Falcon-H1's ``mamba_rms_norm: false`` switches off).
    """

    version: int
    inner_size: int
    state_size: int
    conv_kernel: int
    dt_rank: int = 0
    num_heads: int = 0
    groups: int = 1
    conv_bias: bool = True
    inner_norm_params: int = 0
    gated_norm: bool = True

    def __post_init__(self) -> None:
        if self.version not in (1, 2):
            raise InputError(f"SSM version must be 1 (Mamba) or 2 (Mamba-2), got {self.version}")
        for label in ("inner_size", "state_size", "conv_kernel"):
            value = getattr(self, label)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InputError(f"SSM {label} must be an integer >= 1, got {value!r}")
        if self.version == 1 and self.dt_rank < 1:
            raise InputError(f"Mamba dt_rank (time_step_rank) must be >= 1, got {self.dt_rank}")
        if self.version == 2 and (self.num_heads < 1 or self.inner_size % self.num_heads):
            raise InputError(
                f"Mamba-2 num_heads must be >= 1 and divide d_inner {self.inner_size}, "
                f"got {self.num_heads}"
            )
        if self.groups < 1:
            raise InputError(f"Mamba-2 n_groups must be >= 1, got {self.groups}")

    @property
    def conv_channels(self) -> int:
        """Channels of the causal convolution: x (Mamba), x, B and C (Mamba-2)."""
        if self.version == 1:
            return self.inner_size
        return self.inner_size + 2 * self.groups * self.state_size

    @property
    def in_proj_width(self) -> int:
        """Output width of the input projection: x and z (Mamba); x, z, B, C, dt (Mamba-2)."""
        if self.version == 1:
            return 2 * self.inner_size
        return 2 * self.inner_size + 2 * self.groups * self.state_size + self.num_heads

    @property
    def state_elements(self) -> int:
        """Recurrent state per sequence: ``d_inner * N`` plus the convolution window
        ``(conv_kernel - 1) * conv_channels``."""
        return self.inner_size * self.state_size + (self.conv_kernel - 1) * self.conv_channels

    def params(self, hidden_size: int) -> dict[str, float]:
        """Parameters of one layer's mixer: ``in`` (input projections: in_proj and, for
        Mamba, x_proj and dt_proj), ``out`` (out_proj) and ``small`` (convolution, A, D,
        dt bias, inner norms)."""
        d, n = self.inner_size, self.state_size
        conv = self.conv_channels * self.conv_kernel + (self.conv_channels if self.conv_bias else 0)
        if self.version == 1:
            projections = hidden_size * 2 * d + d * (self.dt_rank + 2 * n) + self.dt_rank * d
            small = conv + d + d * n + d + self.inner_norm_params  # dt bias, A_log, D
        else:
            projections = hidden_size * self.in_proj_width
            norm = d if self.gated_norm else 0
            small = conv + 3 * self.num_heads + norm + self.inner_norm_params  # dt, A, D; norm
        return {"in": float(projections), "out": float(d * hidden_size), "small": float(small)}


def _int(config: dict[str, Any], key: str, origin: str, what: str) -> int:
    value = config.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InputError(f"{origin}: missing or invalid {key!r} ({what}), got {value!r}")
    return value


def _dt_rank(value: Any, hidden: int, origin: str, key: str) -> int:
    if value in (None, "auto"):
        return math.ceil(hidden / 16)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InputError(f"{origin}: {key} must be 'auto' or an integer >= 1, got {value!r}")
    return value


def ssm_from_config(config: dict[str, Any], origin: str) -> SSMConfig | None:
    """The state-space layer of a config (None when it has none)."""
    model_type = str(config.get("model_type", ""))
    hidden = config["hidden_size"]
    if model_type in PURE_SSM_TYPES:
        expand = config.get("expand", 2)
        inner = expand * hidden
        if PURE_SSM_TYPES[model_type] == 1:
            return SSMConfig(
                version=1,
                inner_size=config.get("intermediate_size") or inner,
                state_size=_int(config, "state_size", origin, "SSM state size N"),
                conv_kernel=_int(config, "conv_kernel", origin, "convolution width"),
                dt_rank=_dt_rank(config.get("time_step_rank"), hidden, origin, "time_step_rank"),
                conv_bias=bool(config.get("use_conv_bias", True)),
            )
        return SSMConfig(
            version=2,
            inner_size=inner,
            state_size=_int(config, "state_size", origin, "SSM state size N"),
            conv_kernel=_int(config, "conv_kernel", origin, "convolution width"),
            num_heads=_int(config, "num_heads", origin, "Mamba-2 heads"),
            groups=config.get("n_groups") or 1,
            conv_bias=bool(config.get("use_conv_bias", True)),
        )
    if model_type == "nemotron_h":  # Mamba-2 mixers of mamba_num_heads x mamba_head_dim
        heads = _int(config, "mamba_num_heads", origin, "Mamba-2 heads")
        return SSMConfig(
            version=2,
            inner_size=heads * _int(config, "mamba_head_dim", origin, "Mamba-2 head width"),
            state_size=_int(config, "ssm_state_size", origin, "SSM state size N"),
            conv_kernel=_int(config, "conv_kernel", origin, "convolution width"),
            num_heads=heads,
            groups=config.get("n_groups") or 1,
            conv_bias=bool(config.get("use_conv_bias", True)),
        )
    if not any(key.startswith("mamba_") for key in config):
        return None
    expand = config.get("mamba_expand", 2)
    inner = config.get("mamba_d_ssm") or expand * hidden  # Falcon-H1 states d_inner
    state = _int(config, "mamba_d_state", origin, "SSM state size N")
    conv = _int(config, "mamba_d_conv", origin, "convolution width")
    if "mamba_n_heads" in config:  # Mamba-2 mixers (Bamba, Granite-4.0-H, Falcon-H1)
        return SSMConfig(
            version=2,
            inner_size=inner,
            state_size=state,
            conv_kernel=conv,
            num_heads=_int(config, "mamba_n_heads", origin, "Mamba-2 heads"),
            groups=config.get("mamba_n_groups") or 1,
            conv_bias=bool(config.get("mamba_conv_bias", True)),
            gated_norm=bool(config.get("mamba_rms_norm", model_type != "falcon_h1")),
        )
    dt_rank = _dt_rank(config.get("mamba_dt_rank"), hidden, origin, "mamba_dt_rank")
    return SSMConfig(
        version=1,
        inner_size=inner,
        state_size=state,
        conv_kernel=conv,
        dt_rank=dt_rank,
        conv_bias=bool(config.get("mamba_conv_bias", True)),
        # Jamba normalises dt, B and C inside the mixer (RMSNorm weights of each width).
        inner_norm_params=dt_rank + 2 * state if model_type == "jamba" else 0,
    )


def window_from_config(config: dict[str, Any], origin: str) -> int:
    """The sliding window in tokens (0: none); Qwen2's ``use_sliding_window: false``
    switches a stated window off."""
    window = config.get("sliding_window")
    if window is None or config.get("use_sliding_window") is False:
        return 0
    if isinstance(window, bool) or not isinstance(window, int) or window < 1:
        raise InputError(
            f"{origin}: sliding_window must be an integer >= 1 or null, got {window!r}"
        )
    return window


def _nemotron_kinds(pattern: Any, num_layers: int, origin: str) -> tuple[str, ...]:
    """Nemotron-H's one character per layer: ``M`` Mamba-2, ``*`` attention, ``-`` MLP."""
    if not isinstance(pattern, str) or len(pattern) != num_layers:
        raise InputError(
            f"{origin}: hybrid_override_pattern must be a string of num_hidden_layers "
            f"({num_layers}) characters, got {pattern!r:.60}"
        )
    for index, char in enumerate(pattern):
        if char not in NEMOTRON_PATTERN:
            raise InputError(
                f"{origin}: hybrid_override_pattern[{index}] = {char!r} is not modelled; "
                "accepted: M (Mamba-2), * (attention), - (MLP)"
            )
    return tuple(NEMOTRON_PATTERN[char] for char in pattern)


def layer_kinds_from_config(
    config: dict[str, Any], num_layers: int, window: int, ssm: SSMConfig | None, origin: str
) -> tuple[str, ...]:
    """Each layer's mixer kind (`LAYER_KINDS`); () means every layer is full attention."""
    model_type = str(config.get("model_type", ""))
    if model_type in PURE_SSM_TYPES:
        return (SSM,) * num_layers
    types = config.get("layer_types")
    if model_type == "falcon_h1":  # every layer runs attention and Mamba-2 in parallel
        kinds_t = (PARALLEL,) * num_layers
    elif "hybrid_override_pattern" in config:
        kinds_t = _nemotron_kinds(config["hybrid_override_pattern"], num_layers, origin)
    elif types is not None:
        if not isinstance(types, list) or len(types) != num_layers:
            raise InputError(
                f"{origin}: layer_types must be a list of num_hidden_layers ({num_layers}) names"
            )
        kinds = []
        for index, name in enumerate(types):
            if name not in LAYER_TYPE_NAMES:
                raise InputError(
                    f"{origin}: layer_types[{index}] = {name!r} is not modelled; accepted: "
                    f"{', '.join(LAYER_TYPE_NAMES)}"
                )
            kinds.append(LAYER_TYPE_NAMES[name])
        kinds_t = tuple(kinds)
    elif "attn_layer_period" in config or "attn_layer_indices" in config:
        if "attn_layer_indices" in config:
            indices = config["attn_layer_indices"] or []
            if not isinstance(indices, list) or any(
                isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < num_layers
                for i in indices
            ):
                raise InputError(
                    f"{origin}: attn_layer_indices must list layer indices in [0, {num_layers - 1}]"
                )
            kinds_t = tuple(FULL if i in indices else SSM for i in range(num_layers))
        else:
            period = _int(config, "attn_layer_period", origin, "attention every n-th layer")
            offset = config.get("attn_layer_offset", 0)
            kinds_t = tuple(FULL if i % period == offset else SSM for i in range(num_layers))
    elif "full_attention_interval" in config or model_type == "qwen3_next":
        # Qwen3-Next: every n-th layer full attention, linear attention elsewhere
        interval = config.get("full_attention_interval", 4)  # Qwen3NextConfig's default
        if isinstance(interval, bool) or not isinstance(interval, int) or interval < 1:
            raise InputError(
                f"{origin}: full_attention_interval must be an integer >= 1, got {interval!r}"
            )
        kinds_t = tuple(LINEAR if (i + 1) % interval else FULL for i in range(num_layers))
    elif window and "sliding_window_pattern" in config:  # Gemma-3: every n-th layer global
        pattern = _int(config, "sliding_window_pattern", origin, "every n-th layer is global")
        kinds_t = tuple(WINDOW if (i + 1) % pattern else FULL for i in range(num_layers))
    elif window and model_type == "gemma2":  # Gemma-2: even layers local, odd global
        kinds_t = tuple(WINDOW if i % 2 == 0 else FULL for i in range(num_layers))
    elif window:  # Mistral: every layer windowed
        kinds_t = (WINDOW,) * num_layers
    else:
        return ()
    if WINDOW in kinds_t and not window:
        raise InputError(
            f"{origin}: layer_types names sliding_attention but sliding_window is unset"
        )
    if (SSM in kinds_t or PARALLEL in kinds_t) and ssm is None:
        raise InputError(
            f"{origin}: state-space layers need the SSM shapes: missing 'mamba_d_state' and "
            "'mamba_d_conv' (and 'mamba_n_heads' for Mamba-2)"
        )
    return kinds_t
