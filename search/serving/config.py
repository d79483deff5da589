"""Scheduler settings of one replica (vLLM / Orca / Sarathi-Serve style)."""

from __future__ import annotations

from dataclasses import dataclass

from roofline import InputError, require_fraction, require_positive

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
    """

    policy: str = "continuous"
    max_sequences: int = 256
    max_batched_tokens: int = 8192
    block_tokens: int = 16
    memory_utilization: float = 0.9
    preemption: str = "recompute"
    host_link_bytes_per_s: float = 25e9
    scheduler_steps: int = 1

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
