"""Loss added by post-training quantisation (PTQ) of the weights, for serving-time bits.

Kumar et al. 2024, "Scaling Laws for Precision" (arXiv 2411.04330), Section 3, Eq. 2:
a model trained in high precision and whose weights are quantised afterwards to
``P_post`` bits loses

``delta_PTQ(N, D, P_post) = C_T * D^gamma_D / N^gamma_N * exp(-P_post / gamma_post)``

nats per token: the degradation grows with training tokens D at fixed N (overtrained
models are more fragile) and falls exponentially with the post-training bits. This is
the model for *serving-time* bits (weights quantised after training, e.g. GPTQ/AWQ/RTN
int4). The quantised-*training* form (``N_eff``, `scaling_law.precision`) describes
weights held at low precision during training and stays available, labelled as such.

Constants: `KUMAR_PTQ` holds the values of Kumar et al.'s PTQ fit (their appendix
table of fitted constants: C_T = 0.0598, gamma_D = 0.5068, gamma_N = 0.3439,
gamma_post = 0.5907) as read when this module was first written. **Not re-verified.** On
2026-12-02 the search tool's stored copies of the paper were looked for:
https://arxiv.org/html/2411.04330v2 and an ICLR 2025 text mirror
(object.cloud.sdsc.edu/.../ICLR/2025/scaling_laws_for_precision__b102a4d3.txt) are
stored, but only their opening (abstract, introduction) is returned, never the
constants table; secondary pages (alphaxiv.org/overview/2411.04330v2, chatpaper.com,
sciencestack.ai/paper/2411.04330) describe the form (465 runs, 30M-220M parameters,
1.5B-26B tokens, GPTQ) without the numbers; no public code implementing the law was
found (exact searches for ``gamma_post`` and ``0.5907`` in the code index; the authors'
repository is not in the index). So the values could not be checked against the paper
or a reimplementation; `PtqConstants.source` says so and every use names the constants.
Nor can the shipped data refit them: ``data/validation/llm_inference_bench/
quant_perplexity_power.csv`` has one perplexity per model, all served unquantised (no
bits column, no quantised variant of any model), so the bits dependence is not
identified by it. The fit's range: OLMo-style models of 30M-220M parameters, up to 26B
tokens, integer GPTQ weight quantisation at 3-8 bits; D/N far beyond ~1,000 (Qwen2.5-0.5B
has ~36,000) is an extrapolation of that fit.

No degradation is applied at or above the training precision (``training_bits``):
nothing was quantised.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from roofline import require_positive

from .architecture import Architecture
from .law import ScalingLaw, law_inputs
from .precision import DEFAULT_REFERENCE_BITS, _bits

Array = NDArray[np.float64]
PTQ_FORM = "post-training quantisation (Kumar et al. 2024, Eq. 2)"
QUANTISED_TRAINING_FORM = "quantised training, N_eff (Kumar et al. 2024)"


@dataclass(frozen=True)
class PtqConstants:
    """Constants of ``delta_PTQ = c_t * D^gamma_d / N^gamma_n * exp(-P / gamma_post)``.

    ``c_t`` in nats per token; the exponents are dimensionless; ``gamma_post`` in bits.
    """

    c_t: float
    gamma_d: float
    gamma_n: float
    gamma_post: float
    source: str

    def __post_init__(self) -> None:
        for name in ("c_t", "gamma_d", "gamma_n", "gamma_post"):
            require_positive(f"ptq.{name}", getattr(self, name))

    def to_dict(self) -> dict[str, object]:
        """Plain values for JSON."""
        return {
            "c_t": self.c_t,
            "gamma_d": self.gamma_d,
            "gamma_n": self.gamma_n,
            "gamma_post": self.gamma_post,
            "source": self.source,
        }


KUMAR_PTQ = PtqConstants(
    c_t=0.0598,
    gamma_d=0.5068,
    gamma_n=0.3439,
    gamma_post=0.5907,
    source=(
        "Kumar et al. 2024, arXiv 2411.04330, Eq. 2 and their fitted-constants table; "
        "NOT re-verified: on 2026-12-02 no stored copy of the table or public "
        "reimplementation could be found (see scaling_law.ptq's docstring)"
    ),
)


def ptq_degradation(
    params: ArrayLike,
    tokens: ArrayLike,
    post_bits: ArrayLike,
    constants: PtqConstants = KUMAR_PTQ,
    training_bits: float = DEFAULT_REFERENCE_BITS,
) -> Array:
    """Loss increase, nats per token, of quantising weights to ``post_bits`` after training.

    Parameters
    ----------
    params, tokens
        Parameter count N and training tokens D (> 0; broadcast together).
    post_bits
        Serving-time weight precision, bits (> 0; int or float, e.g. 4 or 4.5).
    constants
        `PtqConstants` (default: Kumar et al. 2024's fit).
    training_bits
        Precision the model was trained in; ``post_bits >= training_bits`` gives 0.
    """
    count = np.asarray(params, dtype=float)
    data = np.asarray(tokens, dtype=float)
    require_positive("params", float(np.min(count)))
    require_positive("tokens", float(np.min(data)))
    bits = _bits("post_bits", post_bits)
    require_positive("training_bits", training_bits)
    delta = (
        constants.c_t
        * np.exp(constants.gamma_d * np.log(data) - constants.gamma_n * np.log(count))
        * np.exp(-bits / constants.gamma_post)
    )
    return np.where(bits >= training_bits, 0.0, delta)


def ptq_loss_penalty(
    law: ScalingLaw,
    architecture: Architecture | None,
    tokens: ArrayLike,
    post_bits: ArrayLike,
    *,
    params: ArrayLike | None = None,
    moe_parameters: str | None = None,
    constants: PtqConstants = KUMAR_PTQ,
) -> Array:
    """`ptq_degradation` with N counted under ``law``'s conventions; shaped like the inputs.

    The training precision is the law's ``reference_bits`` (the precision of its runs).
    """
    features, shape = law_inputs(
        law, architecture, tokens, params=params, moe_parameters=moe_parameters
    )
    count = features["params"].reshape(shape)
    data = features["tokens"].reshape(shape)
    return ptq_degradation(count, data, post_bits, constants, law.reference_bits)
