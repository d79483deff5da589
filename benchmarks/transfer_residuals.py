"""Why does the transfer model miss a source? Its rows, terms and residuals, held out.

Fits `calibration.transfer` on every source but one (as `benchmarks/transfer.py`'s
leave-one-source-out does) and prints, for each of that source's rows with the chosen
metric: the set-up, the measured value, physics alone (``ideal``) and the held-out
model as ratios to the measurement, and the model's terms for the row: achieved
fractions of peak compute and bandwidth (``eta_c``, ``eta_m``; the prior means
beside them), the launch cost of the pass (kernels x kappa), the per-request cost
``rho``, and whether the row's stack (runtime|harness|year) and device were seen in
training (a stack or device no training row has gets only its shrunk parents).

    python benchmarks/transfer_residuals.py --source XiongjieDai/GPU-Benchmarks-on-LLM-Inference --metric ttft_s
    python benchmarks/transfer_residuals.py --source geerlingguy/ai-benchmarks --metric itl_s --variant microbenchmarks/harness
"""

from __future__ import annotations

import argparse

import numpy as np
from transfer import DEFAULT_VARIANT, OPT_IN, parse_variant, refuse, sublinear_variant

from calibration.store import load_store
from calibration.transfer import METRICS, SCOPED_PRIORS, fit_transfer
from calibration.transfer_terms import build_terms, with_graphs, with_step_cost


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", required=True, help="source id (as benchmarks/transfer.py)")
    parser.add_argument("--metric", default="ttft_s", choices=METRICS)
    parser.add_argument("--variant", default=DEFAULT_VARIANT, help="DEVICE_PRIORS/STACKS")
    parser.add_argument("--with", dest="opt_in", default="", help=f"as transfer.py: {OPT_IN}")
    args = parser.parse_args()
    device_priors, stacks = parse_variant(args.variant)
    opt_in = {name.strip() for name in args.opt_in.split(",") if name.strip()}
    if not opt_in <= set(OPT_IN):
        refuse(f"--with: {args.opt_in!r}; accepted: comma-separated {', '.join(OPT_IN)}")
    stored = load_store()
    sources = sorted({item.info.source_id for item in stored})
    if args.source not in sources:
        refuse(f"--source: unknown source {args.source!r}; accepted: {', '.join(sources)}")
    terms = build_terms(stored, device_priors=device_priors, stacks=stacks)
    terms = with_step_cost(with_graphs(terms, "graphs" in opt_in), "steps" in opt_in)
    terms = sublinear_variant(terms, opt_in)
    test = np.array([item.info.source_id == args.source for item in stored])
    fit = fit_transfer(terms, ~test, priors=dict(SCOPED_PRIORS) if "scope" in opt_in else None)
    predicted = fit.predict(with_source=False)
    values = fit.row_terms()
    seen_stacks = set(terms.stack.index[~test].tolist())
    seen_devices = set(terms.device.index[~test].tolist())
    measured, ideal = terms.measured[args.metric], terms.ideal[args.metric]
    kernels = terms.kernels_prefill if args.metric == "ttft_s" else terms.kernels_decode
    launch = values["kappa"] if args.metric == "ttft_s" else values["kappa_decode"]
    rows = np.flatnonzero(test & np.isfinite(measured))
    print(f"{args.source}, {args.metric}, variant {args.variant}: {len(rows)} rows held out")
    print(
        f"{'hw':18s} {'model':16s} {'bits':>5s} {'b':>3s} {'in':>5s} {'meas ms':>9s} "
        f"{'ideal':>6s} {'model':>6s} {'eta_c (prior)':>14s} {'eta_m (prior)':>14s} "
        f"{'launch ms':>9s} {'step ms':>7s} {'rho ms':>7s} stack seen / device seen"
    )
    for i in rows:
        row = terms.stored[i].row
        print(
            f"{row.hw[:18]:18s} {row.model[:16]:16s} {row.weight_bits:5.2f} {row.batch:3d} "
            f"{row.input_tokens:5d} {1e3 * measured[i]:9.2f} {ideal[i] / measured[i]:6.2f} "
            f"{predicted[args.metric][i] / measured[i]:6.2f} "
            f"{values['eta_c'][i]:6.2f} ({terms.prior_compute[i]:4.2f}) "
            f"{values['eta_m'][i]:6.2f} ({terms.prior_memory[i]:4.2f}) "
            f"{1e3 * kernels[i] * launch[i]:9.3f} "
            f"{1e3 * (values['tau'][i] + row.batch ** values['theta'][i] * values['sigma'][i]):7.3f} "
            f"{1e3 * values['rho'][i]:7.2f} "
            f"{terms.stack.names[terms.stack.index[i]]}: "
            f"{'yes' if terms.stack.index[i] in seen_stacks else 'NO'} / "
            f"{'yes' if terms.device.index[i] in seen_devices else 'NO'}"
        )
    error = {
        "ideal": ideal[rows] / measured[rows] - 1,
        "model": predicted[args.metric][rows] / measured[rows] - 1,
    }
    for name, values_ in error.items():
        print(
            f"{name}: MAPE {100 * np.mean(np.abs(values_)):.1f}%, "
            f"bias {100 * np.mean(values_):+.1f}%"
        )


if __name__ == "__main__":
    main()
