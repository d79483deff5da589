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
gamma_post = 0.5907) as read when this module was first written. **Not re-verified**
against the paper: on 2026-12-02 the search tool's stored copies of arXiv 2411.04330
returned only the opening (abstract, introduction), never the constants table, and no
public reimplementation was found. Their fit's range: OLMo-style models of 30M-220M
parameters, up to 26B tokens, integer GPTQ weight quantisation at 3-8 bits.

They were then checked against published data (issue #13): 40 rows of llama.cpp
perplexities on wikitext-2 before and after weight quantisation, for LLaMA-1 7B/13B
(1T tokens), Llama-2 7B/70B (2T) and Llama-3 8B (15T) at 3-8.5 effective bits
(``data/scaling/ptq/``, `scaling_law.ptq_data`). On the 36 rows whose degradation is
above the noise, Kumar's constants (not fitted to these rows, so out of sample) predict
the quantised perplexity with 1.52 % MAPE (degradation itself: 50.6 % MAPE); a refit
of all four constants to the rows (`scaling_law.ptq_fit`, every parameter identified:
scaled-Jacobian condition number 1.6) does better in sample (1.20 %) but worse leaving
one model out (2.82 %), as do refits with Kumar's exponents held. So `DEFAULT_PTQ` stays
`KUMAR_PTQ`; the refit ships as ``data/scaling/ptq/ptq_fitted.json`` (`load_ptq_constants`),
labelled, with the command that produced it (``python benchmarks/ptq_fit.py``).
Every use names the constants (`PtqConstants.name`, in `PTQ_FORM` and ``codesign loss``).
Issue #27 (round 3) added models trained far past Kumar's data (Llama-3.x, Gemma-2, Qwen2,
Qwen2.5 at up to 36,000 tokens per parameter) and scored seven alternative forms held out
by model and by family (`scaling_law.ptq_forms`, ``python benchmarks/ptq_bias.py``); none met
the target (every model's median predicted / observed within 0.8-1.25); the refits move the
predictions on Kumar's own range, and the one that does not (a factor on post-trained
checkpoints) only ties these constants one family out, so they stay.

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
QUANTISED_TRAINING_FORM = "quantised training, N_eff (Kumar et al. 2024)"


@dataclass(frozen=True)
class PtqConstants:
    """Constants of ``delta_PTQ = c_t * D^gamma_d / N^gamma_n * exp(-P / gamma_post)``.

    ``c_t`` in nats per token; the exponents are dimensionless; ``gamma_post`` in bits.
    ``name`` is the short label every result carries; ``source`` the full provenance.
    """

    c_t: float
    gamma_d: float
    gamma_n: float
    gamma_post: float
    source: str
    name: str = "custom constants"

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
            "name": self.name,
        }


KUMAR_PTQ = PtqConstants(
    c_t=0.0598,
    gamma_d=0.5068,
    gamma_n=0.3439,
    gamma_post=0.5907,
    source=(
        "Kumar et al. 2024, arXiv 2411.04330, Eq. 2 and their fitted-constants table; "
        "NOT re-verified: on 2026-12-02 no stored copy of the table or public "
        "reimplementation could be found; checked on published llama.cpp PTQ rows "
        "(data/scaling/ptq): out of sample they beat a refit left one model out "
        "(python benchmarks/ptq_fit.py)"
    ),
    name="Kumar et al. 2024 as read, unverified",
)
# The default constants: Kumar's, because on the published rows they beat the refit
# out of sample (benchmarks/ptq_fit.py); change only on that benchmark's evidence.
DEFAULT_PTQ = KUMAR_PTQ
PTQ_FORM = f"post-training quantisation (Kumar et al. 2024, Eq. 2; constants: {DEFAULT_PTQ.name})"


def ptq_degradation(
    params: ArrayLike,
    tokens: ArrayLike,
    post_bits: ArrayLike,
    constants: PtqConstants = DEFAULT_PTQ,
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
        `PtqConstants` (default `DEFAULT_PTQ`: Kumar et al. 2024's, as read).
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
    constants: PtqConstants = DEFAULT_PTQ,
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
