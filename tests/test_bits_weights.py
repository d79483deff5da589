"""Per-layer sensitivities from real weights (issue #27): generated tensors of known
structure written to safetensors and GGUF files, llama.cpp importance matrices, and the
ILP allocation they change (``codesign quantize --weights``)."""

from __future__ import annotations

import contextlib
import io
import json
import struct
from pathlib import Path

import numpy as np
import pytest

gguf = pytest.importorskip("gguf")
safetensors_numpy = pytest.importorskip("safetensors.numpy")

from app import cli  # noqa: E402
from roofline import InputError  # noqa: E402
from search.bits import (  # noqa: E402
    load_imatrix,
    parse_formats,
    quantisation_error,
    weight_sensitivity,
)

HIDDEN, FFN, LAYERS, KV, VOCAB = 128, 256, 4, 2, 256
CONFIG = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_act": "silu",
    "hidden_size": HIDDEN,
    "num_hidden_layers": LAYERS,
    "num_attention_heads": 4,
    "num_key_value_heads": KV,
    "intermediate_size": FFN,
    "vocab_size": VOCAB,
    "tie_word_embeddings": False,
    "_name": "tiny-generated",
}
#: Layers whose weights carry outliers (1 in 256 entries 30x larger): their blocks get a
#: coarse 4-bit grid, so 4-bit costs them far more than the Gaussian layers.
OUTLIER_LAYERS = (0, 1)


def tensors(seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    head = HIDDEN // 4
    shapes = {
        "self_attn.q_proj": (HIDDEN, HIDDEN),
        "self_attn.k_proj": (KV * head, HIDDEN),
        "self_attn.v_proj": (KV * head, HIDDEN),
        "self_attn.o_proj": (HIDDEN, HIDDEN),
        "mlp.gate_proj": (FFN, HIDDEN),
        "mlp.up_proj": (FFN, HIDDEN),
        "mlp.down_proj": (HIDDEN, FFN),
    }
    out = {}
    for layer in range(LAYERS):
        for role, shape in shapes.items():
            values = rng.standard_normal(shape).astype(np.float32) * 0.02
            if layer in OUTLIER_LAYERS:
                spikes = rng.random(shape) < 1 / 256
                values[spikes] *= 30
            out[f"model.layers.{layer}.{role}.weight"] = values
        out[f"model.layers.{layer}.input_layernorm.weight"] = np.ones(HIDDEN, np.float32)
    out["model.embed_tokens.weight"] = rng.standard_normal((VOCAB, HIDDEN)).astype(np.float32)
    out["lm_head.weight"] = rng.standard_normal((VOCAB, HIDDEN)).astype(np.float32) * 0.02
    return out


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("weights")
    weights = tensors()
    safetensors_numpy.save_file(weights, str(folder / "model.safetensors"))
    writer = gguf.GGUFWriter(str(folder / "model.gguf"), "llama")
    renames = {
        "self_attn.q_proj": "attn_q",
        "self_attn.k_proj": "attn_k",
        "self_attn.v_proj": "attn_v",
        "self_attn.o_proj": "attn_output",
        "mlp.gate_proj": "ffn_gate",
        "mlp.up_proj": "ffn_up",
        "mlp.down_proj": "ffn_down",
    }
    for name, values in weights.items():
        if name == "model.embed_tokens.weight":
            writer.add_tensor("token_embd.weight", values)
        elif name == "lm_head.weight":
            writer.add_tensor("output.weight", values)
        elif "layernorm" not in name:
            layer = name.split(".")[2]
            role = renames[".".join(name.split(".")[3:5])]
            writer.add_tensor(f"blk.{layer}.{role}.weight", values)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    (folder / "config.json").write_text(json.dumps(CONFIG))
    return {
        "safetensors": folder / "model.safetensors",
        "gguf": folder / "model.gguf",
        "config": folder / "config.json",
        "folder": folder,
    }


def test_error_follows_the_block_quantiser() -> None:
    rng = np.random.default_rng(1)
    weights = rng.standard_normal((64, 256)).astype(np.float32)
    int8, int4 = parse_formats("8,4")
    # Q8_0 by hand: blocks of 32, scale max|w| / 127 stored in fp16 (llama.cpp rounds with
    # the fp32 scale, stores the fp16 one: 0.1% apart here).
    blocks = weights.reshape(-1, 32).astype(np.float64)
    scale8 = np.abs(blocks).max(axis=1, keepdims=True) / 127
    stored = scale8.astype(np.float16).astype(np.float64)
    by_hand = ((np.round(blocks / scale8) * stored - blocks) ** 2).sum()
    assert quantisation_error(weights, int8) == pytest.approx(by_hand, rel=1e-4)
    ratio = quantisation_error(weights, int4) / quantisation_error(weights, int8)
    assert 150 < ratio < 400  # about (2^4)^2 = 256 for the extra 4 bits
    importance = np.zeros(256)
    importance[:32] = 3.0
    weighted = quantisation_error(weights, int4, importance)
    assert weighted == pytest.approx(3 * quantisation_error(weights[:, :32], int4), rel=1e-9)
    with pytest.raises(InputError, match="no quantiser for format 'fp8'"):
        quantisation_error(weights, parse_formats("fp8")[0])
    with pytest.raises(InputError, match="not a whole number of 32-value blocks"):
        quantisation_error(weights[:, :40], int4)


def test_safetensors_and_gguf_give_the_same_per_layer_table(files: dict[str, Path]) -> None:
    formats = parse_formats("16,8,4")
    table = weight_sensitivity(files["safetensors"], formats).values
    again = weight_sensitivity(files["gguf"], formats).values
    assert set(table) == set(again)
    for key, value in table.items():
        assert again[key] == pytest.approx(value, rel=1e-6), key
    # 4 layers x 4 groups + embedding + LM head, at three formats; norms skipped.
    assert len(table) == (LAYERS * 4 + 2) * 3
    for group in ("attn_qkv", "ffn_down"):
        outlier = table[(0, group, "int4")]
        gaussian = table[(3, group, "int4")]
        assert outlier > 3 * gaussian, group  # the known structure shows
        assert table[(0, group, "fp16")] < 1e-3 * table[(0, group, "int8")]


def test_imatrix_legacy_and_gguf_weight_the_error(files: dict[str, Path]) -> None:
    folder = files["folder"]
    down = "blk.3.ffn_down.weight"
    importance = np.linspace(0.0, 2.0, FFN).astype(np.float32)
    calls = 4
    name = down.encode()
    legacy = struct.pack("<i", 1) + struct.pack("<i", len(name)) + name
    legacy += struct.pack("<ii", calls, FFN) + (importance * calls).astype("<f4").tobytes()
    (folder / "imatrix.dat").write_bytes(legacy)
    loaded = load_imatrix(folder / "imatrix.dat")
    assert np.allclose(loaded[down], importance, rtol=1e-6)
    writer = gguf.GGUFWriter(str(folder / "imatrix.gguf"), "imatrix")
    writer.add_tensor(f"{down}.in_sum2", importance * calls)
    writer.add_tensor(f"{down}.counts", np.array([calls], np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    assert np.allclose(load_imatrix(folder / "imatrix.gguf")[down], importance, rtol=1e-6)
    formats = parse_formats("8,4")
    plain = weight_sensitivity(files["safetensors"], formats).values
    weighted = weight_sensitivity(files["safetensors"], formats, loaded).values
    matrix = tensors()["model.layers.3.mlp.down_proj.weight"]
    expected = quantisation_error(matrix, formats[1], importance.astype(np.float64))
    assert weighted[(3, "ffn_down", "int4")] == pytest.approx(expected, rel=1e-9)
    assert weighted[(3, "ffn_down", "int4")] != pytest.approx(plain[(3, "ffn_down", "int4")])
    assert weighted[(2, "ffn_down", "int4")] == plain[(2, "ffn_down", "int4")]  # no entry
    (folder / "bad.dat").write_bytes(b"\x01\x00")
    with pytest.raises(InputError, match=r"not a llama\.cpp imatrix file"):
        load_imatrix(folder / "bad.dat")


def run(*argv: str) -> dict:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        cli.main(["quantize", *argv])
    return json.loads(out.getvalue())


def test_the_ilp_puts_4_bits_where_the_weights_tolerate_them(files: dict[str, Path]) -> None:
    """Budget: about half of the FFN and attention weights can stay at 8 bits. The proxy
    gives every layer of a group the same row (ties); the real weights send 4 bits to the
    Gaussian layers 2-3 and keep the outlier layers 0-1 at 8 bits."""
    common = ["--model", str(files["config"]), "--hw", "jetson-orin-nano-8gb"]
    common += ["--bits", "8,4", "--max-weights-gb", "0.00053", "--json"]
    proxy = run(*common)
    real = run(*common, "--weights", str(files["safetensors"]))

    def formats(payload: dict) -> dict[tuple[int, str], str]:
        return {
            (row["layer"], row["group"]): row["format"]
            for row in payload["allocation"]
            if row["layer"] is not None
        }

    chosen = formats(real)
    low = [key for key, name in chosen.items() if name == "int4"]
    assert low, "the budget must force some 4-bit layers"
    assert all(layer not in OUTLIER_LAYERS for layer, _ in low)
    assert any(name == "int8" for (layer, _), name in chosen.items() if layer in OUTLIER_LAYERS)
    assert formats(proxy) != chosen  # the proxy's tie-break differs
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = cli.main(["quantize", *common, "--imatrix", str(files["safetensors"])])
    assert code == 2 and "--imatrix needs --weights" in err.getvalue()
    assert err.getvalue().count("\n") == 1
