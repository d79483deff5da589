"""The Python calls behind `codesign predict` (docs/getting-started.md runs this file)."""

from genz import Precision, Scenario, load_model, predict
from roofline import derive_platform, load_platform

model = load_model("llama-3.1-8b")
h100 = load_platform("h100-sxm")
scenario = Scenario(batch=8, input_tokens=2048, output_tokens=256, precision=Precision(kv_bits=8))

result = predict(model, h100, scenario)  # a frozen Prediction, SI units
print(f"TTFT {result.ttft_s * 1e3:.1f} ms ({result.prefill.bound.value}-bound prefill)")
print(f"TPOT {result.tpot_s * 1e3:.2f} ms ({result.decode.bound.value}-bound decode)")
print(f"fits {result.fits}, footprint {result.footprint.total_bytes / 1e9:.1f} GB (decimal)")

faster = derive_platform(h100, memory_bandwidth_scale=2)  # a what-if H100 with 2x bandwidth
print(f"TPOT at 2x bandwidth {predict(model, faster, scenario).tpot_s * 1e3:.2f} ms")

frame = result.to_frame()  # per-operator breakdown (pandas, imported only here)
print(frame.groupby("phase")["time_s"].sum().round(4).to_string())
