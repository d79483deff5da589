"""``codesign calibrate-transfer``: fit the transferable model (device terms per preset,
stack terms per runtime x harness x year, source random effects) on the measurement
store and write it as runtime profiles: one generic profile of the terms that transfer
(``transfer.yaml``) and one per fitted stack."""

from __future__ import annotations

import argparse
from pathlib import Path

from calibration import export_transfer, parse_variant, transfer_profile_paths, write_profile
from roofline import InputError

from ..formatting import print_json, print_table
from .commands import add_command


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``calibrate-transfer``."""
    parser = add_command(subparsers, "calibrate-transfer")
    parser.add_argument(
        "--out-dir", required=True, help="existing folder the profiles are written to"
    )
    parser.add_argument(
        "--stacks",
        default="all",
        help="stack profiles to write besides the generic one: all (default), none, or "
        "comma-separated runtime|harness|year names",
    )
    parser.add_argument(
        "--variant",
        default="preset/runtime",
        help="model variant DEVICE_PRIORS/STACKS: preset/runtime (default), "
        "microbenchmarks/harness (issue 20 part B: cited device priors, harness-level stack "
        "terms, a weight-format compute factor, no request cost on llama-bench rows), "
        "preset/harness or microbenchmarks/runtime",
    )
    parser.add_argument("--json", action="store_true", help="what was written, as JSON")
    parser.set_defaults(func=run_calibrate_transfer)


def run_calibrate_transfer(args: argparse.Namespace) -> None:
    """Fit, write every profile, report."""
    parse_variant(args.variant)  # a bad variant is refused before the folder is read
    if not Path(args.out_dir).is_dir():
        raise InputError(f"--out-dir: folder does not exist: {args.out_dir}")
    export = export_transfer(args.stacks, args.out_dir, args.variant)
    paths = transfer_profile_paths(export, args.out_dir)
    for name, document in export.documents.items():
        write_profile(document, paths[name])
    fit = export.fit
    rows = int(fit.train.sum())
    summary = {
        "rows": rows,
        "sources": len(set(fit.terms.source.names)),
        "fit": {"success": fit.success, "message": fit.message},
        "profiles": {name: str(path) for name, path in paths.items()},
        "calibrated_from": export.command,
    }
    if args.json:
        print_json(summary)
        return
    print(
        f"transfer model fitted on {rows} rows from {summary['sources']} sources "
        f"({fit.message.rstrip('.')})"
    )
    print_table(
        [
            {
                "profile": name,
                "stack": document.get("stack", {}).get("runtime", "(generic)"),
                "file": str(paths[name]),
            }
            for name, document in export.documents.items()
        ]
    )
