"""Serving under load: a continuous-batching simulator over genz's step cost, with
latency percentiles, goodput and capacity planning.

Public face of ``search.serving``. Typical use::

    from genz import load_model
    from roofline import load_platform
    from search.serving import SLO, build_replica, run, synthetic_workload

    workload = synthetic_workload(rate=20, duration_s=600, use_case_name="chat")
    replica = build_replica(load_model("llama-3.1-8b"), load_platform("h100-sxm"), workload)
    result = run(workload, replica, SLO(ttft_s=2.0, tpot_s=0.05))
    print(result.summary["ttft_s_p99"], result.verdict)
"""

from .capacity import (
    CapacityResult,
    ServingEconomics,
    find_max_rate,
    find_replicas,
    run,
    run_disaggregated,
    serving_economics,
)
from .config import POLICIES, PREEMPTION, SchedulerConfig
from .engine import RunRecord
from .metrics import PERCENTILES, SLO, ServingResult, meets_percentiles, summarise
from .schedulers import (
    DisaggregatedRun,
    Replica,
    build_replica,
    simulate_disaggregated,
    simulate_replica,
)
from .workload import (
    MAX_TRACE_BYTES,
    SHAREGPT_FILTER,
    TRACE_COLUMNS,
    Workload,
    arrival_times,
    fitted_workload,
    load_trace,
    lognormal_lengths,
    sharegpt_lengths,
    synthetic_workload,
)

__all__ = [
    "MAX_TRACE_BYTES",
    "PERCENTILES",
    "POLICIES",
    "PREEMPTION",
    "SHAREGPT_FILTER",
    "SLO",
    "TRACE_COLUMNS",
    "CapacityResult",
    "DisaggregatedRun",
    "Replica",
    "RunRecord",
    "SchedulerConfig",
    "ServingEconomics",
    "ServingResult",
    "Workload",
    "arrival_times",
    "build_replica",
    "find_max_rate",
    "find_replicas",
    "fitted_workload",
    "load_trace",
    "lognormal_lengths",
    "meets_percentiles",
    "run",
    "run_disaggregated",
    "serving_economics",
    "sharegpt_lengths",
    "simulate_disaggregated",
    "simulate_replica",
    "summarise",
    "synthetic_workload",
]
