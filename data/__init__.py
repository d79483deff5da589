"""Shipped data: hardware and model presets, use cases, scaling tables, validation data.

Installed as the package ``codesign_data`` (see ``pyproject.toml``) so that presets are
found with ``importlib.resources`` from a wheel as well as from a checkout;
`roofline.data_dir` is the one way the code locates it.
"""
