"""Write ``ngl_runs.csv`` from ``eval_ms_by_ngl.txt`` (the transcribed llama.cpp ``-ngl``
sweep; README.md says where every number comes from).

One row per published ``-ngl`` value: the model preset, the ``--gpu-layers`` value that
expresses it (blank where none does, with the reason), ms per generated token and the
tokens/s it implies. ``tests/test_ngl_validation.py`` re-runs this and compares bytes.

    python data/validation/ngl/convert.py
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

HERE = Path(__file__).resolve().parent
RAW = HERE / "eval_ms_by_ngl.txt"
OUT = HERE / "ngl_runs.csv"

SOURCE = (
    "github:JohannesGaessler/johannesgaessler.github.io "
    "llamacpp_performance/gpu_layers_benchmark_RTX3090.py@a68ebb3e eval_time_{label}"
)
#: Published label -> model preset (blank: no preset; LLaMA-1 13B has Llama 2 13B's shapes).
MODELS = {"7b": "llama-7b", "13b": "llama-2-13b", "33b": ""}
#: llama.cpp q4_0: 4-bit weights + one fp16 scale per 32 = 4.5 bits; f16 activations and KV.
QUANT_BITS = {"q4_0": 4.5}
COLUMNS = (
    "source_model",
    "model",
    "quant",
    "weight_bits",
    "hardware",
    "host_hardware",
    "layers",
    "ngl",
    "gpu_layers",
    "not_expressed",
    "test",
    "input_tokens",
    "output_tokens",
    "tpot_ms",
    "tokens_per_s",
    "source",
)


def gpu_layers(ngl: int, layers: int) -> tuple[str, str]:
    """(``--gpu-layers`` value, reason it is blank) for one published ``-ngl``.

    In that llama.cpp (2023-07) ``-ngl n <= L`` put n repeating layers on the GPU and kept
    the output layer on the CPU; ``-ngl L + 1`` moved the output layer too. The model puts
    the output layer on the device once any layer is there, so ``-ngl L`` (every layer on
    the GPU but the output layer) has no ``--gpu-layers`` value; 1..L-1 map with that
    small placement difference (README.md)."""
    if ngl == layers:
        return "", "output layer on the host with every repeating layer on the device"
    return str(min(ngl, layers)), ""


def rows(text: str) -> list[dict[str, str]]:
    """The CSV rows of the transcription ``text``."""
    out: list[dict[str, str]] = []
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        label, quant, layers_text, *values = line.split()
        layers = int(layers_text)
        if len(values) != layers + 2:
            raise ValueError(f"{label}: {len(values)} values, expected L + 2 = {layers + 2}")
        model = MODELS[label]
        for ngl, value in enumerate(values):
            n, reason = gpu_layers(ngl, layers)
            if not model:
                n, reason = "", "no model preset for LLaMA-33B in data/models/"
            ms = float(value)
            out.append(
                {
                    "source_model": f"LLaMA {label} {quant}",
                    "model": model,
                    "quant": quant,
                    "weight_bits": str(QUANT_BITS[quant]),
                    "hardware": "rtx-3090",
                    "host_hardware": "ryzen-7-3700x",
                    "layers": str(layers),
                    "ngl": str(ngl),
                    "gpu_layers": n,
                    "not_expressed": reason,
                    "test": "tg",
                    "input_tokens": "1",
                    "output_tokens": "128",
                    "tpot_ms": value,
                    "tokens_per_s": f"{1000.0 / ms:.3f}",
                    "source": SOURCE.format(label=label),
                }
            )
    return out


def render(text: str) -> str:
    """``ngl_runs.csv``'s content for the transcription ``text``."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows(text))
    return buffer.getvalue()


def main() -> None:
    OUT.write_text(render(RAW.read_text()))
    print(f"wrote {OUT} ({len(rows(RAW.read_text()))} rows)")


if __name__ == "__main__":
    main()
