"""Per-layer sensitivities from real weights (``codesign quantize --weights``).

For every weight tensor of a ``.safetensors`` or ``.gguf`` file and every candidate
format, the tensor is quantised with that format's real block structure and the squared
error is summed, optionally weighted per input column by a llama.cpp importance matrix::

    sens[u, f] = sum_{tensors t of unit u} sum_{i, j} imp_t[j] * (Q_f(W_t) - W_t)[i, j]^2

``imp_t[j]`` is the mean squared activation of input column ``j`` (llama.cpp's
``imatrix``; 1 without one), so the sum is the expected squared output error
``E ||(Q_f(W) - W) x||^2`` for inputs with those second moments and uncorrelated
columns. Formats and their quantisers (the ``gguf`` package's reference
implementations of llama.cpp's formats, blocks along each row of input columns):

=========  =====================================================
format     quantiser
=========  =====================================================
``int8``   ``Q8_0``: blocks of 32, one fp16 scale, symmetric
``int5``   ``Q5_0``: blocks of 32, one fp16 scale
``int4``   ``Q4_0``: blocks of 32, one fp16 scale
``mxfp4``  ``MXFP4``: blocks of 32 FP4 (E2M1), one E8M0 scale
``fp16``   ``F16`` rounding; ``bf16``: ``BF16`` rounding
=========  =====================================================

Other formats are refused by name. Tensor names are read in Hugging Face
(``model.layers.3.mlp.down_proj.weight``) or GGUF (``blk.3.ffn_down.weight``) spelling;
q/k/v make ``attn_qkv``, gate/up ``ffn_up_gate``, ``o_proj``/``attn_output``
``attn_out``, ``lm_head``/``output`` ``lm_head`` (a tied head takes the embedding's
tensor). Norms, biases and unknown tensors are not decision units and are skipped.
A GGUF tensor already quantised is dequantised first, so its error is measured from
the stored values. Importance matrices: llama.cpp's legacy binary ``imatrix.dat`` or
its GGUF form (``<tensor>.in_sum2`` / ``<tensor>.counts``), keyed by GGUF names.
The packages are optional (``pip install 'llm-codesign[weights]'``).
"""

from __future__ import annotations

import re
import struct
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np

from roofline import InputError

from .formats import Format
from .sensitivity import SensitivityTable

#: Largest weight or importance file read, bytes.
MAX_WEIGHTS_BYTES = 64 * 10**9
MAX_IMATRIX_BYTES = 2 * 10**9
#: GGUF tensor role -> decision-unit group.
ROLES = {
    "attn_q": "attn_qkv",
    "attn_k": "attn_qkv",
    "attn_v": "attn_qkv",
    "attn_output": "attn_out",
    "ffn_gate": "ffn_up_gate",
    "ffn_up": "ffn_up_gate",
    "ffn_down": "ffn_down",
}
HF_ROLES = {
    "q_proj": "attn_q",
    "k_proj": "attn_k",
    "v_proj": "attn_v",
    "o_proj": "attn_output",
    "gate_proj": "ffn_gate",
    "up_proj": "ffn_up",
    "down_proj": "ffn_down",
}
MODEL_TENSORS = {
    "lm_head.weight": "output.weight",
    "model.embed_tokens.weight": "token_embd.weight",
    "output.weight": "output.weight",
    "token_embd.weight": "token_embd.weight",
}
_HF = re.compile(r"^(?:model\.)?layers\.(\d+)\.(?:self_attn|mlp)\.(\w+)\.weight$")
_GGUF = re.compile(r"^blk\.(\d+)\.(\w+)\.weight$")
#: Format name -> gguf quantisation type name.
QUANTISERS = {
    "int8": "Q8_0",
    "int5": "Q5_0",
    "int4": "Q4_0",
    "mxfp4": "MXFP4",
    "fp16": "F16",
    "bf16": "BF16",
}


def _gguf() -> Any:
    try:
        import gguf
    except ImportError:
        raise InputError(
            "--weights needs the gguf package: pip install 'llm-codesign[weights]'"
        ) from None
    return gguf


def canonical_name(name: str) -> str | None:
    """The GGUF spelling of a decision-unit tensor (``blk.3.ffn_down.weight``), or None."""
    if name in MODEL_TENSORS:
        return MODEL_TENSORS[name]
    match = _HF.match(name)
    if match and match.group(2) in HF_ROLES:
        return f"blk.{match.group(1)}.{HF_ROLES[match.group(2)]}.weight"
    match = _GGUF.match(name)
    if match and match.group(2) in ROLES:
        return name
    return None


def unit_key(canonical: str) -> tuple[int | None, str]:
    """``(layer, group)`` of a canonical tensor name."""
    if canonical == "output.weight":
        return None, "lm_head"
    if canonical == "token_embd.weight":
        return None, "embedding"
    match = _GGUF.match(canonical)
    assert match is not None
    return int(match.group(1)), ROLES[match.group(2)]


def read_weights(path: str | Path) -> Iterator[tuple[str, np.ndarray]]:
    """``(canonical name, float32 matrix out x in)`` of every decision-unit tensor."""
    source = Path(path)
    if not source.is_file():
        raise InputError(f"--weights {path}: no such file")
    if source.stat().st_size > MAX_WEIGHTS_BYTES:
        raise InputError(f"--weights {path}: larger than {MAX_WEIGHTS_BYTES / 1e9:g} GB")
    suffix = source.suffix.lower()
    if suffix == ".safetensors":
        yield from _safetensors(source)
    elif suffix == ".gguf":
        yield from _gguf_tensors(source)
    else:
        raise InputError(f"--weights {path}: must end in .safetensors or .gguf")


def _safetensors(path: Path) -> Iterator[tuple[str, np.ndarray]]:
    try:
        from safetensors import safe_open
    except ImportError:
        raise InputError(
            "--weights needs the safetensors package: pip install 'llm-codesign[weights]'"
        ) from None
    try:
        handle = safe_open(str(path), framework="numpy")
    except Exception as error:  # the package raises its own error types
        raise InputError(f"--weights {path}: not a safetensors file ({error})") from None
    with handle as tensors:
        for name in tensors.keys():  # noqa: SIM118 (the handle is not a dict)
            canonical = canonical_name(name)
            if canonical is None:
                continue
            try:
                array = tensors.get_tensor(name)
            except Exception as error:  # e.g. bf16, which numpy cannot hold
                raise InputError(
                    f"--weights {path}: tensor {name}: {error}; store F32 or F16"
                ) from None
            yield canonical, _matrix(np.asarray(array, np.float32), name, path)


def _gguf_tensors(path: Path) -> Iterator[tuple[str, np.ndarray]]:
    gguf = _gguf()
    try:
        reader = gguf.GGUFReader(str(path))
    except Exception as error:
        raise InputError(f"--weights {path}: not a GGUF file ({error})") from None
    for tensor in reader.tensors:
        canonical = canonical_name(tensor.name)
        if canonical is None:
            continue
        kind = gguf.GGMLQuantizationType(int(tensor.tensor_type))
        data = np.asarray(tensor.data)
        if kind in (gguf.GGMLQuantizationType.F32, gguf.GGMLQuantizationType.F16):
            values = data.astype(np.float32)
        else:
            values = gguf.quants.dequantize(data, kind).astype(np.float32)
        yield canonical, _matrix(values, tensor.name, path)


def _matrix(array: np.ndarray, name: str, path: Path) -> np.ndarray:
    if array.ndim != 2 or not np.all(np.isfinite(array)):
        raise InputError(f"--weights {path}: tensor {name} must be a finite 2-D matrix")
    return array


def quantisation_error(
    weights: np.ndarray, fmt: Format, importance: np.ndarray | None = None
) -> float:
    """``sum_ij imp[j] (Q_f(W) - W)_ij^2`` with the format's real quantiser (module doc)."""
    gguf = _gguf()
    if fmt.name not in QUANTISERS:
        raise InputError(
            f"--weights: no quantiser for format {fmt.name!r}; accepted: {', '.join(QUANTISERS)}"
        )
    kind = getattr(gguf.GGMLQuantizationType, QUANTISERS[fmt.name])
    block = gguf.GGML_QUANT_SIZES[kind][0]
    if weights.shape[-1] % block:
        raise InputError(
            f"--weights: a row of {weights.shape[-1]} values is not a whole number of "
            f"{block}-value blocks of {QUANTISERS[fmt.name]}"
        )
    restored = gguf.quants.dequantize(gguf.quants.quantize(weights, kind), kind)
    squared = (np.asarray(restored, np.float64) - weights) ** 2
    if importance is not None:
        if importance.shape != (weights.shape[-1],):
            raise InputError(
                f"--imatrix: {importance.size} importances for a tensor of "
                f"{weights.shape[-1]} input columns"
            )
        squared = squared * importance[None, :]
    return float(squared.sum())


def weight_sensitivity(
    path: str | Path,
    formats: Sequence[Format],
    imatrix: Mapping[str, np.ndarray] | None = None,
) -> SensitivityTable:
    """A `SensitivityTable` of ``(layer, group, format)`` from the weights in ``path``."""
    values: dict[tuple[int | None, str, str], float] = {}
    seen: set[str] = set()
    embedding: np.ndarray | None = None
    for canonical, matrix in read_weights(path):
        seen.add(canonical)
        importance = None if imatrix is None else imatrix.get(canonical)
        layer, group = unit_key(canonical)
        if group == "embedding":
            embedding = matrix
        for fmt in formats:
            key = (layer, group, fmt.name)
            values[key] = values.get(key, 0.0) + quantisation_error(matrix, fmt, importance)
    if "output.weight" not in seen and embedding is not None:  # tied LM head
        importance = None if imatrix is None else imatrix.get("output.weight")
        for fmt in formats:
            values[(None, "lm_head", fmt.name)] = quantisation_error(embedding, fmt, importance)
    if not values:
        raise InputError(f"--weights {path}: no attention, FFN, embedding or LM-head tensors")
    return SensitivityTable(MappingProxyType(values), f"weights {path}")


def load_imatrix(path: str | Path) -> dict[str, np.ndarray]:
    """Mean squared activation per input column, by GGUF tensor name, from a llama.cpp
    importance matrix (legacy ``.dat`` or GGUF ``.gguf``)."""
    source = Path(path)
    if not source.is_file():
        raise InputError(f"--imatrix {path}: no such file")
    if source.stat().st_size > MAX_IMATRIX_BYTES:
        raise InputError(f"--imatrix {path}: larger than {MAX_IMATRIX_BYTES / 1e9:g} GB")
    if source.suffix.lower() == ".gguf":
        return _imatrix_gguf(source)
    return _imatrix_legacy(source)


def _imatrix_legacy(path: Path) -> dict[str, np.ndarray]:
    """llama.cpp's legacy format: int32 entries; per entry int32 name length, name, int32
    calls, int32 values, float32 values (sums of squared activations over the calls)."""
    data = path.read_bytes()
    out: dict[str, np.ndarray] = {}
    try:
        (count,) = struct.unpack_from("<i", data, 0)
        offset = 4
        if not 0 < count < 1_000_000:
            raise ValueError(f"{count} entries")
        for _ in range(count):
            (length,) = struct.unpack_from("<i", data, offset)
            offset += 4
            if not 0 < length < 4096:
                raise ValueError(f"name length {length}")
            name = data[offset : offset + length].decode("utf-8")
            offset += length
            calls, size = struct.unpack_from("<ii", data, offset)
            offset += 8
            if calls < 1 or size < 1:
                raise ValueError(f"{name}: {calls} calls, {size} values")
            values = np.frombuffer(data, "<f4", size, offset).astype(np.float64)
            offset += 4 * size
            out[canonical_name(name) or name] = _importance(values / calls, name, path)
    except (struct.error, ValueError, UnicodeDecodeError) as error:
        raise InputError(f"--imatrix {path}: not a llama.cpp imatrix file ({error})") from None
    return out


def _imatrix_gguf(path: Path) -> dict[str, np.ndarray]:
    gguf = _gguf()
    try:
        reader = gguf.GGUFReader(str(path))
    except Exception as error:
        raise InputError(f"--imatrix {path}: not a GGUF file ({error})") from None
    sums = {
        t.name.removesuffix(".in_sum2"): t for t in reader.tensors if t.name.endswith(".in_sum2")
    }
    counts = {
        t.name.removesuffix(".counts"): t for t in reader.tensors if t.name.endswith(".counts")
    }
    out = {}
    for name, tensor in sums.items():
        if name not in counts:
            raise InputError(f"--imatrix {path}: {name}.in_sum2 has no {name}.counts")
        total = np.asarray(tensor.data, np.float64).reshape(-1)
        calls = float(np.asarray(counts[name].data, np.float64).reshape(-1)[0])
        if calls <= 0:
            raise InputError(f"--imatrix {path}: {name}.counts must be > 0")
        out[canonical_name(name) or name] = _importance(total / calls, name, path)
    if not out:
        raise InputError(f"--imatrix {path}: no '<tensor>.in_sum2' entries")
    return out


def _importance(values: np.ndarray, name: str, path: Path) -> np.ndarray:
    if not np.all(np.isfinite(values)) or np.any(values < 0):
        raise InputError(f"--imatrix {path}: {name} must hold finite values >= 0")
    return values
