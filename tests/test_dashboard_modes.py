"""The dashboard's decoding-mode, offload and architecture selections: the Latency and
Memory pages' prediction and sweeps equal `predict`, and the shown CLI call prints the
same numbers."""

import json
import shlex

import pytest

from app.cli import main
from app.dashboard.state import Selection, build_model, build_scenario, predict_command, sweep
from genz import Scenario, load_model, predict, with_layer_mix
from roofline import load_platform

CASES = [
    Selection(model="llama-3.1-8b", batch=4, parallel_samples=4, kv_offload=0.5),
    Selection(model="llama-3.1-8b", beam_width=4, weight_offload=0.25),
    Selection(model="llava-1.5-7b", images=2, input_tokens=64),
    Selection(model="mistral-7b", input_tokens=32000, sliding_window=1024),
    Selection(model="jamba-v0.1", tp=2, input_tokens=8192, attention_layers=8),
]


@pytest.mark.parametrize("selection", CASES, ids=lambda s: s.model)
def test_selection_sweep_and_cli_call_agree(selection, capsys):
    h100 = load_platform("h100-sxm")
    model = with_layer_mix(
        load_model(selection.model),
        sliding_window=selection.sliding_window,
        attention_layers=selection.attention_layers,
    )
    assert build_model(selection).name == model.name
    scenario = build_scenario(selection)
    assert isinstance(scenario, Scenario)
    expected = predict(model, h100, scenario)
    by_batch = sweep(selection, "batch", (float(selection.batch),))
    assert by_batch["tpot_s"].iloc[0] == pytest.approx(expected.tpot_s, rel=1e-12)
    assert by_batch["ttft_s"].iloc[0] == pytest.approx(expected.ttft_s, rel=1e-12)
    command = shlex.split(predict_command(selection))
    assert command[:2] == ["codesign", "predict"]
    main([*command[1:], "--json"])
    summary = json.loads(capsys.readouterr().out)["summary"]
    assert summary["tpot_s"] == pytest.approx(expected.tpot_s, rel=1e-9)
    assert summary["ttft_s"] == pytest.approx(expected.ttft_s, rel=1e-9)


def test_background_imports_start_once_and_skip_what_is_not_installed(monkeypatch):
    """The warm-up thread imports each listed module once per process; a module that is
    not installed is skipped, not raised; a second start with the same list is a no-op."""
    import sys

    from app.dashboard import warm_up

    monkeypatch.setattr(warm_up, "_started", set())
    monkeypatch.delitem(sys.modules, "json.tool", raising=False)
    modules = ("no_such_module_for_the_warm_up", "json.tool")
    warm_up.import_all(modules)  # the thread's body, run here
    assert "json.tool" in sys.modules
    assert warm_up.start_background_imports(modules) is True
    assert warm_up.start_background_imports(modules) is False
