"""``codesign fit`` (fit a loss law to training runs) and ``codesign loss`` (predict with it)."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any

import numpy as np

from roofline import InputError
from scaling_law import (
    DEFAULT_PTQ,
    KUMAR_GAMMA_W,
    PTQ_FORM,
    QUANTISED_TRAINING_FORM,
    SUPPORTED_METHODS,
    Architecture,
    ScalingLaw,
    check_output_path,
    fit_law,
    list_forms,
    load_law,
    load_scaling_csv,
    precision_loss_penalty,
    predict_loss_interval,
    ptq_loss_penalty,
    save_law,
)

from ..formatting import print_json, print_key_values, print_table
from .commands import add_command


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``fit`` and ``loss`` sub-commands."""
    fit = add_command(subparsers, "fit")
    fit.add_argument("--data", required=True, help="CSV file, or a shipped table (chinchilla)")
    fit.add_argument("--form", default="chinchilla", help=f"law form: {', '.join(list_forms())}")
    fit.add_argument("--out", required=True, help="JSON file to write (its folder must exist)")
    fit.add_argument("--method", default="L-BFGS-B", help=", ".join(SUPPORTED_METHODS))
    fit.add_argument("--bootstrap", type=int, default=200, help="resamples for intervals")
    fit.add_argument("--seed", type=int, default=0, help="seed of resampling and folds")
    fit.add_argument(
        "--starts", type=int, default=24, help="solver runs from the best grid points (0: all)"
    )
    fit.add_argument(
        "--cv",
        default="5",
        help="held-out error: k folds, 'loo', 'architecture' (leave one run out), or 0 to skip",
    )
    fit.add_argument(
        "--bootstrap-unit",
        choices=("row", "architecture"),
        default="row",
        help="resample rows, or whole runs (architecture) for the intervals",
    )
    fit.add_argument("--huber-delta", type=float, default=1e-3, help="Huber threshold (log)")
    fit.add_argument("--confidence", type=float, default=0.95, help="interval coverage")
    fit.add_argument(
        "--drop-highest-loss",
        type=int,
        default=0,
        help="leave out the k highest-loss runs (Besiroglu et al. use 5 on chinchilla)",
    )
    fit.add_argument(
        "--exclude-embeddings",
        action="store_true",
        help="N counted without embeddings when the CSV gives architecture columns",
    )
    fit.add_argument(
        "--moe-count",
        choices=("active", "total"),
        default="active",
        help="MoE parameters counted in N (default active)",
    )
    fit.add_argument("--gamma-w", type=float, default=KUMAR_GAMMA_W, help="precision constant")
    fit.add_argument("--reference-bits", type=float, default=16.0, help="precision of the runs")
    fit.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    fit.add_argument("--json", action="store_true", help="machine-readable output")
    fit.set_defaults(
        func=run_fit,
        field_flags={"cross_validation": "--cv", "n_starts": "--starts"},  # errors name the flag
    )

    loss = add_command(subparsers, "loss")
    loss.add_argument("--law", required=True, help="law JSON written by 'codesign fit'")
    loss.add_argument("--tokens", type=float, required=True, help="training tokens D")
    loss.add_argument("--params", type=float, help="parameter count N instead of an architecture")
    loss.add_argument("--layers", type=int, help="number of blocks")
    loss.add_argument("--hidden", type=int, help="model width d_model")
    loss.add_argument(
        "--ffn", "--intermediate", dest="ffn", type=int, help="FFN size (default 4 * hidden)"
    )
    loss.add_argument("--gated", action="store_true", help="gated FFN (SwiGLU: 3 matrices)")
    loss.add_argument("--heads", type=int, help="query heads (default hidden // 128)")
    loss.add_argument("--kv-heads", type=int, help="key/value heads (default: heads)")
    loss.add_argument("--head-dim", type=int, help="per-head width (default hidden / heads)")
    loss.add_argument("--vocab", type=int, default=32_000, help="vocabulary (default 32000)")
    loss.add_argument("--tie-embeddings", action="store_true", help="LM head shares embeddings")
    loss.add_argument("--experts", type=int, default=1, help="MoE routed experts (default 1)")
    loss.add_argument("--top-k", type=int, default=1, help="experts per token (default 1)")
    loss.add_argument("--weight-bits", type=float, help="weight precision, bits (default: law's)")
    loss.add_argument(
        "--precision-model",
        choices=("ptq", "quantised-training"),
        default="ptq",
        help="what --weight-bits means: weights quantised after training for serving (ptq, "
        "default) or held at that precision during training (quantised-training)",
    )
    loss.add_argument("--moe-count", choices=("active", "total"), help="default: the law's")
    loss.add_argument("--json", action="store_true", help="machine-readable output")
    loss.set_defaults(func=run_loss, field_flags={"post_bits": "--weight-bits"})


def run_fit(args: argparse.Namespace) -> None:
    """Fit, print the parameters with intervals, and write the law JSON."""
    check_output_path(args.out)  # refuse a bad --out before minutes of fitting
    data = load_scaling_csv(args.data)
    result = fit_law(
        data,
        args.form,
        args.method,
        huber_delta=args.huber_delta,
        n_starts=None if args.starts == 0 else args.starts,
        bootstrap=args.bootstrap,
        confidence=args.confidence,
        cross_validation=_folds(args.cv),
        bootstrap_unit=args.bootstrap_unit,
        drop_highest_loss=args.drop_highest_loss,
        include_embeddings=not args.exclude_embeddings,
        moe_parameters=args.moe_count,
        gamma_w=args.gamma_w,
        reference_bits=args.reference_bits,
        seed=args.seed,
        progress=not args.no_progress,
    )
    written = save_law(result.law, args.out)
    if args.json:
        print_json({**result.to_dict(), "data_sha256": data.sha256, "out": str(written)})
        return
    law = result.law
    print_key_values(
        [
            ("form", law.form),
            ("method", f"{result.method}: {result.message}"),
            ("data", f"{data.origin} (sha256 {data.sha256[:16]}...)"),
            ("runs used", f"{result.points} ({result.excluded} excluded)"),
            ("objective", f"{result.objective:.6g} (sum of Huber / delta)"),
            ("bootstrap", f"{result.bootstrap_replicates} replicates by {args.bootstrap_unit}"),
            ("domain", _format_domain(law.domain)),
        ]
    )
    rows = []
    for name, value in law.params.items():
        interval, error = law.intervals.get(name), law.standard_errors.get(name)
        missing = "fixed" if name in law.fixed else "n/a"
        rows.append(
            {
                "parameter": name,
                "value": f"{value:.6g}",
                f"{law.confidence:.0%} low": missing if interval is None else f"{interval[0]:.6g}",
                f"{law.confidence:.0%} high": missing if interval is None else f"{interval[1]:.6g}",
                "std err": missing if error is None else f"{error:.4g}",
            }
        )
    print_table(rows)
    residuals, cv = result.residuals, result.cross_validation
    pairs = [
        (
            "fit RMSE",
            f"{residuals.rmse_log_loss:.4g} log-loss, {residuals.rmse_loss:.4g} nats "
            f"(in-sample MAPE {residuals.mape_loss:.3g}%)",
        )
    ]
    if cv is not None:
        pairs.append(
            (
                f"{cv.kind} RMSE",
                f"{cv.rmse_log_loss:.4g} log-loss, {cv.rmse_loss:.4g} nats ({cv.folds} folds; "
                f"held-out MAPE {cv.mape_loss:.3g}%)",
            )
        )
        if cv.per_group:
            print_table(
                [
                    {
                        "held-out run": group.label,
                        "points": group.points,
                        "MAPE %": f"{group.mape:.3g}",
                        "bias (nats)": f"{group.bias:+.4f}",
                    }
                    for group in cv.per_group
                ]
            )
    worst_row, observed, predicted = residuals.worst[0]
    pairs.append(
        (
            "worst run",
            f"{data.row_label} {worst_row}: loss {observed:.4g}, law {predicted:.4g}",
        )
    )
    pairs.append(("wrote", str(written)))
    print_key_values(pairs)


def run_loss(args: argparse.Namespace) -> None:
    """Predict loss (and perplexity) with its bootstrap interval."""
    law = load_law(args.law)
    architecture = None
    if args.layers is not None or args.hidden is not None:
        if args.layers is None or args.hidden is None:
            raise InputError("give both --layers and --hidden (or --params)")
        architecture = Architecture(
            layers=args.layers,
            hidden=args.hidden,
            ffn=args.ffn,
            heads=args.heads,
            kv_heads=args.kv_heads,
            head_dim=args.head_dim,
            vocab=args.vocab,
            gated_ffn=args.gated,
            experts=args.experts,
            top_k=args.top_k,
            tie_embeddings=args.tie_embeddings,
        )
        if args.params is not None:  # was silently ignored
            raise InputError("give --params or --layers/--hidden, not both")
    elif args.params is None:
        raise InputError("give --layers and --hidden, or --params")
    inputs = {"params": args.params, "moe_parameters": args.moe_count}
    training = args.weight_bits is not None and args.precision_model == "quantised-training"
    prediction = predict_loss_interval(
        law, architecture, args.tokens, weight_bits=args.weight_bits if training else None, **inputs
    )
    payload = {"form": law.form, "tokens": args.tokens, **prediction.to_dict()}
    if architecture is not None:
        payload["architecture"] = architecture.describe()
        payload["parameter_counts"] = architecture.counts().to_dict()
    if args.params is not None:
        payload["params"] = args.params
    if args.weight_bits is not None:
        if training:
            penalty = float(
                precision_loss_penalty(law, architecture, args.tokens, args.weight_bits, **inputs)
            )
        else:
            penalty = float(
                ptq_loss_penalty(law, architecture, args.tokens, args.weight_bits, **inputs)
            )
            _shift(payload, penalty)
            payload["ptq_constants"] = DEFAULT_PTQ.to_dict()
        payload["weight_bits"] = args.weight_bits
        payload["reference_bits"] = law.reference_bits
        payload["precision_model"] = QUANTISED_TRAINING_FORM if training else PTQ_FORM
        payload["precision_loss_penalty"] = penalty
    if args.json:
        print_json(payload)
        return
    pairs = [("law", f"{law.form} {_format_params(law.params)}")]
    if architecture is not None:
        counts = architecture.counts()
        pairs.append(
            (
                "parameters",
                f"{float(counts.total):.4g} total, {float(counts.active):.4g} active, "
                f"{float(counts.total_non_embedding):.4g} non-embedding",
            )
        )
    else:
        pairs.append(("parameters", f"{args.params:.4g} (given)"))
    pairs.append(("tokens", f"{args.tokens:.4g}"))
    level = f"{law.confidence:.0%}"
    source = (
        ""
        if args.weight_bits is None
        else f" at {args.weight_bits:g}-bit weights, "
        + ("quantised training" if training else "post-training quantisation")
    )
    pairs.append(
        (
            "loss",
            _with_interval(payload["loss"], payload["loss_lower"], payload["loss_upper"], level)
            + source,
        )
    )
    pairs.append(
        (
            "perplexity",
            _with_interval(
                payload["perplexity"],
                payload["perplexity_lower"],
                payload["perplexity_upper"],
                level,
            ),
        )
    )
    if args.weight_bits is not None:
        pairs.append(
            (
                "precision penalty",
                f"+{payload['precision_loss_penalty']:.4g} nats at {args.weight_bits:g}-bit weights "
                f"(vs {law.reference_bits:g}-bit) from {payload['precision_model']}",
            )
        )
    pairs.append(("domain", _domain_verdict(law, prediction.outside)))
    print_key_values(pairs)


def _shift(payload: dict[str, Any], penalty: float) -> None:
    """Add a post-training degradation to the loss and its interval (perplexity too)."""
    for key in ("loss", "loss_lower", "loss_upper"):
        if payload[key] is not None:
            payload[key] = payload[key] + penalty
            name = key.replace("loss", "perplexity")
            payload[name] = float(np.exp(payload[key]))


def _domain_verdict(law: ScalingLaw, outside: tuple[str, ...]) -> str:
    if not law.domain:
        return "unknown (the law file records no domain)"
    if not outside:
        return "inside the law's data"
    ranges = ", ".join(
        f"{name} outside [{law.domain[name][0]:.4g}, {law.domain[name][1]:.4g}]" for name in outside
    )
    return f"EXTRAPOLATED: {ranges}"


def _format_domain(domain: Mapping[str, tuple[float, float]]) -> str:
    if not domain:
        return "none recorded"
    return ", ".join(f"{name} {low:.4g}-{high:.4g}" for name, (low, high) in domain.items())


def _folds(text: str) -> int | str | None:
    if text in ("loo", "architecture"):
        return text
    try:
        return int(text)
    except ValueError:
        raise InputError(
            f"--cv must be an integer k >= 2, 'loo', 'architecture' or 0, got {text!r}"
        ) from None


def _format_params(params: Mapping[str, float]) -> str:
    return ", ".join(f"{name}={value:.4g}" for name, value in params.items())


def _with_interval(value: float, low: float | None, high: float | None, level: str) -> str:
    if low is None or high is None:
        return f"{value:.4f} (no interval: law has no bootstrap samples)"
    return f"{value:.4f} [{low:.4f}, {high:.4f}] ({level} bootstrap interval of the law)"
