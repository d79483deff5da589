"""Multi-token-prediction (MTP) heads as a speculative draft (DeepSeek-V3, arXiv
2412.19437, section 2.2 and 5.4.3).

DeepSeek-V3's MTP module ``k`` predicts token ``t + k + 1`` from the main model's last
hidden state and the embedding of token ``t + k``: two RMSNorms, a projection
``M: 2h -> h``, one transformer block like the main model's MoE layers, and the main
model's embedding and output head (shared, not duplicated). Used as a draft, each
drafted token costs one pass of that block plus the projection and the shared head:

- `mtp_draft` is that pass as a `ModelConfig`: the target with one MoE layer (the MTP
  block; leading dense layers dropped) and no vision tower or adapters. The projection
  (``2 h^2`` parameters, 0.1 B for DeepSeek-V3) is counted in `mtp_parameters` and its
  2 h^2 FLOP per token are below 1 % of the block's, so the pass omits it.
- the draft shares the target's embedding and LM head, so its resident weights exclude
  them (`genz.speculative_decoding`'s ``draft_shares_embeddings``).

The paper reports an acceptance rate of 85-90 % for the second token, giving 1.8x
tokens per second with one MTP module (draft tokens ``k = 1``).
"""

from __future__ import annotations

import dataclasses

from roofline import InputError

from .model import ModelConfig
from .params import parameter_count

#: DeepSeek-V3's reported acceptance of the MTP-drafted second token (section 5.4.3).
PUBLISHED_ACCEPTANCE = (0.85, 0.90)


def mtp_draft(model: ModelConfig) -> ModelConfig:
    """The pass of one MTP module of ``model`` as a draft model (module doc)."""
    if not model.mtp_layers:
        raise InputError(
            f"--draft mtp: {model.name} has no multi-token-prediction module "
            "(num_nextn_predict_layers in its config.json; e.g. deepseek-v3)"
        )
    return dataclasses.replace(
        model,
        num_layers=1,
        first_dense_layers=0,
        moe_layer_freq=1,
        moe_layer_offset=0,
        layer_types=model.layer_types[-1:],
        vision=None,
        mtp_layers=0,
        name=f"{model.name} MTP head",
    )


def mtp_parameters(model: ModelConfig) -> float:
    """Parameters of one MTP module with its own copies of the embedding and output
    head, as a checkpoint stores them: block + ``2 h^2`` projection + 2 h norm weights
    + embedding + head."""
    draft = parameter_count(mtp_draft(model))
    h = float(model.hidden_size)
    return draft.total + 2 * h * h + 2 * h
