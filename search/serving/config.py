"""Scheduler settings of one replica (vLLM / Orca / Sarathi-Serve style)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from roofline import InputError, require_fraction, require_positive

if TYPE_CHECKING:
    from genz import RuntimeProfile

#: Scheduling policies the simulator runs.
POLICIES = ("continuous", "chunked", "static")
PREEMPTION = ("recompute", "swap")


@dataclass(frozen=True)
class SchedulerConfig:
    """How one replica batches requests.

    Parameters
    ----------
    policy
        ``continuous``: iteration-level batching (Orca; vLLM without chunked prefill):
        a step is either the whole prompts of newly admitted requests or one decode
        token of every running sequence, prefill first. ``chunked``: every step
        decodes all running sequences and fills the rest of ``max_batched_tokens``
        with prompt chunks (Sarathi-Serve; vLLM's chunked prefill). ``static``: a batch
        of up to ``max_sequences`` waiting requests is prefilled together (padded to
        its longest prompt) and decoded until its longest output ends; then the next.
    max_sequences
        Most sequences in a step (vLLM ``max_num_seqs``, default 256).
    max_batched_tokens
        Token budget of a step (vLLM ``max_num_batched_tokens``); ``continuous``
        raises it to the longest prompt so every prompt can run.
    block_tokens
        Paged KV-cache block size, tokens (vLLM default 16). A sequence's last
        block is counted full (exact usage is at most one block less per sequence).
    memory_utilization
        Share of device memory the engine may use (vLLM ``gpu_memory_utilization``,
        default 0.9); the KV cache gets what weights and activations leave.
    preemption
        When the KV blocks run out, the most recently admitted sequence is evicted:
        ``recompute`` re-prefills its prompt and generated tokens later; ``swap``
        copies its KV cache to host memory over ``host_link_bytes_per_s`` and back.
    host_link_bytes_per_s
        Device-host bandwidth for swapping, bytes/s (default 25e9: PCIe 4.0 x16 as
        measured by host-to-device copies).
    scheduler_steps
        Multi-step scheduling (vLLM ``--num-scheduler-steps``, 0.6.0 and later; 1 =
        plan every step). With N > 1 (``continuous`` policy only) the scheduler plans
        once per block of N decode steps: waiting requests are admitted, and their
        prompts prefilled in one step, only between blocks; a block keeps its batch for
        all N steps (a sequence that ends inside it holds its slot and KV to the block's
        end) and its tokens reach the client together at the block's end, so a
        request's streamed chunks are N tokens apart. A block reserves N KV slots per
        sequence (vLLM's lookahead slots; prefill steps reserve none) and is shortened
        when fewer are free. Sources, read 2026-12-03: vLLM v0.6.0 performance post
        (https://blog.vllm.ai/2024/09/05/perf-update.html, "multi-step scheduling");
        vllm-project/vllm ``vllm/core/scheduler.py`` ``_get_num_lookahead_slots``
        (no lookahead for prefill unless multi-step chunked prefill, a later feature)
        and ``vllm/engine/output_processor/multi_step.py`` (a block's outputs are
        processed together; tokens past a stop are discarded).
    kv_capacity_tokens, kv_blocks, kv_free_fraction
        The KV budget as an engine states it, at most one of them (None: vLLM's rule,
        ``memory_utilization`` of device memory less weights and the largest step's
        activations). ``kv_capacity_tokens``: a token count (SGLang
        ``--max-total-tokens``, TensorRT-LLM ``max_tokens`` / ``max_tokens_in_paged_kv_cache``,
        or the size an engine's start-up log prints). ``kv_blocks``: a block count of
        ``block_tokens`` each (vLLM ``--num-gpu-blocks-override``, the "# GPU blocks" of
        its log). ``kv_free_fraction``: a share of the memory left after weights and
        activations (TensorRT-LLM ``kv_cache_free_gpu_mem_fraction`` /
        ``KvCacheConfig.free_gpu_memory_fraction``, default 0.9; LMDeploy
        ``cache_max_entry_count`` below 1, default 0.8); ``memory_utilization`` is then
        not used. A stated budget larger than memory holds is taken as stated (the
        engine's log is the measurement).
    request_overhead_s
        Front-end time of each request, seconds (HTTP server, tokenisation, scheduling
        hand-off and the return of the first chunk; default 0): the engine sees a request
        this long after it is sent, through one first-come-first-served front end (a
        request waits while the one before it is still there: at high request rates the
        front end, not the GPU, bounds throughput, as with 128-in / 4-out runs). It adds
        to TTFT and end-to-end latency and does not occupy the GPU.
    chunk_overhead_s
        Host time per streamed chunk of each sequence, seconds (detokenisation, output
        processing and streaming in an engine loop that waits for it; default 0): every
        step takes this much longer per sequence in it. Zero for engines that overlap it
        with the GPU (vLLM V1's and SGLang's async scheduling). A runtime profile's
        fitted ``request_overhead_s`` is the front-end time when none is stated
        (`front_end_seconds`); no profile fits a per-chunk cost yet.
    async_scheduling
        Overlap scheduling (SGLang's overlap scheduler, vLLM's ``--async-scheduling``,
        TensorRT-LLM's PyTorch-backend overlap scheduler, on by default there:
        ``disable_overlap_scheduler=False`` in ``tensorrt_llm/llmapi/llm_args.py``,
        NVIDIA/TensorRT-LLM, read 2026-12-04): the host plans step n + 1 while the GPU
        runs step n, so a step takes the larger of its host time (the runtime
        profile's fixed cost per step and per sequence, plus ``chunk_overhead_s``) and
        its device time, not their sum (`genz.StepCost.host_overlap`). Default False.
    """

    policy: str = "continuous"
    max_sequences: int = 256
    max_batched_tokens: int = 8192
    block_tokens: int = 16
    memory_utilization: float = 0.9
    preemption: str = "recompute"
    host_link_bytes_per_s: float = 25e9
    scheduler_steps: int = 1
    kv_capacity_tokens: int | None = None
    kv_blocks: int | None = None
    kv_free_fraction: float | None = None
    request_overhead_s: float = 0.0
    chunk_overhead_s: float = 0.0
    async_scheduling: bool = False

    def __post_init__(self) -> None:
        if self.policy not in POLICIES:
            raise InputError(f"policy must be one of {', '.join(POLICIES)}, got {self.policy!r}")
        if self.preemption not in PREEMPTION:
            raise InputError(
                f"preemption must be one of {', '.join(PREEMPTION)}, got {self.preemption!r}"
            )
        for label, low, high in (
            ("max_sequences", 1, 65536),
            ("max_batched_tokens", 1, 1_000_000),
            ("block_tokens", 1, 1024),
            ("scheduler_steps", 1, 1024),
        ):
            value = getattr(self, label)
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise InputError(f"{label} must be an integer in [{low}, {high}], got {value!r}")
        if self.scheduler_steps > 1 and self.policy != "continuous":
            raise InputError(
                f"scheduler_steps > 1 (multi-step scheduling) is modelled for policy "
                f"continuous only, got policy {self.policy!r}"
            )
        require_fraction("memory_utilization", self.memory_utilization)
        require_positive("host_link_bytes_per_s", self.host_link_bytes_per_s)
        stated = [
            name
            for name in ("kv_capacity_tokens", "kv_blocks", "kv_free_fraction")
            if getattr(self, name) is not None
        ]
        if len(stated) > 1:
            raise InputError(f"give one KV budget, not both {stated[0]} and {stated[1]}")
        for label, high in (("kv_capacity_tokens", 10**10), ("kv_blocks", 10**9)):
            value = getattr(self, label)
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= high
            ):
                raise InputError(f"{label} must be an integer in [1, {high}], got {value!r}")
        if self.kv_free_fraction is not None:
            require_fraction("kv_free_fraction", self.kv_free_fraction)
        if not isinstance(self.async_scheduling, bool):
            raise InputError(
                f"async_scheduling must be True or False, got {self.async_scheduling!r}"
            )
        for label in ("request_overhead_s", "chunk_overhead_s"):
            value = getattr(self, label)
            if not (isinstance(value, (int, float)) and 0 <= value <= 60):
                raise InputError(f"{label} must be a number of seconds in [0, 60], got {value!r}")

    def stated_kv_tokens(self, free_bytes: float, bytes_per_token: float) -> int | None:
        """KV cache tokens of a stated budget (None: none stated, vLLM's rule applies):
        ``free_bytes`` is the memory per device left after weights and activations,
        ``bytes_per_token`` the KV bytes of one token per device."""
        if self.kv_capacity_tokens is not None:
            return self.kv_capacity_tokens
        if self.kv_blocks is not None:
            return self.kv_blocks * self.block_tokens
        if self.kv_free_fraction is not None:
            return max(int(self.kv_free_fraction * free_bytes // bytes_per_token), 0)
        return None


def front_end_seconds(runtime: RuntimeProfile | None, stated_s: float | None) -> float:
    """Front-end time per request (s) a simulation charges (`SchedulerConfig.request_overhead_s`):
    ``stated_s`` when given, else the runtime profile's fitted ``request_overhead_s``
    (what the profile adds once per request to `genz.predict`'s TTFT; 0 for physics and
    for profiles without one)."""
    if stated_s is not None:
        return stated_s
    return 0.0 if runtime is None else runtime.request_overhead_s
