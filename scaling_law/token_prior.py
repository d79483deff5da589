"""``chinchilla-shape-beta-prior``: the shape-aware law with its data exponent held at a
published value, so that its compute-optimal tokens per parameter stays near-constant.

Why: the Gemstones cooldown runs span one decade of tokens (11-110B), too little to pin
the data exponent: the free fit's beta (0.516) exceeds alpha (0.331), so its compute-optimal
tokens per parameter falls from 48 at 1e19 FLOP to 2.3 at 1e25 (`scaling_law.compute_optimal`),
unlike Hoffmann et al. (2022; ~20, near-constant) and the Gemstones authors' own
convex-hull fit ("close to constant, like Chinchilla, but slightly higher"). Holding beta at
Besiroglu et al.'s (2024) refit of the Chinchilla runs (which span tokens per parameter
0.46-341) costs no held-out accuracy on Gemstones (`benchmarks/tokens_per_parameter.py`).
"""

from __future__ import annotations

import dataclasses

from .forms import CHINCHILLA_SHAPE, Features, _shape_fixed, register_form

#: Data exponent of Besiroglu, Erdil, Barnett, You (2024), "Chinchilla Scaling: A
#: replication attempt" (arXiv 2404.10102), their fit of Hoffmann et al.'s Figure 4 runs:
#: L = 1.82 + 482.01 / N^0.3478 + 2085.43 / D^0.3658.
BESIROGLU_BETA = 0.3658
_BETA_INDEX = CHINCHILLA_SHAPE.public_names.index("beta")


def _fixed_with_beta(features: Features) -> dict[int, float]:
    """The shape form's unidentifiable coefficients, and beta at `BESIROGLU_BETA`."""
    return {**_shape_fixed(features), _BETA_INDEX: BESIROGLU_BETA}


CHINCHILLA_SHAPE_BETA_PRIOR = register_form(
    dataclasses.replace(
        CHINCHILLA_SHAPE,
        name="chinchilla-shape-beta-prior",
        fixed_parameters=_fixed_with_beta,
        description=(
            "chinchilla-shape with beta held at Besiroglu et al. (2024)'s Chinchilla refit, "
            f"{BESIROGLU_BETA}"
        ),
    )
)
