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
    find_disaggregated_max_rate,
    find_disaggregated_replicas,
    find_max_rate,
    find_replicas,
    run,
    run_disaggregated,
    with_economics,
)
from .config import POLICIES, PREEMPTION, SchedulerConfig, front_end_seconds
from .energy import Pool, ServingEconomics, pool_economics
from .engine import simulate_pool
from .metrics import PERCENTILES, SLO, ServingResult, meets_percentiles, slo_misses, summarise
from .records import RunRecord
from .routing import ROUTING, route
from .schedulers import (
    DisaggregatedRun,
    KVLink,
    Replica,
    build_replica,
    kv_link,
    kv_transfer,
    prefill_pool,
    simulate_disaggregated,
    simulate_replica,
    step_table_tokens,
)
from .speculative import Speculation, SpeculativeDecoder
from .sweep import PARALLEL, SWEEP_COLUMNS, run_sweep, sweep_row
from .workload import (
    MAX_TRACE_BYTES,
    PREFIX_COLUMNS,
    SHAREGPT_FILTER,
    TRACE_COLUMNS,
    Workload,
    arrival_times,
    counted_arrivals,
    fitted_workload,
    load_trace,
    lognormal_lengths,
    sharegpt_lengths,
    synthetic_workload,
    with_images,
    zipf_weights,
)

__all__ = [
    "MAX_TRACE_BYTES",
    "PARALLEL",
    "PERCENTILES",
    "POLICIES",
    "PREEMPTION",
    "PREFIX_COLUMNS",
    "ROUTING",
    "SHAREGPT_FILTER",
    "SLO",
    "SWEEP_COLUMNS",
    "TRACE_COLUMNS",
    "CapacityResult",
    "DisaggregatedRun",
    "KVLink",
    "Pool",
    "Replica",
    "RunRecord",
    "SchedulerConfig",
    "ServingEconomics",
    "ServingResult",
    "Speculation",
    "SpeculativeDecoder",
    "Workload",
    "arrival_times",
    "build_replica",
    "counted_arrivals",
    "find_disaggregated_max_rate",
    "find_disaggregated_replicas",
    "find_max_rate",
    "find_replicas",
    "fitted_workload",
    "front_end_seconds",
    "kv_link",
    "kv_transfer",
    "load_trace",
    "lognormal_lengths",
    "meets_percentiles",
    "pool_economics",
    "prefill_pool",
    "route",
    "run",
    "run_disaggregated",
    "run_sweep",
    "sharegpt_lengths",
    "simulate_disaggregated",
    "simulate_pool",
    "simulate_replica",
    "slo_misses",
    "step_table_tokens",
    "summarise",
    "sweep_row",
    "synthetic_workload",
    "with_economics",
    "with_images",
    "zipf_weights",
]
