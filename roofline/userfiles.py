"""Reading files users hand us: a regular file, a size limit, UTF-8, then YAML or JSON as data.

Every failure is one `InputError` line naming the file and what it should be.
Parsing is ``yaml.safe_load`` or ``json.loads`` only (no eval, no pickle); JSON's
``NaN``/``Infinity`` constants are refused, and lists or mappings nested deeper than
`MAX_NESTING_DEPTH` are refused before the recursive parsers see them (a 2 kB file
of ``[[[[...]]]]`` would otherwise exhaust Python's recursion limit). Directories,
FIFOs and devices are refused without being read (a FIFO would block forever).
Uploads (bytes from the dashboard) go through the same checks as files on disk.
"""

from __future__ import annotations

import csv
import functools
import json
import os
import re
import stat
from pathlib import Path
from typing import Any

import yaml

from .errors import InputError

#: Deepest nesting of lists/mappings accepted (configs, spaces and bits files use < 6).
MAX_NESTING_DEPTH = 32
#: U+FEFF, which Excel and Notepad write at the start of UTF-8 files; dropped on read.
BYTE_ORDER_MARK = "\ufeff"
#: YAML 1.2 floats PyYAML's YAML 1.1 resolver reads as strings: ``3.35e3``, ``4e0``,
#: ``1E-3`` (1.1 needs a dot and a signed exponent). Added to the user-file loader only.
_YAML_FLOAT = re.compile(r"^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)[eE][-+]?[0-9]+$")
#: A JSON string literal (brackets inside strings do not nest).
_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')


def read_user_text(path: str | Path, *, kind: str, max_bytes: int) -> tuple[Path, str]:
    """Return ``(path, text)`` of a regular UTF-8 file of at most ``max_bytes`` bytes.

    ``kind`` names the file in messages (``'bits file'`` -> "bits file not found: x").
    The file is opened non-blocking and checked with ``fstat`` before any read, so a
    FIFO or device named by mistake is refused at once.
    """
    source = Path(path)
    try:
        descriptor = os.open(source, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        raise InputError(f"{kind} not found: {source}") from None
    except IsADirectoryError:
        raise InputError(f"{source}: a directory, not a regular file; not a {kind}") from None
    except OSError as error:
        raise InputError(f"{source}: cannot be read ({error.strerror}); not a {kind}") from None
    mode = os.fstat(descriptor).st_mode
    if not stat.S_ISREG(mode):
        os.close(descriptor)
        what = "a directory" if stat.S_ISDIR(mode) else "a FIFO, socket or device"
        raise InputError(f"{source}: {what}, not a regular file; not a {kind}")
    with os.fdopen(descriptor, "rb") as handle:
        raw = handle.read(max_bytes + 1)
    return source, decode_user_bytes(raw, source, kind=kind, max_bytes=max_bytes)


def decode_user_bytes(raw: bytes, source: str | Path, *, kind: str, max_bytes: int) -> str:
    """The UTF-8 text of ``raw`` (a file's or an upload's bytes), at most ``max_bytes`` bytes."""
    if len(raw) > max_bytes:
        raise InputError(f"{source}: larger than {max_bytes} bytes; not a {kind}")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"{source}: not UTF-8 text; not a {kind}") from None
    return text.removeprefix(BYTE_ORDER_MARK)  # Excel's "CSV UTF-8" starts with one


def csv_failure(source: str | Path, line: int, error: Exception) -> InputError:
    """The one-line `InputError` for a ``csv.Error`` at ``line`` of ``source``.

    Python's csv module refuses fields longer than ``csv.field_size_limit()``
    (131,072 characters); that limit is kept (no cell of ours is near it) and named.
    """
    reason = str(error)
    if "field limit" in reason:
        reason = f"a field longer than {csv.field_size_limit()} characters"
    return InputError(f"{source}:{line}: not valid CSV ({reason})")


def parse_document(text: str, source: str | Path, *, fmt: str) -> Any:
    """Parse ``text`` as ``fmt`` (``'yaml'`` or ``'json'``) into plain Python data.

    Raises `InputError` for invalid syntax, non-finite JSON constants and nesting
    deeper than `MAX_NESTING_DEPTH` lists/mappings.
    """
    try:
        if fmt == "json":
            _check_json_depth(text)
            return json.loads(text, parse_constant=_reject_constant)
        return yaml.load(text, Loader=_DepthLimitedLoader)  # a SafeLoader: data only
    except _TooDeep:
        raise InputError(
            f"{source}: lists/mappings nested deeper than {MAX_NESTING_DEPTH} levels; "
            f"not accepted as {fmt.upper()} input"
        ) from None
    except (json.JSONDecodeError, yaml.YAMLError, ValueError) as error:
        first_line = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise InputError(f"{source}: not valid {fmt.upper()} ({first_line})") from None


def load_user_document(
    path: str | Path, *, kind: str, max_bytes: int, fmt: str | None = None
) -> Any:
    """Read and parse a YAML/JSON file; ``fmt`` defaults to JSON for ``.json``, else YAML.

    A YAML file inside the installed package's own data folder (a shipped preset, not a
    user's file nor a ``CODESIGN_DATA_DIR`` override) is parsed by libyaml
    (`_ShippedLoader`: the same resolvers, 5-10x faster) when PyYAML has it.
    """
    source, text = read_user_text(path, kind=kind, max_bytes=max_bytes)
    fmt = fmt or ("json" if source.suffix == ".json" else "yaml")
    if fmt == "yaml" and _ShippedLoader is not None and _is_packaged(source):
        try:
            return yaml.load(text, Loader=_ShippedLoader)
        except (yaml.YAMLError, ValueError):
            pass  # parsed again below, for the depth-limited loader's one-line message
    return parse_document(text, source, fmt=fmt)


def _is_packaged(source: Path) -> bool:
    """True when ``source`` lies in the installed ``codesign_data`` package's folder."""
    try:
        return source.resolve().is_relative_to(_packaged_data())
    except (OSError, ValueError):
        return False


@functools.cache
def _packaged_data() -> Path:
    from importlib.resources import files

    return Path(str(files("codesign_data"))).resolve()


def is_preset_file(path: Path) -> bool:
    """True when ``path`` (a preset folder joined with a typed name) is a file; False,
    not an exception, for a name no file can have (over the file system's 255-byte
    limit, or with a NUL), so that the caller reports an unknown name."""
    try:
        return path.is_file()
    except (OSError, ValueError):
        return False


def names_a_path(name_or_path: str | Path, suffixes: tuple[str, ...]) -> bool:
    """True when a ``--model``/``--hw``-style value is a file path, not a preset name:
    it ends in one of ``suffixes`` or contains a directory separator (``somedir/``,
    ``/tmp/fifo``); preset names have neither."""
    text = str(name_or_path)
    separators = [sep for sep in ("/", os.sep, os.altsep) if sep]
    return Path(text).suffix in suffixes or any(sep in text for sep in separators)


def load_user_upload(raw: bytes, name: str, *, kind: str, max_bytes: int, fmt: str) -> Any:
    """Parse an uploaded file's bytes with the checks `load_user_document` applies to a file."""
    return parse_document(
        decode_user_bytes(raw, name, kind=kind, max_bytes=max_bytes), name, fmt=fmt
    )


class _TooDeep(Exception):
    """Nesting beyond `MAX_NESTING_DEPTH` (turned into an `InputError` naming the file)."""


def _check_json_depth(text: str) -> None:
    """Raise `_TooDeep` when brackets outside strings nest beyond the limit (vectorised)."""
    if text.count("[") + text.count("{") <= MAX_NESTING_DEPTH:
        return  # too few openers to nest that deep (the common case: a config.json)
    import numpy as np  # here: ``import roofline`` (and the CLI's start) stays numpy-free

    codes = np.frombuffer(_JSON_STRING.sub("", text).encode(), dtype=np.uint8)
    opens = (codes == ord("[")) | (codes == ord("{"))
    closes = (codes == ord("]")) | (codes == ord("}"))
    depth = np.cumsum(opens.astype(np.int64) - closes.astype(np.int64))
    if depth.size and int(depth.max()) > MAX_NESTING_DEPTH:
        raise _TooDeep


class _DepthLimitedLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that refuses collections nested beyond `MAX_NESTING_DEPTH`.

    PyYAML's scanner and parser are iterative; only the composer recurses, once per
    nested collection, so counting there bounds the recursion.
    """

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_sequence_node(self, anchor: Any) -> Any:
        self._enter()
        try:
            return super().compose_sequence_node(anchor)
        finally:
            self._depth -= 1

    def compose_mapping_node(self, anchor: Any) -> Any:
        self._enter()
        try:
            return super().compose_mapping_node(anchor)
        finally:
            self._depth -= 1

    def _enter(self) -> None:
        self._depth += 1
        if self._depth > MAX_NESTING_DEPTH:
            raise _TooDeep


_DepthLimitedLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float", _YAML_FLOAT, list("-+0123456789.")
)


#: libyaml's safe loader with `_DepthLimitedLoader`'s resolvers, for the package's own
#: files only: libyaml's composer recurses in C, unchecked, so files from users keep the
#: depth-limited loader. None when PyYAML was built without libyaml.
_ShippedLoader: Any = None
if getattr(yaml, "CSafeLoader", None) is not None:

    class _ShippedLoader(yaml.CSafeLoader):  # type: ignore[no-redef, name-defined]
        """``yaml.CSafeLoader`` reading YAML 1.2 floats as `_DepthLimitedLoader` does."""

    _ShippedLoader.add_implicit_resolver(
        "tag:yaml.org,2002:float", _YAML_FLOAT, list("-+0123456789.")
    )


def _reject_constant(name: str) -> float:
    raise ValueError(f"non-finite number {name} is not allowed")
