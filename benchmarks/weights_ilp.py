"""Real per-layer sensitivities change the ILP's allocation (issue #27): a generated 4-layer
model whose layers 0-1 carry outliers (1 weight in 256 is 30x larger), written to a
temporary safetensors file; ``codesign quantize`` at one weight budget with the weight-free
proxy and with ``--weights``. Printed: both allocations, the total measured quantisation
error (sum of squared errors of the real block quantisers, `search.bits.weights`) of each,
and the parameter-weighted mean bits (the only thing the law's PTQ term sees, so its
predicted loss moves only by what that mean moves).

Run: ``python benchmarks/weights_ilp.py`` (about 10 s; needs the ``weights`` extra).
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app import cli
from search.bits import parse_formats, weight_sensitivity

HIDDEN, FFN, LAYERS, KV, VOCAB = 128, 256, 4, 2, 256
BUDGET_GB = "0.00053"  # about halfway between all-int4 (0.38 MB) and all-int8 (0.69 MB)


def write_model(folder: Path) -> None:
    from safetensors.numpy import save_file

    rng = np.random.default_rng(0)
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
    tensors = {}
    for layer in range(LAYERS):
        for role, shape in shapes.items():
            values = rng.standard_normal(shape).astype(np.float32) * 0.02
            if layer < 2:
                values[rng.random(shape) < 1 / 256] *= 30
            tensors[f"model.layers.{layer}.{role}.weight"] = values
    tensors["model.embed_tokens.weight"] = rng.standard_normal((VOCAB, HIDDEN)).astype(np.float32)
    tensors["lm_head.weight"] = rng.standard_normal((VOCAB, HIDDEN)).astype(np.float32) * 0.02
    save_file(tensors, str(folder / "model.safetensors"))
    config = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_act": "silu",
        "hidden_size": HIDDEN,
        "num_hidden_layers": LAYERS,
        "num_attention_heads": 4,
        "num_key_value_heads": KV,
        "intermediate_size": FFN,
        "vocab_size": VOCAB,
        "_name": "generated-outliers",
    }
    (folder / "config.json").write_text(json.dumps(config))


def allocate(folder: Path, *extra: str) -> list[dict]:
    out = io.StringIO()
    argv = ["quantize", "--model", str(folder / "config.json"), "--hw", "jetson-orin-nano-8gb"]
    argv += ["--bits", "8,4", "--max-weights-gb", BUDGET_GB, "--json", *extra]
    with contextlib.redirect_stdout(out):
        code = cli.main(argv)
    if code:
        raise SystemExit(f"quantize failed ({code})")
    return json.loads(out.getvalue())["allocation"]


def main() -> None:
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        write_model(folder)
        weights = folder / "model.safetensors"
        table = weight_sensitivity(weights, parse_formats("8,4")).values
        results = {
            "proxy": allocate(folder),
            "--weights": allocate(folder, "--weights", str(weights)),
        }
    print(
        f"generated model: {LAYERS} layers x {HIDDEN}, outliers in layers 0-1; budget {BUDGET_GB} GB"
    )
    for label, rows in results.items():
        error = sum(table[(r["layer"], r["group"], r["format"])] for r in rows)
        params = sum(r["params"] for r in rows)
        mean_bits = sum(r["params"] * r["bits"] for r in rows) / params
        int4 = [
            f"L{r['layer']}.{r['group']}" if r["layer"] is not None else r["group"]
            for r in rows
            if r["format"] == "int4"
        ]
        print(
            f"\n{label}: measured error {error:.4g} (sum of squared errors), "
            f"parameter-weighted mean bits {mean_bits:.3f}"
        )
        print("  int4: " + ", ".join(int4))
    proxy, real = (
        sum(table[(r["layer"], r["group"], r["format"])] for r in results[k])
        for k in ("proxy", "--weights")
    )
    print(f"\nmeasured error, --weights allocation / proxy allocation: {real / proxy:.3f}")


if __name__ == "__main__":
    main()
