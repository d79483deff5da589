"""Sidebar model controls: a model preset, or an uploaded Hugging Face ``config.json``
(checked as the CLI checks a file, and kept across pages that do not draw the uploader)."""

from __future__ import annotations

import json
from typing import Any

import streamlit as st

from genz import MAX_CONFIG_BYTES, ModelConfig, list_models, model_from_hf_config
from roofline import load_user_upload

from .state import UPLOADED_CONFIG_NAME, cached_model

UPLOAD_OPTION = "upload a config.json..."
#: Session-state key of the last accepted upload: (file name, canonical JSON text).
KEPT_UPLOAD_KEY = "kept_config_upload"


class NoModelYet(Exception):
    """The user chose to upload a config but has not uploaded one yet."""


def _on_model_change() -> None:
    name = st.session_state.model
    if name != UPLOAD_OPTION:
        st.session_state.weight_bits = cached_model(name, None).default_weight_bits


def model_widgets(bar: Any) -> tuple[str | None, ModelConfig]:
    """The model preset or upload; returns the uploaded JSON (None for a preset) and the
    model, or raises `NoModelYet` while an upload is pending."""
    bar.header("Model")
    bar.selectbox(
        "Model preset", [*list_models(), UPLOAD_OPTION], key="model", on_change=_on_model_change
    )
    if st.session_state.model != UPLOAD_OPTION:
        return None, cached_model(st.session_state.model, None)
    upload = bar.file_uploader(
        "Hugging Face config.json (at most 1 MB)",
        type=["json"],
        key="config_upload",
        max_upload_size=1,
    )
    if upload is None:
        # An upload is widget state too: a page without the uploader drops it, so the last
        # accepted one is kept under its own key.
        earlier = st.session_state.get(KEPT_UPLOAD_KEY)
        if earlier is None:
            raise NoModelYet("Upload a config.json in the sidebar, or pick a model preset.")
        name, model_json = earlier
        bar.caption(f"Using {name}, uploaded earlier; upload another file to replace it.")
        return model_json, cached_model(UPLOADED_CONFIG_NAME, model_json)
    model_json = config_upload_json(upload.name, upload.getvalue())
    st.session_state[KEPT_UPLOAD_KEY] = (upload.name, model_json)
    return model_json, cached_model(UPLOADED_CONFIG_NAME, model_json)


def config_upload_json(name: str, raw: bytes) -> str:
    """Canonical JSON text of an uploaded ``config.json``, checked as the CLI checks a file
    (size, UTF-8, nesting depth, JSON, a model `model_from_hf_config` accepts)."""
    document = load_user_upload(
        raw, name, kind="config.json", max_bytes=MAX_CONFIG_BYTES, fmt="json"
    )
    model_from_hf_config(document, default_name="uploaded", origin=name)
    return json.dumps(document, sort_keys=True)
