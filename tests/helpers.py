"""Plain helpers shared by test modules (fixtures live in conftest.py): one serving
replica of a model on a platform."""

from genz import Parallelism
from search.serving import Replica, SchedulerConfig, Workload, build_replica


def make_replica(model, platform, workload: Workload, tp: int = 1, **config) -> Replica:
    """`build_replica` at tensor parallelism ``tp`` with ``SchedulerConfig(**config)``."""
    return build_replica(
        model, platform, workload, parallelism=Parallelism(tp=tp), config=SchedulerConfig(**config)
    )
