"""Where the shipped data files live (``data/`` at the repository root).

``CODESIGN_DATA_DIR`` overrides the location, e.g. for a non-editable install.
"""

import os
from pathlib import Path


def data_dir() -> Path:
    """Return the folder holding ``hardware/``, ``models/`` and ``scaling/``."""
    override = os.environ.get("CODESIGN_DATA_DIR")
    if override:
        return Path(override)
    return Path(__file__).resolve().parent.parent / "data"
