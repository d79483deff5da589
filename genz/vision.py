"""Vision encoders of VLMs: a ViT tower plus an MLP projector turning each image into
tokens ahead of the decoder's prefill (LLaVA-style ``vision_config`` in ``config.json``).

Per image the tower runs ``S = (image_size / patch_size)^2 + 1`` tokens (patches and a
class token) through ``L`` pre-norm layers of bidirectional attention (``S^2`` pairs) and
a plain (fc1, GELU, fc2) MLP; the projector maps the ``S - 1`` patch features to the
decoder's width (``projector_layers`` linear layers), and those become prompt tokens.
The tower's parameters count in the model-level ``embedding`` weight group.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from roofline import InputError

if TYPE_CHECKING:
    from .model import ModelConfig

VISION_KEYS = ("hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size")


@dataclass(frozen=True)
class VisionConfig:
    """A ViT tower and projector (widths, counts, pixels)."""

    hidden_size: int
    num_layers: int
    num_heads: int
    intermediate_size: int
    image_size: int
    patch_size: int
    text_hidden_size: int
    projector_layers: int = 2

    def __post_init__(self) -> None:
        for label in (
            "hidden_size",
            "num_layers",
            "num_heads",
            "intermediate_size",
            "image_size",
            "patch_size",
            "text_hidden_size",
            "projector_layers",
        ):
            value = getattr(self, label)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InputError(f"vision_config.{label} must be an integer >= 1, got {value!r}")
        if self.image_size % self.patch_size:
            raise InputError(
                f"vision_config.patch_size ({self.patch_size}) must divide image_size "
                f"({self.image_size})"
            )

    @property
    def patches(self) -> int:
        """Patches per image, which become the decoder's image tokens."""
        return (self.image_size // self.patch_size) ** 2

    @property
    def tokens_per_image(self) -> int:
        """Prompt tokens each image adds to the decoder."""
        return self.patches

    def params(self) -> float:
        """Tower and projector parameters (patch embedding without bias, class and
        position embeddings, pre/post layer norms, per layer q/k/v/o and fc1/fc2 with
        biases and two layer norms; projector layers with biases)."""
        h, i, p = self.hidden_size, self.intermediate_size, self.patch_size
        embed = 3 * p * p * h + h + (self.patches + 1) * h + 2 * h
        layer = 4 * (h * h + h) + (h * i + i) + (i * h + h) + 4 * h
        t = self.text_hidden_size
        projector = h * t + t + (self.projector_layers - 1) * (t * t + t)
        return float(embed + self.num_layers * layer + 2 * h + projector)


def vision_from_config(config: dict[str, Any], text_hidden: int, origin: str) -> VisionConfig:
    """The `VisionConfig` of a LLaVA-style config (``vision_config`` section)."""
    section = config["vision_config"]
    if not isinstance(section, dict):
        raise InputError(f"{origin}: vision_config must be a mapping")
    missing = [key for key in (*VISION_KEYS, "image_size", "patch_size") if key not in section]
    if missing:
        raise InputError(
            f"{origin}: vision_config is missing {', '.join(repr(key) for key in missing)}"
        )
    projector = config.get("projector_layers", 2)
    return VisionConfig(
        hidden_size=section["hidden_size"],
        num_layers=section["num_hidden_layers"],
        num_heads=section["num_attention_heads"],
        intermediate_size=section["intermediate_size"],
        image_size=section["image_size"],
        patch_size=section["patch_size"],
        text_hidden_size=text_hidden,
        projector_layers=projector,
    )


def image_tokens(model: ModelConfig, images: int) -> int:
    """Prompt tokens ``images`` images add to a request of ``model`` (a one-line error
    naming ``--images`` for a model without a vision encoder, as `genz.predict`)."""
    if isinstance(images, bool) or not isinstance(images, int) or images < 0:
        raise InputError(f"--images must be an integer >= 0, got {images!r}")
    if not images:
        return 0
    if model.vision is None:
        raise InputError(f"--images: {model.name} has no vision encoder (vision_config)")
    return images * model.vision.tokens_per_image
