"""Where the shipped data files live: the ``codesign_data`` package (``data/`` in a checkout).

``CODESIGN_DATA_DIR`` overrides the location (a folder holding ``hardware/``, ``models/``,
``scaling/`` ...), e.g. to try edited presets without reinstalling.
"""

import os
from importlib.resources import files
from pathlib import Path

from .errors import InputError

DATA_DIR_VARIABLE = "CODESIGN_DATA_DIR"


def data_dir() -> Path:
    """Return the folder holding ``hardware/``, ``models/`` and ``scaling/``.

    Raises `InputError` when ``CODESIGN_DATA_DIR`` is set to something that is not a folder.
    """
    override = os.environ.get(DATA_DIR_VARIABLE)
    if override:
        path = Path(override)
        if not path.is_dir():
            raise InputError(
                f"{DATA_DIR_VARIABLE}={override!r} is not a folder; unset it to use the shipped "
                "data, or point it at a folder holding hardware/, models/ and scaling/"
            )
        return path
    return Path(str(files("codesign_data")))
