"""Decoder-only transformer hyper-parameters and their parameter counts, vectorised.

Every field of `Architecture` is a scalar or a numpy array (all broadcast
together), so one object can describe a whole grid of candidate models.

Counting convention (`count_parameters`): Llama-style blocks with no biases and
rotary positions (no position table). Per layer: attention ``W_q`` (hidden x
heads*head_dim), ``W_k`` and ``W_v`` (hidden x kv_heads*head_dim each), ``W_o``
(heads*head_dim x hidden); FFN of 2 (plain) or 3 (gated, e.g. SwiGLU) matrices
hidden x ffn per expert; a router (hidden x experts) when experts > 1; two norm
gains (hidden each). One final norm (hidden). Input embedding vocab x hidden and
an LM head of the same size unless tied.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np
from numpy.typing import ArrayLike, NDArray

from roofline import InputError

DEFAULT_HEAD_DIM = 128
DEFAULT_FFN_MULTIPLIER = 4.0
DEFAULT_VOCAB = 32_000

Array = NDArray[np.float64]


@dataclass(frozen=True, eq=False)
class Architecture:
    """Hyper-parameters of a dense or MoE decoder (scalars or broadcastable arrays).

    Parameters
    ----------
    layers, hidden
        Number of blocks and model width (d_model).
    ffn
        FFN intermediate size per expert; default ``4 * hidden`` (plain FFN).
    heads
        Query heads; default ``max(1, hidden // 128)``.
    kv_heads
        Key/value heads (GQA groups); default ``heads`` (multi-head attention).
        Must divide ``heads``.
    head_dim
        Per-head width; default ``hidden / heads`` (``hidden`` must then divide).
    vocab
        Vocabulary size; default 32,000 (the Chinchilla tokenizer).
    gated_ffn
        True for gated FFNs (SwiGLU/GeGLU: three matrices), False for two.
    experts, top_k
        Routed experts per MoE layer and experts active per token (1, 1 = dense).
    tie_embeddings
        True when the LM head shares the input embedding matrix.
    """

    layers: ArrayLike
    hidden: ArrayLike
    ffn: ArrayLike | None = None
    heads: ArrayLike | None = None
    kv_heads: ArrayLike | None = None
    head_dim: ArrayLike | None = None
    vocab: ArrayLike = DEFAULT_VOCAB
    gated_ffn: ArrayLike = False
    experts: ArrayLike = 1
    top_k: ArrayLike = 1
    tie_embeddings: ArrayLike = False

    def __post_init__(self) -> None:
        layers = _whole("layers", self.layers)
        hidden = _whole("hidden", self.hidden)
        ffn = hidden * DEFAULT_FFN_MULTIPLIER if self.ffn is None else _whole("ffn", self.ffn)
        if self.heads is None:
            heads = np.maximum(1.0, np.floor(hidden / DEFAULT_HEAD_DIM))
        else:
            heads = _whole("heads", self.heads)
        kv_heads = heads if self.kv_heads is None else _whole("kv_heads", self.kv_heads)
        _require(np.mod(heads, kv_heads) == 0, "kv_heads must divide heads", heads, kv_heads)
        if self.head_dim is None:
            _require(
                np.mod(hidden, heads) == 0,
                "hidden must be divisible by heads (or pass head_dim)",
                hidden,
                heads,
            )
            head_dim = hidden / heads
        else:
            head_dim = _whole("head_dim", self.head_dim)
        experts = _whole("experts", self.experts)
        top_k = _whole("top_k", self.top_k)
        _require(top_k <= experts, "top_k must be <= experts", top_k, experts)
        values = {
            "layers": layers,
            "hidden": hidden,
            "ffn": ffn,
            "heads": heads,
            "kv_heads": kv_heads,
            "head_dim": head_dim,
            "vocab": _whole("vocab", self.vocab),
            "gated_ffn": _flag("gated_ffn", self.gated_ffn),
            "experts": experts,
            "top_k": top_k,
            "tie_embeddings": _flag("tie_embeddings", self.tie_embeddings),
        }
        try:
            broadcast = np.broadcast_arrays(*values.values())
        except ValueError:
            shapes = {name: np.shape(value) for name, value in values.items()}
            raise InputError(f"architecture fields do not broadcast together: {shapes}") from None
        for name, value in zip(values, broadcast, strict=True):
            object.__setattr__(self, name, value)

    @property
    def shape(self) -> tuple[int, ...]:
        """Common (broadcast) shape of the fields; ``()`` for one architecture."""
        return np.shape(self.layers)

    @property
    def aspect_ratio(self) -> Array:
        """Depth-to-width shape as width per layer, ``hidden / layers``."""
        return _float(self.hidden) / _float(self.layers)

    @property
    def ffn_ratio(self) -> Array:
        """FFN intermediate size over width, ``ffn / hidden``."""
        return _float(self.ffn) / _float(self.hidden)

    @property
    def gqa_ratio(self) -> Array:
        """Query heads per key/value head, ``heads / kv_heads`` (1 = multi-head)."""
        return _float(self.heads) / _float(self.kv_heads)

    def counts(self) -> ParameterCounts:
        """Parameter counts of this architecture (see `count_parameters`)."""
        return count_parameters(self)

    def describe(self) -> dict[str, object]:
        """Fields as plain Python values (scalars stay scalars), for JSON."""
        return {field.name: _plain(getattr(self, field.name)) for field in fields(self)}


@dataclass(frozen=True, eq=False)
class ParameterCounts:
    """Parameter counts (arrays shaped like the architecture fields).

    ``total`` counts every weight; ``active`` counts the weights used per token
    (MoE: ``top_k`` of ``experts``; equal to ``total`` for dense models). The
    ``*_non_embedding`` variants leave out the input embedding and the LM head.
    """

    total: Array
    active: Array
    total_non_embedding: Array
    active_non_embedding: Array
    embedding: Array

    def select(self, include_embeddings: bool, moe_parameters: str) -> Array:
        """The count a scaling law uses: embeddings in or out, MoE active or total."""
        if moe_parameters not in ("active", "total"):
            raise InputError(f"moe_parameters must be 'active' or 'total', got {moe_parameters!r}")
        if moe_parameters == "active":
            return self.active if include_embeddings else self.active_non_embedding
        return self.total if include_embeddings else self.total_non_embedding

    def to_dict(self) -> dict[str, object]:
        """Counts as plain numbers (scalars) or lists."""
        return {field.name: _plain(getattr(self, field.name)) for field in fields(self)}


def count_parameters(architecture: Architecture) -> ParameterCounts:
    """Count parameters of (a grid of) decoder architectures; pure and vectorised.

    Parameters
    ----------
    architecture
        Hyper-parameters; see the module docstring for the counting convention.

    Returns
    -------
    ParameterCounts
        Total and active counts, with and without embeddings, as float64 arrays
        (exact for counts below 2**53).
    """
    arch = architecture
    layers, hidden, ffn = _float(arch.layers), _float(arch.hidden), _float(arch.ffn)
    heads, kv_heads, head_dim = _float(arch.heads), _float(arch.kv_heads), _float(arch.head_dim)
    experts, top_k, vocab = _float(arch.experts), _float(arch.top_k), _float(arch.vocab)
    attention = hidden * head_dim * (heads + 2 * kv_heads) + heads * head_dim * hidden
    ffn_per_expert = np.where(arch.gated_ffn, 3.0, 2.0) * hidden * ffn
    router = np.where(experts > 1, hidden * experts, 0.0)
    shared = attention + router + 2 * hidden
    total_non_embedding = layers * (shared + experts * ffn_per_expert) + hidden
    active_non_embedding = layers * (shared + top_k * ffn_per_expert) + hidden
    embedding = vocab * hidden * np.where(arch.tie_embeddings, 1.0, 2.0)
    return ParameterCounts(
        total=total_non_embedding + embedding,
        active=active_non_embedding + embedding,
        total_non_embedding=total_non_embedding,
        active_non_embedding=active_non_embedding,
        embedding=embedding,
    )


def _whole(field: str, value: ArrayLike) -> Array:
    """``value`` as a float array of whole numbers >= 1, else `InputError`."""
    try:
        array = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise InputError(
            f"architecture.{field} must be a whole number >= 1, got {value!r}"
        ) from None
    bad = ~(np.isfinite(array) & (array >= 1) & (array == np.round(array)))
    if np.any(bad):
        raise InputError(
            f"architecture.{field} must be a whole number >= 1, got {_first(array, bad)}"
        )
    return array


def _flag(field: str, value: ArrayLike) -> NDArray[np.bool_]:
    array = np.asarray(value)
    if array.dtype != bool:
        numeric = np.asarray(value, dtype=float)
        if np.any((numeric != 0) & (numeric != 1)):
            raise InputError(f"architecture.{field} must be true/false (1/0), got {value!r}")
        array = numeric.astype(bool)
    return array


def _require(ok: NDArray[np.bool_], message: str, left: Array, right: Array) -> None:
    bad = ~np.asarray(ok)
    if np.any(bad):
        where = "" if bad.ndim == 0 else f" at index {int(np.flatnonzero(bad)[0])}"
        first_left = np.broadcast_to(left, bad.shape)[bad].flat[0]
        first_right = np.broadcast_to(right, bad.shape)[bad].flat[0]
        raise InputError(f"architecture: {message}, got {first_left:g} and {first_right:g}{where}")


def _first(array: Array, bad: NDArray[np.bool_]) -> str:
    if array.ndim == 0:
        return f"{float(array):g}"
    index = int(np.flatnonzero(bad)[0])
    return f"{array.flat[index]:g} at index {index}"


def _plain(value: np.ndarray) -> object:
    array = np.asarray(value)
    return array.item() if array.ndim == 0 else array.tolist()


def _float(value: ArrayLike | None) -> Array:
    """A field as a float64 array (fields are broadcast arrays after construction)."""
    return np.asarray(value, dtype=np.float64)
