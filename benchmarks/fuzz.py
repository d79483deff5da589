"""Fuzz every user file kind and numeric flag at length and print the counts (issue #25).

The strategies and the contract are tests/fuzzing.py's (tests/test_fuzz_inputs.py runs
a few dozen cases of each inside the test-time budget). Here ``--cases`` are spread
evenly over the kinds; each case's answer is sorted into: exit 0 (finite numbers),
exit 1 (a batch with some failed rows), exit 2 (one error line), and the failures:
traceback (an exception other than bad input escaped), hang (over the per-case
limit) and broken contract (e.g. NaN printed, a second error line). Exit code 1 when
any failure was seen, with the first few listed.

    python benchmarks/fuzz.py --cases 2000            # about 1,000 s on 2 cores
    python benchmarks/fuzz.py --cases 100000 --kinds config,hardware
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import traceback
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import fuzzing  # noqa: E402
from hypothesis import HealthCheck, given, settings  # noqa: E402

OUTCOMES = ("exit 0", "exit 1", "exit 2", "traceback", "hang", "broken contract")


def run_kind(kind: str, cases: int, folder: Path, seen: dict[str, list[str]]) -> Counter[str]:
    """Draw ``cases`` inputs of ``kind`` (a file kind or ``'flags'``); count the outcomes."""
    counts: Counter[str] = Counter()
    if kind == "flags":
        strategy, batch = fuzzing.FLAGS, False
    else:
        strategy, _, _, batch = fuzzing.KINDS[kind]

    @settings(
        max_examples=cases,
        deadline=None,
        database=None,
        phases=[*settings.default.phases][:3],  # explicit, reuse, generate: no shrinking
        suppress_health_check=list(HealthCheck),
    )
    @given(drawn=strategy)
    def case(drawn: object) -> None:
        try:
            if kind == "flags":
                answer = fuzzing.flag_case(*drawn, folder)  # type: ignore[misc]
            else:
                answer = fuzzing.file_case(kind, drawn, folder)  # type: ignore[arg-type]
        except fuzzing.Hang as hang:
            counts["hang"] += 1
            seen.setdefault("hang", []).append(f"{kind}: {hang} <- {drawn!r:.300}")
            return
        except Exception:  # the failure this benchmark counts
            counts["traceback"] += 1
            seen.setdefault("traceback", []).append(
                f"{kind}: {traceback.format_exc().strip().splitlines()[-1]} <- {drawn!r:.200}"
            )
            return
        try:
            fuzzing.check_answer(*answer, batch=batch)
        except AssertionError as broken:
            counts["broken contract"] += 1
            seen.setdefault("broken contract", []).append(f"{kind}: {broken!s:.200}")
            return
        counts[f"exit {answer[0]}"] += 1

    case()
    return counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=400, help="cases in all (default 400)")
    kinds = [*fuzzing.KINDS, "flags"]
    parser.add_argument("--kinds", default=",".join(kinds), help="comma-separated subset")
    args = parser.parse_args(argv)
    chosen = [kind.strip() for kind in args.kinds.split(",")]
    unknown = sorted(set(chosen) - set(kinds))
    if unknown or args.cases < len(chosen):
        parser.error(f"kinds from {', '.join(kinds)}; --cases >= {len(chosen)}")
    per_kind = args.cases // len(chosen)
    seen: dict[str, list[str]] = {}
    rows = []
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder:
        for kind in chosen:
            begun = time.perf_counter()
            counts = run_kind(kind, per_kind, Path(folder), seen)
            rows.append((kind, counts, time.perf_counter() - begun))
    width = max(len(kind) for kind in chosen)
    print(f"{'kind':<{width}}  " + "  ".join(f"{name:>15}" for name in OUTCOMES) + "  seconds")
    total: Counter[str] = Counter()
    for kind, counts, seconds in rows:
        total += counts
        cells = "  ".join(f"{counts[name]:>15}" for name in OUTCOMES)
        print(f"{kind:<{width}}  {cells}  {seconds:7.1f}")
    cells = "  ".join(f"{total[name]:>15}" for name in OUTCOMES)
    print(f"{'all':<{width}}  {cells}  {time.perf_counter() - start:7.1f}")
    for name, examples in seen.items():
        print(f"\n{name}: {len(examples)}, first {min(5, len(examples))}:")
        for example in examples[:5]:
            print(f"  {example}")
    return 1 if any(total[name] for name in OUTCOMES[3:]) else 0


if __name__ == "__main__":
    raise SystemExit(main())
