"""``codesign serve --samples N`` / ``--beams B``: decoding modes of every request
(parallel sampling, beam search; `search.serving.occupancy` for their KV blocks), and
``--images N``: a VLM's images in every prompt (`search.serving.workload.with_images`)."""

from __future__ import annotations

import argparse
from dataclasses import replace
from typing import Any

from genz import AXES
from roofline import InputError

#: Policies that simulate several sequences per request.
GROUP_POLICIES = ("continuous", "chunked")


def add_mode_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--samples`` and ``--beams``."""
    modes = parser.add_argument_group("decoding modes (continuous or chunked policy)")
    modes.add_argument(
        "--samples",
        type=int,
        default=1,
        help="parallel samples per request (vLLM n): one prefill, N sequences sharing the "
        "prompt's KV blocks, all returned (default 1)",
    )
    modes.add_argument(
        "--beams",
        type=int,
        default=1,
        help="beam width: B sequences per request sharing the prompt's KV blocks, one "
        "returned (default 1)",
    )
    images = AXES["images"]  # predict's flag and range (`genz.MODE_AXES`)
    modes.add_argument(
        images.flag,
        type=int,
        default=0,
        help=f"{images.help}: each prompt grows by N x tokens per image, its prefill "
        "runs the vision tower once (default 0)",
    )


def check_mode_flags(args: argparse.Namespace, policies: list[str]) -> None:
    """One mode at a time, within ``--max-seqs``, with a policy that simulates it (the
    ranges are in `roofline.FLAG_BOUNDS_BY_COMMAND`, checked before the command runs;
    ``--images``' is predict's, `genz.AXES`)."""
    AXES["images"].check(args.images, label="--images")
    if args.samples > 1 and args.beams > 1:
        raise InputError(f"give --samples or --beams, not both (got {args.samples}, {args.beams})")
    n, flag = (args.samples, "--samples") if args.samples > 1 else (args.beams, "--beams")
    if n == 1:
        return
    if n > args.max_seqs:
        raise InputError(
            f"{flag} {n} exceeds --max-seqs {args.max_seqs}: a request's sequences decode "
            "in one batch"
        )
    other = [policy for policy in policies if policy not in GROUP_POLICIES]
    if other:
        raise InputError(f"{flag} is simulated with --policy continuous or chunked, got {other[0]}")
    if args.spec_tokens is not None:
        raise InputError(f"{flag} is simulated without speculative decoding; drop --spec-tokens")


def image_tokens(args: argparse.Namespace) -> int:
    """Prompt tokens ``--images`` adds to each request (a one-line error for a model
    without a vision encoder, as predict gives)."""
    if not args.images:
        return 0
    from genz import image_tokens as tokens
    from genz import load_model

    return tokens(load_model(args.model), args.images)


def with_modes(workload: Any, args: argparse.Namespace) -> Any:
    """``workload`` decoding ``--samples`` or ``--beams`` sequences per request, its
    prompts carrying ``--images`` images each."""
    if args.images:
        from search.serving import with_images

        workload = with_images(workload, args.images, image_tokens(args) // args.images)
    if args.samples == 1 and args.beams == 1:
        return workload
    what = f"{args.samples} samples" if args.samples > 1 else f"beam width {args.beams}"
    return replace(
        workload,
        samples=args.samples,
        beams=args.beams,
        source=f"{workload.source}, {what} per request",
    )
