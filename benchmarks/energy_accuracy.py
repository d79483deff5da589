"""Energy per generated token against the LLM-Inference-Bench power rows, out of sample.

Measured (``power_results.csv``, 40 single-GPU runs of vLLM, TensorRT-LLM and
DeepSpeed-MII on A100 40GB and H100 SXM): ``power_w`` is the mean NVML board power of
the run's one GPU (the published ``avg_power`` is milliwatts; the converter divides by
1000), so

    measured J/token  = power_w * batch_latency_s / (batch * output_tokens)

Predicted, with genz's energy model (`genz.economics`: every device draws
``power_fraction`` of its board power ``Platform.power_w`` for the whole run):

    predicted J/token = power_fraction * Platform.power_w * devices * latency / (batch * output)

where ``latency`` is the row's leave-one-hardware-out batch latency (the runtime
profile calibrated without the row's hardware, as in the rest of `validate`), or the
uncalibrated ``ideal`` physics latency. Two power models, neither tuned on the row's
hardware:

- ``TDP``: ``power_fraction = 1``, genz's default (an upper bound; nothing fitted);
- ``fraction``: ``power_fraction`` = the median of ``power_w / Platform.power_w`` over the
  power rows of the *other* hardware (leave one hardware out, like the latency).

Errors are ``100 (predicted - measured) / measured`` per row; MAPE, median and p90
absolute error and bias per runtime x hardware.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from genz import Measurement
from roofline import load_platform

#: Published file of the power rows (``source`` prefix).
POWER_FILE = "power_results.csv"
#: Acceptance target of the energy figures (the latency target of issue #12), %.
TARGET_MAPE = 15.0


def energy_frame(frame: pd.DataFrame, rows: Sequence[Measurement]) -> pd.DataFrame:
    """One line per power row: measured and predicted J/token, signed % errors.

    ``frame`` is `validate`'s per-row error table (columns ``source``, ``metric``,
    ``held_out_pct``, ``ideal_pct``); ``rows`` the measurements it was built from.
    """
    powered = {row.source: row for row in rows if row.power_w is not None}
    latency = frame[(frame.metric == "batch latency") & frame.source.isin(list(powered))]
    records = []
    for line in latency.itertuples():
        row = powered[line.source]
        assert row.batch_latency_s is not None and row.power_w is not None
        board_w = load_platform(row.hw).power_w
        assert board_w is not None, f"{row.hw} lists no power_w"
        tokens = row.batch * row.output_tokens
        records.append(
            {
                "runtime": line.runtime,
                "hw": row.hw,
                "model": row.model,
                "batch": row.batch,
                "source": row.source,
                "measured_w": row.power_w,
                "board_w": board_w * row.devices,
                "measured_s": row.batch_latency_s,
                "measured_j": row.power_w * row.batch_latency_s / tokens,
                "held_out_s": row.batch_latency_s * (1 + line.held_out_pct / 100),
                "ideal_s": row.batch_latency_s * (1 + line.ideal_pct / 100),
                "tokens": tokens,
            }
        )
    out = pd.DataFrame(records)
    fraction = out.measured_w / out.board_w
    out["fraction"] = [float(np.median(fraction[out.hw != hw])) for hw in out.hw]
    for label, share in (("tdp", 1.0), ("fraction", out.fraction)):
        for timing in ("held_out", "ideal"):
            predicted = share * out.board_w * out[f"{timing}_s"] / out.tokens
            out[f"{label}_{timing}_pct"] = 100 * (predicted - out.measured_j) / out.measured_j
    return out


def _stats(errors: pd.Series) -> dict[str, float]:
    absolute = errors.abs()
    return {
        "MAPE": absolute.mean(),
        "median": absolute.median(),
        "p90": absolute.quantile(0.9),
        "bias": errors.mean(),
    }


def energy_table(energy: pd.DataFrame) -> pd.DataFrame:
    """Per runtime x hardware and over all rows: count, fitted fraction, error stats."""
    lines = []
    parts = [(f"{r} / {h}", part) for (r, h), part in energy.groupby(["runtime", "hw"])]
    for group, part in [*parts, ("all power rows", energy)]:
        line: dict[str, object] = {"group": group, "rows": len(part)}
        line["fraction"] = part.fraction.median()
        for label, column in (
            ("fraction+held-out", "fraction_held_out_pct"),
            ("TDP+held-out", "tdp_held_out_pct"),
            ("TDP+ideal", "tdp_ideal_pct"),
        ):
            stats = _stats(part[column])
            line.update({f"{label} {key}": value for key, value in stats.items()})
        lines.append(line)
    return pd.DataFrame(lines)


def print_energy(energy: pd.DataFrame) -> None:
    """The energy section of `validate`: the table and one met / missed line."""
    print(
        "\nEnergy per generated token vs the power rows (power_results.csv: NVML mean board "
        "power of the one GPU, mW / 1000 = W). Predicted = power_fraction x board power x "
        "devices x batch latency / generated tokens; 'fraction' = median measured/board "
        "power of the other hardware's rows (leave one hardware out), 'TDP' = fraction 1; "
        "latency leave-one-hardware-out ('held-out') or uncalibrated ('ideal'):"
    )
    table = energy_table(energy)
    print(table.to_string(index=False, float_format=lambda value: f"{value:6.2f}"))
    overall = _stats(energy.fraction_held_out_pct)
    met = overall["MAPE"] < TARGET_MAPE
    tdp = _stats(energy.tdp_held_out_pct)
    power = _stats(100 * (energy.fraction * energy.board_w / energy.measured_w - 1))
    latency = _stats(100 * (energy.held_out_s / energy.measured_s - 1))
    drawn = energy.measured_w / energy.board_w
    print(
        f"  {'MET   ' if met else 'MISSED'} energy per token, leave-one-hardware-out power "
        f"fraction and latency: {len(energy)} rows, MAPE {overall['MAPE']:.1f}%, bias "
        f"{overall['bias']:+.1f}% (target MAPE < {TARGET_MAPE:g}%; at TDP: MAPE "
        f"{tdp['MAPE']:.1f}%, bias {tdp['bias']:+.1f}%)"
    )
    print(
        f"         the two factors alone: power (fraction x board vs measured W) MAPE "
        f"{power['MAPE']:.1f}%, bias {power['bias']:+.1f}%; latency MAPE "
        f"{latency['MAPE']:.1f}%, bias {latency['bias']:+.1f}%; measured draw "
        f"{100 * drawn.min():.0f}-{100 * drawn.max():.0f}% of board power"
    )
    if not met:
        series = energy.sort_values("batch").groupby(["runtime", "hw", "model"]).measured_w
        rising = sum(watts.iloc[-1] > watts.iloc[0] for _, watts in series)
        print(
            f"         reason: one power fraction per device (taken from the other device) "
            f"cannot follow a draw that rises from the smallest to the largest batch in "
            f"{rising} of {series.ngroups} runtime x hardware x model series"
        )
