"""Serving-strategy estimates built on the pass model: speculative decoding and
disaggregated prefill/decode.

Speculative decoding (Leviathan et al., 2023, "Fast Inference from Transformers via
Speculative Decoding"): a draft model proposes ``k`` tokens, the target verifies them
in one pass of ``k + 1`` query tokens. With i.i.d. per-token acceptance ``a`` the
expected tokens per iteration are ``(1 - a^(k+1)) / (1 - a)``; the iteration takes
``k * t_draft + t_verify``. Speed-up = expected tokens x t_target_step / iteration time.

Disaggregated serving (DistServe, Splitwise): prefill on one platform, decode on
another; the prompt's KV cache (all layers, ``input * layers * kv_elements * bits/8``
bytes per request) crosses a link of ``link_bandwidth_bytes_per_s`` before decoding.

Both estimates carry the capacity verdict `predict` gives (times past the capacity
wall are what the roofline says if the model did fit): speculation holds the target
and the draft (weights, KV cache and activations of each) on every device; each
disaggregated platform holds the model with its KV cache at the final context.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from roofline import InputError, Platform, require_positive

from .advice import capacity_suggestions, footprint_bytes
from .costing import cost_pass
from .graph import pass_ops
from .inputs import pass_shape, scenario_inputs
from .memory import kv_cache_bytes_per_device
from .model import ModelConfig
from .params import parameter_count
from .predictor import predict
from .result import Prediction, end_to_end_s
from .scenario import Scenario
from .scenario_checks import check_parallelism


def pass_time(
    model: ModelConfig, platform: Platform, scenario: Scenario, query_tokens: int, context: float
) -> float:
    """Time of one forward pass of ``query_tokens`` new tokens per sequence that
    attend to ``context`` tokens (decode-style: logits for every new token), seconds."""
    check_parallelism(model, scenario.parallelism)
    inputs = scenario_inputs(scenario)
    shape = pass_shape(
        inputs,
        query_tokens=np.asarray([float(query_tokens)]),
        context=np.asarray([float(context)]),
        prefill=False,
    )
    return float(cost_pass(pass_ops(model, shape), platform).total_s()[0])


@dataclass(frozen=True)
class SpeculativeEstimate:
    """Expected effect of speculative decoding on time per output token (seconds).

    ``target_footprint_bytes`` and ``draft_footprint_bytes`` are per device; ``fits``
    is False when together they exceed ``capacity_bytes``, and ``suggestions`` then
    lists ways under the wall (as `Prediction.suggestions`).
    """

    draft_tokens: int
    acceptance_rate: float
    expected_tokens_per_iteration: float
    target_step_s: float
    draft_step_s: float
    verify_s: float
    tpot_s: float
    speedup: float
    target_footprint_bytes: float
    draft_footprint_bytes: float
    capacity_bytes: float
    fits: bool
    suggestions: tuple[str, ...]


def speculative_decoding(
    target: ModelConfig,
    draft: ModelConfig,
    platform: Platform,
    scenario: Scenario,
    draft_tokens: int,
    acceptance_rate: float,
    *,
    draft_shares_embeddings: bool = False,
) -> SpeculativeEstimate:
    """Estimate TPOT with a draft model on the same platform, at the mean decode context.

    ``draft_shares_embeddings``: the draft reads the target's embedding and LM head (MTP
    heads, `genz.mtp_draft`), so its footprint excludes their weights."""
    if (
        isinstance(draft_tokens, bool)
        or not isinstance(draft_tokens, int)
        or not 1 <= draft_tokens <= 64
    ):
        raise InputError(f"draft_tokens must be an integer in [1, 64], got {draft_tokens!r}")
    if not 0 <= acceptance_rate < 1:
        raise InputError(f"acceptance_rate must be in [0, 1), got {acceptance_rate!r}")
    context = scenario.input_tokens + scenario.output_tokens / 2
    target_step = pass_time(target, platform, scenario, 1, context)
    draft_step = pass_time(draft, platform, scenario, 1, context)
    verify = pass_time(target, platform, scenario, draft_tokens + 1, context)
    a, k = acceptance_rate, draft_tokens
    expected = (1 - a ** (k + 1)) / (1 - a)
    iteration = k * draft_step + verify
    tpot = iteration / expected
    target_bytes, draft_bytes = footprint_bytes(target, scenario), footprint_bytes(draft, scenario)
    if draft_shares_embeddings:
        groups, precision = parameter_count(draft).by_group, scenario.precision
        shared = sum(
            groups[name] * precision.bits_for(name) / 8 for name in ("embedding", "lm_head")
        )
        mesh = scenario.parallelism
        draft_bytes -= shared / mesh.tp / mesh.pp  # as genz.memory.weight_bytes_per_device
    capacity = platform.main_memory.capacity_bytes
    fits = target_bytes + draft_bytes <= capacity
    if fits:
        suggestions: tuple[str, ...] = ()
    elif draft_bytes >= capacity:
        target_alone = "; or ".join(capacity_suggestions(target, platform, scenario))
        suggestions = (
            f"pick a smaller draft (it alone exceeds the memory), and for the target: "
            f"{target_alone}",
        )
    else:
        suggestions = capacity_suggestions(target, platform, scenario, reserved_bytes=draft_bytes)
    return SpeculativeEstimate(
        draft_tokens=k,
        acceptance_rate=a,
        expected_tokens_per_iteration=expected,
        target_step_s=target_step,
        draft_step_s=draft_step,
        verify_s=verify,
        tpot_s=tpot,
        speedup=target_step / tpot,
        target_footprint_bytes=target_bytes,
        draft_footprint_bytes=draft_bytes,
        capacity_bytes=capacity,
        fits=fits,
        suggestions=suggestions,
    )


@dataclass(frozen=True)
class DisaggregatedEstimate:
    """Prefill on one platform, decode on another, KV cache moved between them.

    ``prefill`` and ``decode`` are the `Prediction` of the whole request on each
    platform: their ``fits`` and ``suggestions`` are each side's capacity verdict.
    """

    prefill_platform: str
    decode_platform: str
    ttft_s: float
    kv_transfer_bytes: float
    kv_transfer_s: float
    tpot_s: float
    e2e_s: float
    colocated_prefill_platform_e2e_s: float
    colocated_decode_platform_e2e_s: float
    prefill: Prediction
    decode: Prediction

    @property
    def fits(self) -> bool:
        """Both platforms hold the model (weights, KV cache, activations)."""
        return self.prefill.fits and self.decode.fits

    def to_dict(self) -> dict[str, object]:
        """Times in seconds, bytes, and each side's capacity verdict (JSON-ready)."""
        return {
            "prefill_platform": self.prefill_platform,
            "decode_platform": self.decode_platform,
            "ttft_s": self.ttft_s,
            "kv_transfer_bytes": self.kv_transfer_bytes,
            "kv_transfer_s": self.kv_transfer_s,
            "tpot_s": self.tpot_s,
            "e2e_s": self.e2e_s,
            "colocated_prefill_platform_e2e_s": self.colocated_prefill_platform_e2e_s,
            "colocated_decode_platform_e2e_s": self.colocated_decode_platform_e2e_s,
            "fits": self.fits,
            **{
                f"{side}_{key}": value
                for side, prediction in (("prefill", self.prefill), ("decode", self.decode))
                for key, value in (
                    ("fits", prediction.fits),
                    ("footprint_bytes_per_device", prediction.footprint.total_bytes),
                    ("capacity_bytes_per_device", prediction.capacity.capacity_bytes),
                    ("suggestions", list(prediction.suggestions)),
                )
            },
        }


def disaggregated_serving(
    model: ModelConfig,
    prefill_platform: Platform,
    decode_platform: Platform,
    scenario: Scenario,
    link_bandwidth_bytes_per_s: float | None = None,
    link_latency_s: float = 10e-6,
) -> DisaggregatedEstimate:
    """Estimate end-to-end latency when prefill and decode run on different platforms.

    The link defaults to the prefill platform's scale-out network (else its
    device link). The first token comes from the prefill platform; decoding
    starts once the KV cache has arrived: ``e2e = ttft + transfer + (out - 1) tpot``.
    """
    if link_bandwidth_bytes_per_s is None:
        link = prefill_platform.interconnect
        if link is None:
            raise InputError(
                f"{prefill_platform.name} has no interconnect; pass link_bandwidth_bytes_per_s"
            )
        link_bandwidth_bytes_per_s = (
            link.scaleout_bandwidth_bytes_per_s or link.link_bandwidth_bytes_per_s
        )
    require_positive("link_bandwidth_bytes_per_s", link_bandwidth_bytes_per_s)
    on_prefill = predict(model, prefill_platform, scenario)
    on_decode = predict(model, decode_platform, scenario)
    # The prompt's KV (windowed layers: the last window; SSM layers: their state).
    one = np.ones(1)
    kv_bytes = float(
        kv_cache_bytes_per_device(
            model,
            one * scenario.batch,
            one * scenario.input_tokens,
            one * scenario.precision.kv_bits,
            one,
            one,
            one,
        )[0]
    )
    transfer = kv_bytes / link_bandwidth_bytes_per_s + link_latency_s
    e2e = end_to_end_s(on_prefill.ttft_s, on_decode.tpot_s, scenario.output_tokens, transfer)
    return DisaggregatedEstimate(
        prefill_platform=prefill_platform.name,
        decode_platform=decode_platform.name,
        ttft_s=on_prefill.ttft_s,
        kv_transfer_bytes=kv_bytes,
        kv_transfer_s=transfer,
        tpot_s=on_decode.tpot_s,
        e2e_s=e2e,
        colocated_prefill_platform_e2e_s=on_prefill.e2e_s,
        colocated_decode_platform_e2e_s=on_decode.e2e_s,
        prefill=on_prefill,
        decode=on_decode,
    )
