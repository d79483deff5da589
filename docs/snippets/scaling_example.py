"""The Python calls behind `codesign fit` / `codesign loss` (docs/scaling-law.md runs this)."""

import numpy as np

from scaling_law import Architecture, fit_law, load_scaling_csv, predict_loss

result = fit_law(
    load_scaling_csv("chinchilla"), "chinchilla", drop_highest_loss=5, bootstrap=0, progress=False
)
print(result.success, result.status, result.message)
print({name: round(value, 4) for name, value in result.params.items()})

layers = np.array([16, 24, 32])
hidden = np.array([1536, 2048, 2560])
grid = Architecture(layers=layers, hidden=hidden, gated_ffn=True, ffn=4 * hidden)
print(predict_loss(result.law, grid, 1e11).round(4))  # arrays in, arrays out
