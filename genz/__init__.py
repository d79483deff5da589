"""LLM workload model: architectures, prefill/decode operator graphs, predictions."""
