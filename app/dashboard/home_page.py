"""Home page: what the dashboard computes and how, with one worked example from the
library, then every model preset with its config's source and every hardware preset
with its datasheet source (links where the source names an address)."""

from __future__ import annotations

import re

import pandas as pd
import streamlit as st

from app.dashboard.common import checked, docs_link, tokens_per_s
from app.dashboard.state import Selection, cached_model, prediction, preset_platform
from app.formatting import human_bytes, human_rate, human_seconds
from genz import list_models
from roofline import list_platforms

#: A web address inside a preset's ``source`` text (``huggingface.co/org/name ...``).
ADDRESS = re.compile(r"\b((?:[a-z0-9-]+\.)+(?:com|org|io|co|ai|net|gov|edu)(?:/[^\s,;)\"']*)?)")

METHOD = """
**What it predicts.** Time to first token (TTFT), time per output token (TPOT),
end-to-end latency, throughput and memory per device for one LLM on one platform, in a
serving scenario (batch, prompt and output tokens, weight / activation / KV-cache bits,
parallelism). Every number on every page is printed by one `codesign` command, shown in
the page's *Reproduce with the CLI* box.

**The roofline.** Each operator of a layer (QKV, attention, output projection, FFN or
MoE experts, norms, LM head) does FLOP and moves bytes. Its time is
`max(FLOP / (peak x compute efficiency), bytes / (bandwidth x memory efficiency))` plus a
fixed kernel overhead. Its *operational intensity* is `OI = FLOP / byte`; the platform's
*ridge point* is `peak / bandwidth`. Operators with OI below the ridge are
memory-bound, above it compute-bound. Prefill (the whole prompt at once) has high OI;
decode (one token per sequence per step) reads every weight for a few FLOP per byte.

**Capacity footprint (CF).** `weights + KV cache + activations` per device. Above the
device's capacity the design does not run (the *capacity wall*): shard it, quantise it,
or shorten the context. KV cache bytes = `batch x context x layers x 2 x KV heads x
head dim x KV bits / 8` (MLA keeps a latent per token instead).

**Parallelism.** Tensor parallelism (TP) splits each matrix over devices and adds an
all-reduce per layer over the links; pipeline parallelism (PP) splits the layers into
stages; expert parallelism (EP) spreads MoE experts; data parallelism (DP) runs
independent replicas (throughput, not latency). Devices = TP x PP x EP x DP.

**Quantisation.** Fewer weight bits mean fewer bytes per decode step (faster when
memory-bound) and a smaller footprint; fewer KV bits shrink the cache. The Precision
page picks bits per layer with an integer program within memory and TPOT budgets.

**Batching.** A larger batch shares each weight read among more sequences: decode OI
and throughput grow until the step becomes compute-bound or the KV cache fills the
memory. The Serving page simulates continuous batching under Poisson arrivals.

**Serving stacks.** The `ideal` runtime is physics alone; a shipped profile (vLLM,
TensorRT-LLM, ...) adds efficiencies and overheads fitted on published runs, with
80 % intervals from held-out errors (the Accuracy page).
"""

#: Every page after Home, in the menu's order (`app.dashboard.main.PAGES`), and what it shows.
PAGES = (
    ("Roofline", "every operator on the platform's roofline, its bound and OI"),
    ("Latency", "TTFT, TPOT, throughput, per-operator time, TPOT against context and batch"),
    ("Memory", "footprint per device against capacity, the capacity wall"),
    ("Compare", "any number of platforms x models x use cases side by side"),
    ("Hardware designer", "a device built from compute, memory, SRAM and node: speed, cost"),
    ("Accuracy", "predictions against published measurements, out of sample; your runs"),
    ("Precision", "mixed-precision bit allocation within memory / TPOT budgets"),
    ("Serving", "a replica (or prefill/decode pools) under load, P50/P99 against the rate"),
    ("Co-design", "the Pareto frontier of a hardware x model x precision space"),
)


def source_link(source: str) -> str | None:
    """The first web address a preset's source names, as a URL; None if it names none."""
    found = ADDRESS.search(source)
    if found is None:
        return None
    url = f"https://{found.group(1)}"
    if url.startswith("https://huggingface.co/") and "config.json" in source:
        return f"{url}/blob/main/config.json"  # the config itself, not the model card
    return url


@st.cache_data(show_spinner=False)
def model_table() -> pd.DataFrame:
    """Every model preset: name, published parameters, layers, width and its source."""
    rows = []
    for name in list_models():
        model = cached_model(name, None)
        rows.append(
            {
                "model": name,
                "parameters": f"{model.published_params / 1e9:.3g} B"
                if model.published_params
                else "",
                "layers": model.num_layers,
                "hidden size": model.hidden_size,
                "config source": model.source,
                "link": source_link(model.source or "") or "",
            }
        )
    return pd.DataFrame(rows)


@st.cache_data(show_spinner=False)
def hardware_table() -> pd.DataFrame:
    """Every hardware preset: peak (16-bit), memory bandwidth and capacity, its source."""
    rows = []
    for name in list_platforms():
        platform = preset_platform(name)
        memory = platform.main_memory
        peaks = platform.peak_flops_per_s
        peak = peaks.get("bf16") or peaks.get("fp16") or max(peaks.values())
        rows.append(
            {
                "hardware": name,
                "device": platform.display_name,
                "16-bit peak": human_rate(peak, "FLOP/s"),
                "memory bandwidth": human_rate(memory.bandwidth_bytes_per_s, "B/s"),
                "capacity (decimal)": human_bytes(memory.capacity_bytes),
                "datasheet source": platform.source,
                "link": source_link(platform.source or "") or "",
            }
        )
    return pd.DataFrame(rows)


def worked_example() -> None:
    """The defaults' prediction, read through the method above."""
    selection = Selection()
    result = checked(prediction, selection)
    platform = preset_platform(selection.hw)
    ridge = platform.ridge_point("bf16")
    decode_oi = result.decode.operational_intensity
    st.markdown(
        f"**Worked example** (the sidebar's defaults): {selection.model} on {selection.hw}, "
        f"batch {selection.batch}, {selection.input_tokens} tokens in / "
        f"{selection.output_tokens} out, 16-bit. The ridge point is {ridge:.0f} FLOP/byte; "
        f"a decode step runs at OI {decode_oi:.3g} FLOP/byte, far below it, so decode is "
        f"{result.decode.bound.value}-bound: TPOT {human_seconds(result.tpot_s)}, about "
        f"the time to read {human_bytes(result.footprint.weights_bytes)} of weights at "
        f"{human_rate(platform.main_memory.bandwidth_bytes_per_s, 'B/s')}. Prefill is "
        f"{result.prefill.bound.value}-bound (TTFT {human_seconds(result.ttft_s)}); "
        f"throughput {tokens_per_s(result.throughput_tokens_per_s)}. "
        f"`codesign predict --model {selection.model} --hw {selection.hw}` prints the same."
    )


def render() -> None:
    """Draw the page."""
    st.header("Home: LLM inference co-design")
    st.caption(
        "What the dashboard computes and how; the presets and where their numbers come "
        f"from ({docs_link('what-if-dashboard')}; method: {docs_link('model', 'model')})."
    )
    st.markdown(METHOD)
    worked_example()
    st.subheader("Pages")
    st.markdown("\n".join(f"- **{name}**: {what}" for name, what in PAGES))
    st.subheader(f"Model presets ({len(list_models())})")
    st.caption("Each preset is the model's Hugging Face config.json; the link opens its source.")
    st.dataframe(
        model_table(),
        hide_index=True,
        column_config={"link": st.column_config.LinkColumn("link")},
    )
    st.subheader(f"Hardware presets ({len(list_platforms())})")
    st.caption(
        "Dense (not sparse) peaks; each value's datasheet is named in its source; the link "
        "is the first address the source gives, where it gives one."
    )
    st.dataframe(
        hardware_table(),
        hide_index=True,
        column_config={"link": st.column_config.LinkColumn("link")},
    )


if __name__ == "__main__":
    render()
