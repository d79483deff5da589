"""The one table of bounds on user-facing quantities: CLI flags and file fields.

Every entry states a quantity's type (integer or number), unit, accepted range and so
whether 0 is allowed; an unset value is ``None``, never 0. The CLI checks every parsed
flag against `FLAG_BOUNDS` before a command runs (`check_flag`), the ``config.json``
reader checks its keys against `CONFIG_BOUNDS`, the hardware reader its ``kind``
against `HARDWARE_KINDS`, and docs/bounds.md renders the tables (`bounds_markdown`).
The scenario axes (``--batch``, ``--input``, ``--tp``, the bit widths, ...) and the
what-if scale factors are declared in ``genz.axes`` the same way and rendered beside
these.

Ranges are wide enough for every published model and device and narrow enough that
no accepted value makes a command run for minutes, allocate without bound or print a
non-finite number.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .errors import InputError

#: Largest seed numpy's generators accept from every entry point (2^32 - 1).
MAX_SEED = 2**32 - 1
#: Most layers a model may have (the co-design spaces' cap too).
MAX_LAYERS = 1024


@dataclass(frozen=True)
class ValueBound:
    """The accepted values of one quantity.

    Attributes
    ----------
    name
        The flag (``'--max-seqs'``) or file field (``'num_hidden_layers'``).
    integer
        Whole numbers only.
    unit
        What one unit is (``'tokens'``, ``'s'``, ``'ms'``); empty when dimensionless.
    low, high
        The range's ends, in ``unit``.
    low_open, high_open
        True when the end itself is excluded (``(0, 1]`` has ``low_open``).
    help
        What the quantity is, one line.
    """

    name: str
    integer: bool
    unit: str
    low: float
    high: float
    low_open: bool = False
    high_open: bool = False
    help: str = ""

    @property
    def interval(self) -> str:
        """The range in interval notation, ``'(0, 1]'``, ``'[1, 1024]'``."""
        left = "(" if self.low_open else "["
        right = ")" if self.high_open else "]"
        return f"{left}{_show(self.low, self.integer)}, {_show(self.high, self.integer)}{right}"

    @property
    def zero_allowed(self) -> bool:
        """True when 0 lies in the range."""
        return self.contains(0)

    @property
    def requirement(self) -> str:
        """What a valid value is: ``'an integer in [1, 65536]'``, ``'a number of s in (0, 1e+07]'``."""
        if self.integer:
            return f"an integer in {self.interval}"
        if not self.unit:  # a fraction or factor
            return f"in {self.interval}"
        of_unit = f" of {self.unit}" if self.unit else ""
        return f"a number{of_unit} in {self.interval}"

    def contains(self, value: float) -> bool:
        """True when ``value`` lies in the range (type not checked)."""
        above = value > self.low if self.low_open else value >= self.low
        below = value < self.high if self.high_open else value <= self.high
        return bool(above and below)

    def check(self, value: object, label: str | None = None) -> float:
        """``value`` if of this type and in range, else `InputError` naming ``label``.

        ``label`` defaults to `name`; pass ``'file.json: key'`` to name the file too.
        Integral floats (``1e3`` read from JSON or YAML) count as integers.
        """
        valid = False
        if isinstance(value, int | float) and not isinstance(value, bool):
            number = float(value)
            whole = isinstance(value, int) or (math.isfinite(number) and number.is_integer())
            valid = math.isfinite(number) and (whole or not self.integer) and self.contains(number)
        if not valid:
            raise InputError(f"{label or self.name} must be {self.requirement}, got {value!r}")
        return value  # type: ignore[return-value]


def _show(value: float, integer: bool) -> str:
    return f"{int(value)}" if integer and float(value).is_integer() else f"{value:g}"


def _int(name: str, low: float, high: float, unit: str = "", text: str = "") -> ValueBound:
    return ValueBound(name, True, unit, low, high, help=text)


def _num(
    name: str,
    low: float,
    high: float,
    unit: str = "",
    text: str = "",
    *,
    low_open: bool = True,
    high_open: bool = False,
) -> ValueBound:
    return ValueBound(name, False, unit, low, high, low_open, high_open, text)


def _table(*bounds: ValueBound) -> dict[str, ValueBound]:
    return {bound.name: bound for bound in bounds}


#: ``config.json`` keys (Hugging Face names) and ``_weight_bits``. Optional keys that
#: are absent take their default; present, they must lie in range (``head_dim: 0`` is
#: refused, not replaced by the default).
CONFIG_BOUNDS: dict[str, ValueBound] = _table(
    _int("hidden_size", 1, 1_048_576, "", "model width d_model"),
    _int("num_hidden_layers", 1, MAX_LAYERS, "layers", "decoder layers"),
    _int("num_attention_heads", 1, 16_384, "heads", "query heads"),
    _int("num_key_value_heads", 1, 16_384, "heads", "KV heads (absent: = query heads)"),
    _int("head_dim", 1, 65_536, "", "per-head width (absent: hidden_size / heads)"),
    _int("intermediate_size", 0, 4_194_304, "", "dense FFN width"),
    _int("vocab_size", 1, 16_777_216, "tokens", "vocabulary"),
    _int("max_position_embeddings", 0, 1_000_000_000, "tokens", "context window"),
    _int("num_local_experts", 0, 65_536, "experts", "routed experts (also n_routed_experts)"),
    _int("n_routed_experts", 0, 65_536, "experts", "routed experts"),
    _int("num_experts", 0, 65_536, "experts", "routed experts"),
    _int("num_experts_per_tok", 0, 65_536, "experts", "experts per token (needs experts)"),
    _int("n_shared_experts", 0, 65_536, "experts", "always-active experts"),
    _int("moe_intermediate_size", 0, 4_194_304, "", "expert FFN width"),
    _int("first_k_dense_replace", 0, MAX_LAYERS, "layers", "leading dense layers"),
    _int("moe_layer_freq", 1, MAX_LAYERS, "layers", "every n-th layer is MoE"),
    _int("kv_lora_rank", 0, 1_048_576, "", "MLA latent width"),
    _int("q_lora_rank", 0, 1_048_576, "", "MLA query latent width"),
    _int("qk_rope_head_dim", 0, 65_536, "", "MLA rotary width"),
    _int("qk_nope_head_dim", 0, 65_536, "", "MLA non-rotary width"),
    _int("v_head_dim", 0, 65_536, "", "MLA value width"),
    _int("num_nextn_predict_layers", 0, 64, "layers", "multi-token-prediction modules"),
    _num("_weight_bits", 0, 32, "bits", "default weight bits"),
)

#: Accepted ``kind`` of a hardware file (runtime profiles key device classes on it).
HARDWARE_KINDS = ("accelerator", "cpu", "gpu", "npu", "soc", "tpu")

_SECONDS = 1e7  # about 116 days: no latency, duration or SLO is longer
_MS = 1e10

#: Numeric CLI flags, by flag; `FLAG_BOUNDS_BY_COMMAND` overrides one per command.
#: The scenario axes and scale factors are in ``genz.axes``.
FLAG_BOUNDS: dict[str, ValueBound] = _table(
    _num("--compute-eff", 0, 1, "", "achieved fraction of peak compute"),
    _num("--memory-eff", 0, 1, "", "achieved fraction of peak bandwidth"),
    _num("--flop", 0, 1e30, "FLOP", "operator FLOP", low_open=False),
    _num("--bytes", 0, 1e30, "bytes", "operator bytes moved", low_open=False),
    _int("--k", 1, 64, "tokens", "draft tokens per speculation step"),
    _num("--acceptance", 0, 1, "", "per-token acceptance rate", low_open=False, high_open=True),
    _num("--link-gb-per-s", 0, 1e6, "GB/s", "KV-transfer link bandwidth"),
    _num("--kv-link-gb-per-s", 0, 1e6, "GB/s", "KV-transfer bandwidth per device"),
    _num("--rate", 0, 1e7, "requests/s", "arrival rate"),
    _num("--duration", 0, _SECONDS, "s", "seconds of arrivals"),
    _num("--length-cv", 0, 10, "", "lognormal CV of lengths", low_open=False),
    _num("--burst-cv", 0, 100, "", "gamma CV of inter-arrival gaps (1 = Poisson)"),
    _num("--prefix-share", 0, 1, "", "share of requests with a shared prefix", low_open=False),
    _int("--prefix-tokens", 0, 1_000_000, "tokens", "tokens of each shared prefix"),
    _int("--prefix-count", 1, 1_000_000, "prefixes", "distinct shared prefixes"),
    _num("--prefix-zipf", 0, 100, "", "Zipf exponent of prefix popularity", low_open=False),
    _int("--seed", 0, MAX_SEED, "", "random seed"),
    _int("--max-seqs", 1, 65_536, "sequences", "sequences per scheduler step"),
    _int("--max-batched-tokens", 1, 1_000_000, "tokens", "token budget per step"),
    _int("--block-tokens", 1, 65_536, "tokens", "KV-cache block size"),
    _num("--gpu-memory-utilization", 0, 1, "", "fraction of device memory the stack uses"),
    _int("--scheduler-steps", 1, 1024, "steps", "decode steps per scheduling round"),
    _int("--prefill-replicas", 1, 4096, "replicas", "prefill pool replicas"),
    _int("--decode-replicas", 1, 4096, "replicas", "decode pool replicas"),
    _int("--prefill-tp", 1, 4096, "devices", "tensor-parallel degree of a prefill replica"),
    _int("--decode-tp", 1, 4096, "devices", "tensor-parallel degree of a decode replica"),
    _num("--slo-ttft-p99-s", 0, _SECONDS, "s", "P99 time-to-first-token limit"),
    _num("--slo-tpot-p99-ms", 0, _MS, "ms", "P99 time-per-output-token limit"),
    _int("--port", 1, 65_535, "", "TCP port"),
    _num("--max-ttft-s", 0, _SECONDS, "s", "time-to-first-token limit"),
    _num("--max-tpot-ms", 0, _MS, "ms", "time-per-output-token limit"),
    _num("--max-ttft-ms", 0, _MS, "ms", "time-to-first-token limit"),
    _num("--min-throughput", 0, 1e15, "tokens/s", "least throughput"),
    _int("--max-devices", 1, 1_000_000, "devices", "most devices"),
    _num("--max-scale", 1, 1e6, "", "largest what-if scale tried", low_open=False),
    _num("--params-scale", 1e-3, 1e3, "", "multiply the parameter count", low_open=False),
    _num("--experts-scale", 1e-3, 1e3, "", "multiply the expert count", low_open=False),
    _num("--context-scale", 1e-3, 1e3, "", "multiply the context", low_open=False),
    _num("--power-fraction", 0, 1, "", "fraction of TDP drawn"),
    _num("--utilization", 0, 1, "", "fraction of hours the device is busy"),
    _num("--lifetime-years", 0, 100, "years", "amortisation period"),
    _num("--electricity-usd-per-kwh", 0, 1e3, "USD/kWh", "electricity price", low_open=False),
    _int("--devices", 1, 1_000_000, "devices", "devices"),
    _int("--decode-batch", 1, 1_000_000, "requests", "decode batch"),
    _num("--max-memory-gb", 0, 1e9, "GB", "memory budget"),
    _num("--max-weights-gb", 0, 1e9, "GB", "weight-memory budget"),
    _num("--max-kv-gb", 0, 1e9, "GB", "KV-cache budget"),
    _num("--max-decode-gbops", 0, 1e15, "GBOPs", "decode bit-operations budget"),
    _num(
        "--edge-layer-weight", 0, 1e6, "", "sensitivity weight of first/last layers", low_open=False
    ),
    _num("--time-limit-s", 0, 86_400, "s", "ILP solver time limit"),
    _num("--mip-gap", 0, 1, "", "relative MIP gap", low_open=False),
    _int("--bootstrap", 0, 10_000, "resamples", "bootstrap resamples"),
    _int("--starts", 0, 1_000, "starts", "optimiser starts (0: every grid point)"),
    _num("--huber-delta", 0, 10, "", "Huber loss delta (log-loss units)"),
    _num("--confidence", 0, 1, "", "interval confidence", high_open=True),
    _int("--drop-highest-loss", 0, 1_000_000, "runs", "highest-loss runs dropped"),
    _num("--gamma-w", 0, 1e3, "bits", "precision-law gamma_w"),
    _num("--reference-bits", 1, 32, "bits", "bits of the reference precision", low_open=False),
    _num("--tokens", 0, 1e18, "tokens", "training tokens"),
    _num("--params", 0, 1e16, "parameters", "parameter count"),
    _int("--layers", 1, MAX_LAYERS, "layers", "decoder layers"),
    _int("--hidden", 1, 1_048_576, "", "model width"),
    _int("--ffn", 1, 4_194_304, "", "FFN width"),
    _int("--heads", 1, 16_384, "heads", "query heads"),
    _int("--kv-heads", 1, 16_384, "heads", "KV heads"),
    _int("--head-dim", 1, 65_536, "", "per-head width"),
    _int("--vocab", 1, 16_777_216, "tokens", "vocabulary"),
    _int("--experts", 1, 65_536, "experts", "routed experts (1 = dense)"),
    _int("--top-k", 1, 65_536, "experts", "experts per token"),
    _num("--weight-bits", 1, 32, "bits", "post-training weight bits", low_open=False),
    _num("--max-loss", 0, 1e3, "nats", "loss limit"),
    _num("--max-perplexity", 1, 1e9, "", "perplexity limit", low_open=False),
    _num("--max-training-hours", 0, 1e9, "h", "training-time limit"),
    _num("--max-training-cost-usd", 0, 1e15, "USD", "training-cost limit"),
    _int("--samples", 1, 10_000_000, "designs", "sampled designs"),
    _int("--refine-rounds", 0, 100, "rounds", "refinement rounds"),
    _int("--chunks", 1, 1_000_000, "chunks", "evaluation chunks"),
    _int("--show", 0, 1_000_000, "rows", "frontier rows printed"),
    _int("--top", 1, 10_000, "designs", "designs written"),
)

#: Flags whose meaning differs in one command: ``(command, flag)`` -> bound.
FLAG_BOUNDS_BY_COMMAND: dict[tuple[str, str], ValueBound] = {
    ("serve", "--input"): _num(
        "--input", 1, 1_000_000, "tokens", "mean prompt tokens", low_open=False
    ),
    ("serve", "--output"): _num(
        "--output", 1, 1_000_000, "tokens", "mean output tokens", low_open=False
    ),
    ("serve", "--wbits"): _num("--wbits", 1, 32, "bits", "weight bits", low_open=False),
    ("serve", "--abits"): _num("--abits", 1, 32, "bits", "activation bits", low_open=False),
    ("serve", "--kvbits"): _num("--kvbits", 1, 32, "bits", "KV-cache bits", low_open=False),
    ("serve", "--tp"): _int("--tp", 1, 4096, "devices", "tensor-parallel degree"),
    ("serve", "--pp"): _int("--pp", 1, 4096, "devices", "pipeline-parallel degree"),
    ("serve", "--ep"): _int("--ep", 1, 4096, "devices", "expert-parallel degree"),
    ("search", "--max-devices"): _num(
        "--max-devices", 1, 1e6, "devices", "most devices", low_open=False
    ),
    ("recommend", "--max-devices"): _num(
        "--max-devices", 1, 1e6, "devices", "most devices", low_open=False
    ),
    ("oicf", "--batch"): _int("--batch", 1, 65_536, "requests", "prefill batch"),
}

#: String flags that may be empty (every other string flag must name something).
MAY_BE_EMPTY = frozenset({"--description"})


def flag_bound(command: str, flag: str) -> ValueBound | None:
    """The bound of ``flag`` in ``command`` (None when the table has none)."""
    return FLAG_BOUNDS_BY_COMMAND.get((command, flag)) or FLAG_BOUNDS.get(flag)


def check_flag(command: str, flag: str, value: object) -> None:
    """Raise `InputError` (naming ``flag``) when ``value`` is outside its bound.

    ``None`` (not given) always passes; an empty or blank string is refused unless the
    flag is in `MAY_BE_EMPTY`.
    """
    if value is None:
        return
    if isinstance(value, str):
        if not value.strip() and flag not in MAY_BE_EMPTY:
            raise InputError(f"{flag} must not be empty")
        return
    bound = flag_bound(command, flag)
    if bound is not None and isinstance(value, int | float):
        bound.check(value, label=flag)


def bounds_rows(table: dict[str, ValueBound]) -> list[tuple[str, str, str, str, str, str]]:
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
        for bound in table.values()
    ]
