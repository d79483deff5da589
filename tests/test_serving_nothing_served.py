"""A run in which every request is rejected says so: no NaN in the text, the rejected
count on the requests line, and a verdict that names the cause (not "sustainable")."""

from __future__ import annotations

import json

from app.cli import main

#: Four 1,000 + 500-token requests against a 1,100-token KV cache: each is swapped out when
#: it outgrows the cache alone, and rejected at re-admission.
ARGS = [
    "serve", "--model", "llama-3.1-8b", "--hw", "h100-sxm", "--rate", "0.01",
    "--duration", "150", "--input", "1000", "--output", "500", "--length-cv", "0",
    "--kv-tokens", "1100", "--preemption", "swap",
]  # fmt: skip


def test_all_rejected_run_prints_no_nan_and_names_the_rejections(capsys):
    assert main(ARGS) in (None, 0)
    text = capsys.readouterr().out
    assert "nan" not in text.lower()
    assert "4 (0 finished, 4 rejected)" in text
    assert "TPOT P50/P90/P99" in text and "n/a / n/a / n/a" in text
    assert "n/a (no request finished)" in text
    assert "NOTHING SERVED: 4 of 4 request(s) rejected" in text
    assert "1100 KV tokens" in text


def test_all_rejected_run_is_not_sustainable_in_json(capsys):
    assert main([*ARGS, "--json"]) in (None, 0)
    summary = json.loads(capsys.readouterr().out)
    assert (summary["finished"], summary["rejected"]) == (0, 4)
    assert summary["sustainable"] is False
    assert summary["tpot_s_p50"] is None
    assert summary["verdict"].startswith("NOTHING SERVED")
