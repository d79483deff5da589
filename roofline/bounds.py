"""The one table of bounds on user-facing quantities: CLI flags and file fields.

Every entry states a quantity's type (integer or number), unit, accepted range and so
whether 0 is allowed; an unset value is ``None``, never 0. The CLI checks every parsed
flag against `FLAG_BOUNDS` before a command runs (`check_flag`), the ``config.json``
reader checks its keys against `CONFIG_BOUNDS`, the hardware reader its numbers against
`HARDWARE_BOUNDS` and its ``kind`` against `HARDWARE_KINDS`, the dashboard takes its
widgets' ranges from the same entries, and docs/bounds.md renders the tables
(``app.cli.bounds_doc``). The scenario axes (``--batch``, ``--input``, ``--tp``, the bit
widths, ...) and the what-if scale factors are declared in ``genz.axes`` the same way
and rendered beside these.

Each quantity (a layer count, a model width, a fraction, a latency in ms, ...) is defined
once below; a flag or field carrying it is that bound under its own name
(`ValueBound.named`). Ranges are wide enough for every published model and device and
narrow enough that no accepted value makes a command run for minutes, allocate without
bound or print a non-finite number.
"""

from __future__ import annotations

from .errors import InputError
from .value_bound import ValueBound, integer, number, table

__all__ = [
    "CONFIG_BOUNDS",
    "FLAG_BOUNDS",
    "FLAG_BOUNDS_BY_COMMAND",
    "HARDWARE_BOUNDS",
    "HARDWARE_KINDS",
    "MAX_LAYERS",
    "MAX_SEED",
    "MAY_BE_EMPTY",
    "ValueBound",
    "bounds_rows",
    "check_flag",
    "flag_bound",
]

#: Largest seed numpy's generators accept from every entry point (2^32 - 1).
MAX_SEED = 2**32 - 1
#: Most layers a model may have (the co-design spaces' cap too).
MAX_LAYERS = 1024

_SECONDS = 1e7  # about 116 days: no latency, duration or SLO is longer
_MS = 1e10

# -- quantities, each defined once --------------------------------------------------
# Model shape (Hugging Face config.json keys and the loss law's flags).
LAYERS = integer(1, MAX_LAYERS, "layers")
LAYERS_OR_NONE = integer(0, MAX_LAYERS, "layers")
WIDTH = integer(1, 1_048_576)
WIDTH_OR_NONE = integer(0, 1_048_576)
HEAD_WIDTH = integer(1, 65_536)
HEAD_WIDTH_OR_NONE = integer(0, 65_536)
FFN_WIDTH = integer(1, 4_194_304)
FFN_WIDTH_OR_NONE = integer(0, 4_194_304)
HEADS = integer(1, 16_384, "heads")
VOCABULARY = integer(1, 16_777_216, "tokens")
CONTEXT_TOKENS = integer(0, 1_000_000_000, "tokens")
EXPERTS = integer(1, 65_536, "experts")
EXPERTS_OR_NONE = integer(0, 65_536, "experts")
# Precision.
BITS = number(1, 32, "bits", low_open=False)
# Shares and factors.
FRACTION = number(0, 1)  # (0, 1]: an efficiency, a utilisation
SHARE = number(0, 1, low_open=False)  # [0, 1]: a share that may be none
SCALE_FACTOR = number(1e-3, 1e3, low_open=False)
# Time.
SECONDS = number(0, _SECONDS, "s")
MILLISECONDS = number(0, _MS, "ms")
HOST_MILLISECONDS = number(0, 60_000, "ms", low_open=False)  # host cost per request or chunk
MICROSECONDS = number(0, 1e6, "us", low_open=False)  # a fixed latency, up to 1 s
YEARS = number(0, 100, "years")
# Counts.
REQUESTS = integer(1, 1_000_000, "requests")
DEVICES = integer(1, 1_000_000, "devices")
DEVICE_BUDGET = number(1, 1e6, "devices", low_open=False)
DEGREE = integer(1, 4096, "devices")  # a parallel degree
REPLICAS = integer(1, 4096, "replicas")
SEQUENCES_PER_REQUEST = integer(1, 1024, "sequences")
MEAN_TOKENS = number(1, 1_000_000, "tokens", low_open=False)
STEP_TOKENS = integer(1, 1_000_000, "tokens")
# Rates, sizes, money.
THROUGHPUT = number(0, 1e15, "tokens/s")
GIGABYTES = number(0, 1e9, "GB")
LINK_GB_PER_S = number(0, 1e6, "GB/s")  # a device link: 1 PB/s
MEMORY_GB_PER_S = number(0, 1e8, "GB/s")  # a memory level: on-wafer SRAM reaches 2e7
DEVICE_GB = number(0, 1e6, "GB")  # capacity of one device's memory level: 1 PB
DEVICE_TFLOPS = number(0, 1e6, "TFLOP/s")  # one device: 1 EFLOP/s
WATTS = number(0, 1e6, "W")
IDLE_WATTS = number(0, 1e6, "W", low_open=False)
PICOJOULES = number(0, 1e6, "pJ", low_open=False)
DEVICE_USD = number(0, 1e9, "USD")
USD_PER_HOUR = number(0, 1e6, "USD/h")

#: ``config.json`` keys (Hugging Face names) and ``_weight_bits``. Optional keys that
#: are absent take their default; present, they must lie in range (``head_dim: 0`` is
#: refused, not replaced by the default).
CONFIG_BOUNDS: dict[str, ValueBound] = table(
    WIDTH.named("hidden_size", "model width d_model"),
    LAYERS.named("num_hidden_layers", "decoder layers"),
    HEADS.named("num_attention_heads", "query heads"),
    HEADS.named("num_key_value_heads", "KV heads (absent: = query heads)"),
    HEAD_WIDTH.named("head_dim", "per-head width (absent: hidden_size / heads)"),
    FFN_WIDTH_OR_NONE.named("intermediate_size", "dense FFN width"),
    VOCABULARY.named("vocab_size", "vocabulary"),
    CONTEXT_TOKENS.named("max_position_embeddings", "context window"),
    EXPERTS_OR_NONE.named("num_local_experts", "routed experts (also n_routed_experts)"),
    EXPERTS_OR_NONE.named("n_routed_experts", "routed experts"),
    EXPERTS_OR_NONE.named("num_experts", "routed experts"),
    EXPERTS_OR_NONE.named("num_experts_per_tok", "experts per token (needs experts)"),
    EXPERTS_OR_NONE.named("n_shared_experts", "always-active experts"),
    FFN_WIDTH_OR_NONE.named("moe_intermediate_size", "expert FFN width"),
    LAYERS_OR_NONE.named("first_k_dense_replace", "leading dense layers"),
    LAYERS.named("moe_layer_freq", "every n-th layer is MoE"),
    WIDTH_OR_NONE.named("kv_lora_rank", "MLA latent width"),
    WIDTH_OR_NONE.named("q_lora_rank", "MLA query latent width"),
    HEAD_WIDTH_OR_NONE.named("qk_rope_head_dim", "MLA rotary width"),
    HEAD_WIDTH_OR_NONE.named("qk_nope_head_dim", "MLA non-rotary width"),
    HEAD_WIDTH_OR_NONE.named("v_head_dim", "MLA value width"),
    integer(0, 64, "layers").named("num_nextn_predict_layers", "multi-token-prediction modules"),
    number(0, 32, "bits").named("_weight_bits", "default weight bits"),
)

#: Accepted ``kind`` of a hardware file (runtime profiles key device classes on it).
HARDWARE_KINDS = ("accelerator", "cpu", "gpu", "npu", "soc", "tpu")

#: Numbers of a hardware file, by key (a memory level's, the interconnect's, ... keys
#: carry their section: ``memory.bandwidth_gb_per_s``). Upper ends are physically
#: plausible for one device (a wafer-scale engine included), not today's records.
HARDWARE_BOUNDS: dict[str, ValueBound] = table(
    DEVICE_TFLOPS.named("peak_tflops", "dense peak per dtype"),
    MEMORY_GB_PER_S.named("memory.bandwidth_gb_per_s", "a memory level's bandwidth"),
    DEVICE_GB.named("memory.capacity_gb", "a memory level's capacity"),
    LINK_GB_PER_S.named("interconnect.link_bandwidth_gb_per_s", "scale-up link, per direction"),
    MICROSECONDS.named("interconnect.link_latency_us", "scale-up link latency"),
    integer(1, 65_536, "devices").named("interconnect.devices_per_node", "devices per node"),
    LINK_GB_PER_S.named("interconnect.scaleout_bandwidth_gb_per_s", "scale-out link"),
    MICROSECONDS.named("interconnect.scaleout_latency_us", "scale-out link latency"),
    MICROSECONDS.named("interconnect.collective_latency_us", "fixed latency per collective"),
    FRACTION.named("efficiency.compute", "achievable fraction of peak compute"),
    FRACTION.named("efficiency.memory", "achievable fraction of peak bandwidth"),
    FRACTION.named("efficiency.interconnect", "achievable fraction of link bandwidth"),
    MICROSECONDS.named("kernel_overhead_us", "fixed cost per kernel"),
    WATTS.named("power_w", "board power (TDP)"),
    DEVICE_USD.named("price_usd", "purchase price"),
    USD_PER_HOUR.named("price_usd_per_hour", "rental price"),
    IDLE_WATTS.named("power_model.idle_w", "idle power"),
    PICOJOULES.named("power_model.pj_per_flop", "energy per FLOP"),
    PICOJOULES.named("power_model.pj_per_byte", "energy per main-memory byte"),
    DEVICE_GB.named("host.capacity_gb", "host memory for offload"),
    LINK_GB_PER_S.named("host.link_bandwidth_gb_per_s", "host link, per direction"),
)

#: Numeric CLI flags, by flag; `FLAG_BOUNDS_BY_COMMAND` overrides one per command.
#: The scenario axes and scale factors are in ``genz.axes``.
FLAG_BOUNDS: dict[str, ValueBound] = table(
    FRACTION.named("--compute-eff", "achieved fraction of peak compute"),
    FRACTION.named("--memory-eff", "achieved fraction of peak bandwidth"),
    number(0, 1e30, "FLOP", low_open=False).named("--flop", "operator FLOP"),
    number(0, 1e30, "bytes", low_open=False).named("--bytes", "operator bytes moved"),
    integer(1, 64, "tokens").named("--k", "draft tokens per speculation step"),
    number(0, 1, low_open=False, high_open=True).named("--acceptance", "per-token acceptance rate"),
    LINK_GB_PER_S.named("--link-gb-per-s", "KV-transfer link bandwidth"),
    LINK_GB_PER_S.named("--kv-link-gb-per-s", "KV-transfer bandwidth per device"),
    number(0, 1e7, "requests/s").named("--rate", "arrival rate"),
    SECONDS.named("--duration", "seconds of arrivals"),
    number(0, 10, low_open=False).named("--length-cv", "lognormal CV of lengths"),
    number(0, 100).named("--burst-cv", "gamma CV of inter-arrival gaps (1 = Poisson)"),
    SHARE.named("--prefix-share", "share of requests with a shared prefix"),
    integer(0, 1_000_000, "tokens").named("--prefix-tokens", "tokens of each shared prefix"),
    integer(1, 1_000_000, "prefixes").named("--prefix-count", "distinct shared prefixes"),
    number(0, 100, low_open=False).named("--prefix-zipf", "Zipf exponent of prefix popularity"),
    integer(0, MAX_SEED).named("--seed", "random seed"),
    integer(1, 65_536, "sequences").named("--max-seqs", "sequences per scheduler step"),
    STEP_TOKENS.named("--max-batched-tokens", "token budget per step"),
    integer(1, 65_536, "tokens").named("--block-tokens", "KV-cache block size"),
    FRACTION.named("--gpu-memory-utilization", "fraction of device memory the stack uses"),
    integer(1, 1024, "steps").named("--scheduler-steps", "decode steps per scheduling round"),
    REPLICAS.named("--prefill-replicas", "prefill pool replicas"),
    REPLICAS.named("--decode-replicas", "decode pool replicas"),
    DEGREE.named("--prefill-tp", "tensor-parallel degree of a prefill replica"),
    DEGREE.named("--decode-tp", "tensor-parallel degree of a decode replica"),
    SECONDS.named("--slo-ttft-p99-s", "P99 time-to-first-token limit"),
    MILLISECONDS.named("--slo-tpot-p99-ms", "P99 time-per-output-token limit"),
    integer(1, 65_535).named("--port", "TCP port"),
    SECONDS.named("--max-ttft-s", "time-to-first-token limit"),
    MILLISECONDS.named("--max-tpot-ms", "time-per-output-token limit"),
    MILLISECONDS.named("--max-ttft-ms", "time-to-first-token limit"),
    THROUGHPUT.named("--min-throughput", "least throughput"),
    DEVICES.named("--max-devices", "most devices"),
    integer(1, 100_000, "requests").named("--simulate-requests", "requests of a simulated check"),
    number(1, 1e6, low_open=False).named("--max-scale", "largest what-if scale tried"),
    SCALE_FACTOR.named("--params-scale", "multiply the parameter count"),
    SCALE_FACTOR.named("--experts-scale", "multiply the expert count"),
    SCALE_FACTOR.named("--context-scale", "multiply the context"),
    FRACTION.named("--power-fraction", "fraction of TDP drawn"),
    FRACTION.named("--utilization", "fraction of hours the device is busy"),
    YEARS.named("--lifetime-years", "amortisation period"),
    number(0, 1e3, "USD/kWh", low_open=False).named(
        "--electricity-usd-per-kwh", "electricity price"
    ),
    DEVICES.named("--devices", "devices"),
    REQUESTS.named("--decode-batch", "decode batch"),
    GIGABYTES.named("--max-memory-gb", "memory budget"),
    GIGABYTES.named("--max-weights-gb", "weight-memory budget"),
    GIGABYTES.named("--max-kv-gb", "KV-cache budget"),
    number(0, 1e15, "GBOPs").named("--max-decode-gbops", "decode bit-operations budget"),
    number(0, 1e6, low_open=False).named(
        "--edge-layer-weight", "sensitivity weight of first/last layers"
    ),
    number(0, 86_400, "s").named("--time-limit-s", "ILP solver time limit"),
    SHARE.named("--mip-gap", "relative MIP gap"),
    integer(0, 10_000, "resamples").named("--bootstrap", "bootstrap resamples"),
    integer(0, 1_000, "starts").named("--starts", "optimiser starts (0: every grid point)"),
    number(0, 10).named("--huber-delta", "Huber loss delta (log-loss units)"),
    number(0, 1, high_open=True).named("--confidence", "interval confidence"),
    integer(0, 1_000_000, "runs").named("--drop-highest-loss", "highest-loss runs dropped"),
    number(0, 1e3, "bits").named("--gamma-w", "precision-law gamma_w"),
    BITS.named("--reference-bits", "bits of the reference precision"),
    number(0, 1e18, "tokens").named("--tokens", "training tokens"),
    number(0, 1e16, "parameters").named("--params", "parameter count"),
    LAYERS.named("--layers", "decoder layers"),
    WIDTH.named("--hidden", "model width"),
    FFN_WIDTH.named("--ffn", "FFN width"),
    HEADS.named("--heads", "query heads"),
    HEADS.named("--kv-heads", "KV heads"),
    HEAD_WIDTH.named("--head-dim", "per-head width"),
    VOCABULARY.named("--vocab", "vocabulary"),
    EXPERTS.named("--experts", "routed experts (1 = dense)"),
    EXPERTS.named("--top-k", "experts per token"),
    BITS.named("--weight-bits", "post-training weight bits"),
    number(0, 1e3, "nats").named("--max-loss", "loss limit"),
    number(1, 1e9, low_open=False).named("--max-perplexity", "perplexity limit"),
    number(0, 1e9, "h").named("--max-training-hours", "training-time limit"),
    number(0, 1e15, "USD").named("--max-training-cost-usd", "training-cost limit"),
    integer(1, 10_000_000, "designs").named("--samples", "sampled designs"),
    integer(0, 100, "rounds").named("--refine-rounds", "refinement rounds"),
    integer(1, 1_000_000, "chunks").named("--chunks", "evaluation chunks"),
    integer(0, 1_000_000, "rows").named("--show", "frontier rows printed"),
    integer(1, 10_000, "designs").named("--top", "designs written"),
)


def _per_command(command: str, *bounds: ValueBound) -> dict[tuple[str, str], ValueBound]:
    return {(command, flag): bound for flag, bound in table(*bounds).items()}


#: Co-design budgets on a design's modelled cost, area, power and serving price.
_DESIGN_BUDGETS = (
    DEVICE_BUDGET.named("--max-devices", "most devices"),
    DEVICE_USD.named("--max-device-cost-usd", "device price or modelled manufacturing cost"),
    number(0, 1e6, "mm^2").named("--max-area-mm2", "modelled silicon area"),
    WATTS.named("--max-tdp-w", "board power (modelled TDP)"),
    number(0, 1e6, "USD/Mtok").named("--max-usd-per-mtok", "USD per million output tokens"),
)
#: Multi-LoRA serving (``predict``, ``requirements``, ``serve``) and llama.cpp -ngl offload
#: (``predict``); decoding modes, offload shares and architecture variants are scenario
#: axes (``genz.axes``).
_LORA_OPTIONS = (
    WIDTH.named("--lora-rank", "adapter rank r (at most the model's width)"),
    integer(1, 1_000_000, "adapters").named("--lora-adapters", "distinct adapters resident"),
)
_PREDICT_OPTIONS = (
    *_LORA_OPTIONS,
    LAYERS_OR_NONE.named("--gpu-layers", "layers on the device (at most the model's)"),
)

#: Flags whose meaning or range is the command's own: ``(command, flag)`` -> bound.
#: A nested command is named with its parent (``'hw design'``).
FLAG_BOUNDS_BY_COMMAND: dict[tuple[str, str], ValueBound] = {
    **_per_command(
        "serve",
        MEAN_TOKENS.named("--input", "mean prompt tokens"),
        MEAN_TOKENS.named("--output", "mean output tokens"),
        BITS.named("--wbits", "weight bits"),
        BITS.named("--abits", "activation bits"),
        BITS.named("--kvbits", "KV-cache bits"),
        DEGREE.named("--tp", "tensor-parallel degree"),
        DEGREE.named("--pp", "pipeline-parallel degree"),
        DEGREE.named("--ep", "expert-parallel degree"),
        integer(1, 50_000_000, "requests").named("--num-requests", "requests sent"),
        REQUESTS.named("--max-concurrency", "closed-loop clients (requests in flight)"),
        integer(1, 10_000_000_000, "tokens").named("--kv-tokens", "KV-cache size"),
        integer(1, 1_000_000_000, "blocks").named("--kv-blocks", "KV-cache size"),
        FRACTION.named("--kv-free-fraction", "KV share of memory left after weights"),
        HOST_MILLISECONDS.named("--request-overhead-ms", "front-end time per request"),
        HOST_MILLISECONDS.named("--chunk-overhead-ms", "host time per streamed chunk"),
        MILLISECONDS.named("--slo-itl-p99-ms", "P99 inter-token latency limit"),
        SECONDS.named("--slo-queue-p99-s", "P99 queueing-delay limit"),
        integer(1, 64, "tokens").named("--spec-tokens", "draft tokens per speculative step"),
        number(0, 1, low_open=False).named("--spec-acceptance", "per-token acceptance rate"),
        integer(1, 1024, "sequences").named("--samples", "parallel samples per request"),
        integer(1, 1024, "sequences").named("--beams", "beam width (sequences per request)"),
        *_LORA_OPTIONS,
    ),
    **_per_command("search", *_DESIGN_BUDGETS),
    **_per_command("recommend", *_DESIGN_BUDGETS),
    **_per_command("oicf", integer(1, 65_536, "requests").named("--batch", "prefill batch")),
    **_per_command("predict", *_PREDICT_OPTIONS),
    **_per_command("requirements", *_LORA_OPTIONS),
    **_per_command("app", integer(1, 1000, "MB").named("--max-upload-mb", "largest upload")),
    **_per_command(
        "hw design",
        MEMORY_GB_PER_S.named("--bandwidth-gb-per-s", "achieved total memory bandwidth"),
        number(0, 100, "Gb/s").named("--gbps-per-pin", "per-pin data rate"),
        number(0, 1e6, "MB", low_open=False).named("--sram-mb", "on-die SRAM"),
        number(0, 10, "GHz").named("--clock-ghz", "tensor clock"),
        number(0, 1e6, "TFLOP/s", low_open=False).named("--vector-tflops", "fp32 vector rate"),
        integer(1, 1024, "dies").named("--dies", "compute dies per package"),
        YEARS.named("--lifetime-years", "amortisation of the cost"),
        number(0, 1e3, "USD/kWh", low_open=False).named(
            "--electricity-usd-per-kwh", "electricity price"
        ),
    ),
}

#: String flags that may be empty (every other string flag must name something).
MAY_BE_EMPTY = frozenset({"--description"})
#: Longest string flag value (Linux's PATH_MAX: no path or list is longer).
MAX_FLAG_CHARACTERS = 4096


def flag_bound(command: str, flag: str) -> ValueBound | None:
    """The bound of ``flag`` in ``command`` (None when the table has none)."""
    return FLAG_BOUNDS_BY_COMMAND.get((command, flag)) or FLAG_BOUNDS.get(flag)


def check_flag(command: str, flag: str, value: object) -> None:
    """Raise `InputError` (naming ``flag``) when ``value`` is outside its bound.

    ``None`` (not given) always passes; an empty or blank string is refused unless the
    flag is in `MAY_BE_EMPTY`, as is one with a NUL character (no name or path has one)
    or longer than `MAX_FLAG_CHARACTERS`.
    """
    if value is None:
        return
    if isinstance(value, str):
        if not value.strip() and flag not in MAY_BE_EMPTY:
            raise InputError(f"{flag} must not be empty")
        if "\x00" in value:
            raise InputError(f"{flag} must not contain a NUL character")
        if len(value) > MAX_FLAG_CHARACTERS:
            raise InputError(
                f"{flag} must be at most {MAX_FLAG_CHARACTERS} characters, got {len(value)}"
            )
        return
    bound = flag_bound(command, flag)
    if bound is not None and isinstance(value, int | float):
        bound.check(value, label=flag)


def bounds_rows(table_: dict[str, ValueBound]) -> list[tuple[str, str, str, str, str, str]]:
    """``(name, type, unit, range, 0 allowed, meaning)`` per entry, for docs and tests."""
    return [
        (
            bound.name,
            "integer" if bound.integer else "number",
            bound.unit,
            bound.interval,
            "yes" if bound.zero_allowed else "no",
            bound.help,
        )
        for bound in table_.values()
    ]
