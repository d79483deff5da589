"""A fitted law (`ScalingLaw`) and vectorised prediction: loss, interval, precision penalty.

Inputs broadcast like numpy: pass an `Architecture` whose fields are arrays of
a million candidates and an array (or scalar) of tokens, get an array of losses.
The interval of `predict_loss_interval` is the spread of the *law's* prediction
over the bootstrap parameter samples (parameter uncertainty); it does not add
run-to-run noise of a new training run.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from roofline import InputError

from .architecture import Architecture
from .domain import check_domain, domain_flags, unpriced_dimensions
from .forms import LawForm, get_form
from .precision import DEFAULT_REFERENCE_BITS, KUMAR_GAMMA_W, effective_parameters

Array = NDArray[np.float64]


@dataclass(frozen=True)
class ScalingLaw:
    """A parametric loss law with fitted values, intervals and conventions.

    Parameters
    ----------
    form
        Name of a registered `LawForm`.
    params
        Reported parameter values by public name (e.g. ``A, B, E, alpha, beta``).
    intervals
        ``(low, high)`` per parameter at ``confidence`` (None when held fixed).
    standard_errors
        Bootstrap standard deviation per parameter (None when held fixed).
    fixed
        Parameters held at their value because the data could not identify them.
    bootstrap_params
        Bootstrap samples, one tuple per replicate in ``public_names`` order.
    include_embeddings, moe_parameters
        Convention of N: embeddings counted or not; MoE ``'active'`` (default:
        the parameters a token uses) or ``'total'``.
    gamma_w, reference_bits
        Precision model (see `scaling_law.precision`): saturation constant and
        the weight precision of the fitted runs, bits.
    metadata
        JSON-ready provenance: data hash, fit method, diagnostics.
    domain
        ``{quantity: (low, high)}`` ranges of the fitted data (see `scaling_law.domain`);
        predictions outside them are flagged ``extrapolated``. Empty: unknown.
    """

    form: str
    params: Mapping[str, float]
    intervals: Mapping[str, tuple[float, float] | None] = field(default_factory=dict)
    standard_errors: Mapping[str, float | None] = field(default_factory=dict)
    fixed: tuple[str, ...] = ()
    confidence: float = 0.95
    bootstrap_params: tuple[tuple[float, ...], ...] = ()
    include_embeddings: bool = True
    moe_parameters: str = "active"
    gamma_w: float = KUMAR_GAMMA_W
    reference_bits: float = DEFAULT_REFERENCE_BITS
    metadata: Mapping[str, Any] = field(default_factory=dict)
    domain: Mapping[str, tuple[float, float]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "domain", check_domain(self.domain))
        form = get_form(self.form)
        names = set(form.public_names)
        if set(self.params) != names:
            raise InputError(
                f"law params must be exactly {', '.join(form.public_names)} for form {form.name!r}"
            )
        for name, value in self.params.items():
            if not isinstance(value, int | float) or not np.isfinite(value):
                raise InputError(f"law params[{name}] must be a finite number, got {value!r}")
        form.theta_from_public(self.params)  # the form's own range checks (A, B, E > 0)
        for mapping_name in ("intervals", "standard_errors"):
            unknown = sorted(set(getattr(self, mapping_name)) - names)
            if unknown:
                raise InputError(f"law {mapping_name} has unknown parameter {unknown[0]!r}")
        unknown_fixed = sorted(set(self.fixed) - names)
        if unknown_fixed:
            raise InputError(f"law fixed has unknown parameter {unknown_fixed[0]!r}")
        if not 0 < self.confidence < 1:
            raise InputError(f"confidence must be in (0, 1), got {self.confidence!r}")
        for index, sample in enumerate(self.bootstrap_params):
            if len(sample) != form.size or not np.all(np.isfinite(sample)):
                raise InputError(
                    f"law bootstrap_params[{index}] must hold {form.size} finite numbers"
                )
        if self.moe_parameters not in ("active", "total"):
            raise InputError(
                f"moe_parameters must be 'active' or 'total', got {self.moe_parameters!r}"
            )
        if not self.gamma_w > 0 or not self.reference_bits > 0:
            raise InputError("gamma_w and reference_bits must be > 0")

    @property
    def unpriced(self) -> tuple[str, ...]:
        """Architecture dimensions the law's data did not vary (`scaling_law.domain`):
        its prediction does not respond to them, whatever its form."""
        return unpriced_dimensions(self.domain) if self.domain else ()

    @property
    def law_form(self) -> LawForm:
        """The registered form this law instantiates."""
        return get_form(self.form)

    def theta(self) -> Array:
        """Fit-space parameter vector of the point estimate."""
        return self.law_form.theta_from_public(self.params)


@dataclass(frozen=True, eq=False)
class LossPrediction:
    """Predicted loss (nats per token) with its interval at ``confidence``.

    ``lower``/``upper`` are None when the law carries no bootstrap samples.
    Perplexity is ``exp(loss)``. ``extrapolated`` marks points outside the law's
    domain (all False when the law records none); ``outside`` names the quantities
    (width, depth, params, tokens, tokens_per_parameter) out of range at any point.
    """

    loss: Array
    lower: Array | None
    upper: Array | None
    confidence: float
    extrapolated: NDArray[np.bool_] | None = None
    outside: tuple[str, ...] = ()

    @property
    def perplexity(self) -> Array:
        """``exp(loss)``."""
        return np.exp(self.loss)

    def to_dict(self) -> dict[str, object]:
        """Plain numbers (scalars for a single prediction) for JSON."""

        return {
            "loss": _plain(self.loss),
            "loss_lower": _plain(self.lower),
            "loss_upper": _plain(self.upper),
            "perplexity": _plain(self.perplexity),
            "perplexity_lower": _plain(None if self.lower is None else np.exp(self.lower)),
            "perplexity_upper": _plain(None if self.upper is None else np.exp(self.upper)),
            "confidence": self.confidence,
            "extrapolated": _plain(self.extrapolated),
            "outside_domain": list(self.outside),
        }


def law_inputs(
    law: ScalingLaw,
    architecture: Architecture | None,
    tokens: ArrayLike,
    *,
    params: ArrayLike | None = None,
    weight_bits: ArrayLike | None = None,
    moe_parameters: str | None = None,
) -> tuple[dict[str, Array], tuple[int, ...]]:
    """Flattened feature arrays for ``law``'s form and the broadcast output shape.

    N comes from ``params`` when given, else from ``architecture`` under the law's
    conventions; ``weight_bits`` (None = the law's reference precision) turns N
    into N_eff.
    """
    form = law.law_form
    tokens_array = _positive("tokens", tokens)
    count = _parameter_count(law, architecture, params, moe_parameters)
    if weight_bits is not None:
        count = effective_parameters(count, weight_bits, law.gamma_w, law.reference_bits)
    features = {"params": count, "tokens": tokens_array}
    shape_needed = set(form.required_features) - {"params", "tokens"}
    if shape_needed:
        if architecture is None:
            raise InputError(
                f"form {form.name!r} needs an architecture for its shape terms, not only params"
            )
        features.update(
            width=np.asarray(architecture.hidden, dtype=float),
            depth=np.asarray(architecture.layers, dtype=float),
            aspect_ratio=architecture.aspect_ratio,
            ffn_ratio=architecture.ffn_ratio,
            gqa_ratio=architecture.gqa_ratio,
        )
        if "vocab" in form.required_features:
            features.update(
                vocab=np.asarray(architecture.vocab, dtype=float),
                non_embedding_params=architecture.counts().select(
                    False, moe_parameters or law.moe_parameters
                ),
            )
    try:
        arrays = np.broadcast_arrays(*features.values())
    except ValueError:
        raise InputError("tokens, weight_bits and architecture arrays do not broadcast") from None
    shape = arrays[0].shape
    return {name: array.ravel() for name, array in zip(features, arrays, strict=True)}, shape


def extrapolation(
    law: ScalingLaw,
    architecture: Architecture | None,
    tokens: ArrayLike,
    *,
    params: ArrayLike | None = None,
    moe_parameters: str | None = None,
) -> tuple[NDArray[np.bool_], tuple[str, ...]]:
    """Which points lie outside ``law.domain``, and the quantities out of range.

    Same inputs as `predict_loss`; N is counted under the law's conventions (at the
    precision of the fitted runs). Returns ``(flags shaped like the inputs, names)``.
    """
    tokens_array = _positive("tokens", tokens)
    count = _parameter_count(law, architecture, params, moe_parameters)
    quantities: dict[str, Array] = {"params": count, "tokens": tokens_array}
    quantities["tokens_per_parameter"] = tokens_array / count
    if architecture is not None:
        quantities["width"] = np.asarray(architecture.hidden, dtype=float)
        quantities["depth"] = np.asarray(architecture.layers, dtype=float)
        quantities.update(architecture_dimensions(architecture))
    flags, outside = domain_flags(law.domain, quantities)
    return flags, tuple(name for name, mask in outside.items() if np.any(mask))


def architecture_dimensions(architecture: Architecture) -> dict[str, Array]:
    """The `scaling_law.domain.ARCHITECTURE_DIMENSIONS` of (a grid of) architectures:
    query heads per KV head, FFN width / model width, vocabulary, routed experts."""
    return {
        "gqa_ratio": np.asarray(architecture.gqa_ratio, float),
        "ffn_ratio": np.asarray(architecture.ffn_ratio, float),
        "vocab": np.asarray(architecture.vocab, float),
        "experts": np.asarray(architecture.experts, float),
    }


def predict_loss(
    law: ScalingLaw,
    architecture: Architecture | None,
    tokens: ArrayLike,
    *,
    params: ArrayLike | None = None,
    weight_bits: ArrayLike | None = None,
    moe_parameters: str | None = None,
) -> Array:
    """Predicted loss, nats per token, shaped like the broadcast inputs.

    Parameters
    ----------
    law
        A fitted law.
    architecture
        Candidate architecture(s); may be None when ``params`` is given and the
        form has no shape terms.
    tokens
        Training tokens D (scalar or array).
    params
        Parameter count N, overriding the count from ``architecture``.
    weight_bits
        Weight precision in bits (None = the precision of the fitted runs).
    moe_parameters
        ``'active'`` or ``'total'`` MoE parameters (None = the law's choice).
    """
    features, shape = law_inputs(
        law,
        architecture,
        tokens,
        params=params,
        weight_bits=weight_bits,
        moe_parameters=moe_parameters,
    )
    return np.exp(law.law_form.log_loss(law.theta(), features)).reshape(shape)


def predict_loss_interval(
    law: ScalingLaw,
    architecture: Architecture | None,
    tokens: ArrayLike,
    *,
    params: ArrayLike | None = None,
    weight_bits: ArrayLike | None = None,
    moe_parameters: str | None = None,
) -> LossPrediction:
    """Predicted loss with the percentile interval over the law's bootstrap samples.

    Same inputs as `predict_loss`. Costs one evaluation per bootstrap sample, so
    use `predict_loss` for very large grids.
    """
    features, shape = law_inputs(
        law,
        architecture,
        tokens,
        params=params,
        weight_bits=weight_bits,
        moe_parameters=moe_parameters,
    )
    form = law.law_form
    loss = np.exp(form.log_loss(law.theta(), features)).reshape(shape)
    flags, outside = extrapolation(
        law, architecture, tokens, params=params, moe_parameters=moe_parameters
    )
    flags = np.broadcast_to(flags, shape).copy()
    if not law.bootstrap_params:
        return LossPrediction(loss, None, None, law.confidence, flags, outside)
    thetas = form.from_public(np.array(law.bootstrap_params, dtype=float))
    if form.batched:
        samples = form.log_loss(thetas, features)
    else:
        samples = np.stack([form.log_loss(theta, features) for theta in thetas])
    tail = (1 - law.confidence) / 2 * 100
    lower, upper = np.exp(np.percentile(samples, [tail, 100 - tail], axis=0))
    return LossPrediction(
        loss, lower.reshape(shape), upper.reshape(shape), law.confidence, flags, outside
    )


def precision_loss_penalty(
    law: ScalingLaw,
    architecture: Architecture | None,
    tokens: ArrayLike,
    weight_bits: ArrayLike,
    *,
    params: ArrayLike | None = None,
    moe_parameters: str | None = None,
) -> Array:
    """Loss increase (nats per token) of ``weight_bits`` weights over the reference precision.

    ``L(N_eff(weight_bits), D) - L(N, D)``; positive below ``law.reference_bits``,
    zero at it. Vectorised like `predict_loss`.
    """
    low = predict_loss(
        law,
        architecture,
        tokens,
        params=params,
        weight_bits=weight_bits,
        moe_parameters=moe_parameters,
    )
    full = predict_loss(law, architecture, tokens, params=params, moe_parameters=moe_parameters)
    return low - full


def _plain(value: NDArray[np.generic] | None) -> object:
    if value is None:
        return None
    return value.item() if value.ndim == 0 else value.tolist()


def _positive(field_name: str, value: ArrayLike) -> Array:
    try:
        array = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise InputError(f"{field_name} must be a finite number > 0, got {value!r}") from None
    bad = ~(np.isfinite(array) & (array > 0))
    if np.any(bad):
        first = array if array.ndim == 0 else array[bad].flat[0]
        raise InputError(f"{field_name} must be a finite number > 0, got {float(first):g}")
    return array


def _parameter_count(
    law: ScalingLaw,
    architecture: Architecture | None,
    params: ArrayLike | None,
    moe_parameters: str | None,
) -> Array:
    """N of the points: ``params`` when given, else counted from ``architecture`` under
    the law's conventions (embeddings in or out, MoE active or total)."""
    if params is not None:
        return _positive("params", params)
    if architecture is not None:
        return architecture.counts().select(
            law.include_embeddings, moe_parameters or law.moe_parameters
        )
    raise InputError("give an architecture or params (parameter count N)")
