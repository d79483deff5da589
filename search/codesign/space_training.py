"""The ``training`` section of a co-design space: the platform, device count, model FLOP
utilisation (a number or a width-depth model) and context of the training-time estimate."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from roofline import InputError, Platform, load_platform
from scaling_law import MfuModel, load_mfu_model

from .axes import check_keys, number

#: ``training.mfu`` value that selects the shipped width-depth MFU model.
WIDTH_DEPTH_MFU = "width-depth"
#: Training-time defaults: one H100 SXM (dense bf16 peak 989.4 TFLOP/s), the width-depth MFU
#: model fitted on the Gemstones step times (`scaling_law.load_mfu_model`; MI250X nodes, so
#: its level on an H100 is an assumption, its width and depth trend what the data supports),
#: and Gemstones' training context of 2048 tokens.
DEFAULT_TRAINING = {
    "platform": "h100-sxm",
    "devices": 1,
    "mfu": WIDTH_DEPTH_MFU,
    "sequence_length": 2048,
}


@dataclass(frozen=True)
class TrainingSpec:
    """Training-time estimate: platform (its dense bf16 peak and hourly price), devices,
    model FLOP utilisation (one number in (0, 1], or None: ``mfu_model`` of each design's
    width and depth) and training context, tokens."""

    platform: Platform
    devices: int = 1
    mfu: float | None = None
    sequence_length: int = 2048
    mfu_model: MfuModel | None = None

    def mfu_of(self, width: Any, depth: Any) -> Any:
        """MFU of designs of these widths and depths: the fixed ``mfu`` or the model's."""
        if self.mfu is not None:
            return self.mfu
        model = self.mfu_model if self.mfu_model is not None else load_mfu_model()
        return model.mfu(width, depth)

    def describe_mfu(self) -> str:
        """``'0.4'`` or ``'width-depth model 0.0245 w^0.363 d^-0.104'`` for captions."""
        if self.mfu is not None:
            return f"{self.mfu:g}"
        model = self.mfu_model if self.mfu_model is not None else load_mfu_model()
        return (
            f"width-depth model {model.coefficient:.4g} x width^{model.width_exponent:.3f} x "
            f"depth^{model.depth_exponent:.3f}"
        )


def parse_training(section: dict[str, Any], root: Path) -> TrainingSpec:
    """The ``training`` section (paths relative to ``root``; defaults `DEFAULT_TRAINING`)."""
    where = "training"
    check_keys(section, tuple(DEFAULT_TRAINING), where)
    name = section.get("platform", DEFAULT_TRAINING["platform"])
    if not isinstance(name, str):
        raise InputError(f"{where}.platform must be a hardware preset or YAML file, got {name!r}")
    platform = load_platform(root / name if name.endswith((".yaml", ".yml")) else name)
    devices = section.get("devices", DEFAULT_TRAINING["devices"])
    if isinstance(devices, bool) or not isinstance(devices, int) or not 1 <= devices <= 1 << 20:
        raise InputError(f"{where}.devices must be an integer in [1, 1048576], got {devices!r}")
    given = section.get("mfu", DEFAULT_TRAINING["mfu"])
    mfu: float | None = None
    model = None
    if given == WIDTH_DEPTH_MFU:
        model = load_mfu_model()
    elif isinstance(given, str) and given.endswith(".json"):
        try:
            model = load_mfu_model(root / given)
        except InputError as error:
            raise InputError(f"{where}.mfu: {error}") from None
    else:
        mfu = number(given, f"{where}.mfu")
        if not 0 < mfu <= 1:
            raise InputError(
                f"{where}.mfu must be in (0, 1], {WIDTH_DEPTH_MFU!r} or a model .json, got {mfu:g}"
            )
    length = section.get("sequence_length", DEFAULT_TRAINING["sequence_length"])
    if isinstance(length, bool) or not isinstance(length, int) or not 1 <= length <= 1 << 24:
        raise InputError(f"{where}.sequence_length must be an integer >= 1, got {length!r}")
    return TrainingSpec(platform, devices, mfu, length, model)
