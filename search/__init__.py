"""Design-space search, one sub-package per job.

- `search.bits`: ILP mixed-precision bit allocation under memory / latency / BOPs budgets.
- `search.codesign`: joint hardware-model search, Pareto fronts, feasible regions.
- `search.sizing`: SLO -> platform requirements, OI/CF reports.
- `search.serving`: the serving simulator (requests over time on replicas).
- `search.economics`: energy and money per token (light: the CLI's ``predict`` uses it).

Import from the sub-package you need (``from search.bits import quantize``); this package
imports none of them, so using one does not load the others.
"""
