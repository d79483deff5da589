"""``codesign oicf``: operational intensity (OI) and capacity footprint (CF) of prefill and
decode across use cases, models and bit widths, and the disaggregated-serving view."""

from __future__ import annotations

import argparse

from genz import load_use_cases, model_from_spec, use_case
from roofline import InputError
from search.sizing import DEFAULT_BITS, DEFAULT_MODELS, OicfReport, ServiceLevel, oicf_report

from ..formatting import human_bytes, print_json, print_table
from .commands import add_command
from .platform_args import add_scale_arguments, platform_from_args


def register_oicf(subparsers: argparse._SubParsersAction) -> None:
    """Add ``oicf``."""
    oicf = add_command(subparsers, "oicf")
    oicf.add_argument("--hw", required=True, help="hardware preset or YAML (ridge, capacity)")
    add_scale_arguments(oicf)
    oicf.add_argument(
        "--models", default=",".join(DEFAULT_MODELS), help="comma-separated model specs"
    )
    oicf.add_argument("--use-cases", help="comma-separated use cases (default: all)")
    oicf.add_argument(
        "--bits",
        default=",".join(f"{w:g}/{kv:g}" for w, kv in DEFAULT_BITS),
        help="comma-separated weight/KV bit pairs (default 16/16,8/8,4/4)",
    )
    oicf.add_argument("--batch", type=int, default=1, help="batch of the OI columns (default 1)")
    oicf.add_argument("--devices", type=int, help="devices sharing the CF (default: one node)")
    oicf.add_argument("--decode-batch", type=int, default=32, help="disaggregated decode batch")
    oicf.add_argument("--max-ttft-s", type=float, default=2.0, help="disaggregated prefill SLO")
    oicf.add_argument("--max-tpot-ms", type=float, default=50.0, help="disaggregated decode SLO")
    oicf.add_argument("--json", action="store_true", help="machine-readable output")
    oicf.set_defaults(func=run_oicf)


def _bits(text: str) -> tuple[tuple[float, float], ...]:
    pairs = []
    for item in text.split(","):
        weight, _, kv = item.partition("/")
        try:
            pairs.append((float(weight), float(kv or weight)))
        except ValueError:
            raise InputError(
                f"--bits must look like 16/16,8/8,4/4 (weight/KV bits), got {item!r}"
            ) from None
    return tuple(pairs)


def run_oicf(args: argparse.Namespace) -> None:
    """Print the OI/CF table and the disaggregated view."""
    platform = platform_from_args(args)
    models = [model_from_spec(spec.strip()) for spec in args.models.split(",") if spec.strip()]
    names = args.use_cases.split(",") if args.use_cases else list(load_use_cases())
    cases = [use_case(name.strip()) for name in names]
    devices = args.devices
    if devices is None:
        link = platform.interconnect
        devices = 1 if link is None else link.devices_per_node
    for label, value in (("--max-ttft-s", args.max_ttft_s), ("--max-tpot-ms", args.max_tpot_ms)):
        if not value > 0:
            raise InputError(f"{label} must be > 0, got {value!r}")
    report = oicf_report(
        models,
        cases,
        platform,
        bits=_bits(args.bits),
        batch=args.batch,
        devices=devices,
        decode_batch=args.decode_batch,
        slo=ServiceLevel(max_ttft_s=args.max_ttft_s, max_tpot_s=args.max_tpot_ms / 1e3),
    )
    if args.json:
        print_json(report.to_dict())
        return
    _print_oicf(report)


def _print_oicf(report: OicfReport) -> None:
    first = report.rows[0]
    print(
        f"OI (FLOP/byte) and CF per replica on {report.platform}: ridge "
        f"{first.ridge_flop_per_byte:.4g} FLOP/B (derated), wall = {report.devices} x "
        f"{human_bytes(first.capacity_bytes / report.devices)} (decimal); batch {first.batch}"
    )
    rows = []
    for row in report.rows:
        if row.max_batch == 0:
            note = "WALL: weights do not fit"
        elif row.past_capacity_wall:
            note = f"WALL at batch {row.max_batch + 1}"
        elif row.memory_bound_up_to_wall:
            note = "decode memory-bound up to the wall"
        else:
            note = f"decode compute-bound from batch {row.compute_bound_batch}"
        rows.append(
            {
                "use case": row.use_case,
                "model": row.model,
                "w/kv": f"{row.weight_bits:g}/{row.kv_bits:g}",
                "OI prefill": f"{row.prefill_oi:.4g}",
                "OI decode": f"{row.decode_oi:.3g}",
                "KV/req GB": f"{row.kv_bytes_per_request / 1e9:.3g}",
                "CF decode GB": f"{row.decode_cf_bytes / 1e9:.4g}",
                "max batch": row.max_batch,
                "OI@max": "-"
                if row.decode_oi_at_max_batch is None
                else f"{row.decode_oi_at_max_batch:.3g}",
                "note": note,
            }
        )
    print_table(rows)
    print()
    slo = report.slo
    need = report.disaggregated[0]
    print(
        f"disaggregated serving: least peak rates and memory for TTFT <= {slo.max_ttft_s:g} s "
        f"(one request) and TPOT <= {slo.max_tpot_s * 1e3:g} ms at decode batch "  # type: ignore[operator]
        f"{need.decode_batch} (roofline at the platform's efficiencies, decimal units; "
        "ridge P/D: the ridge that balances compute and bandwidth for each phase)"
    )
    print_table(
        [
            {
                "use case": need.use_case,
                "model": need.model,
                "w/kv": f"{need.weight_bits:g}/{need.kv_bits:g}",
                "prefill TFLOP/s": f"{need.prefill_flops_per_s / 1e12:.4g}",
                "prefill TB/s": f"{need.prefill_bytes_per_s / 1e12:.3g}",
                "prefill GB": f"{need.prefill_capacity_bytes / 1e9:.4g}",
                "decode TB/s": f"{need.decode_bytes_per_s / 1e12:.3g}",
                "decode TFLOP/s": f"{need.decode_flops_per_s / 1e12:.4g}",
                "decode GB": f"{need.decode_capacity_bytes / 1e9:.4g}",
                "ridge P/D": f"{need.prefill_oi:.4g}/{need.decode_oi:.3g}",
            }
            for need in report.disaggregated
        ]
    )
