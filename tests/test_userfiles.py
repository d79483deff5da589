"""The shared reader for user files: size limit, UTF-8, YAML/JSON as data only."""

import pytest

from roofline import InputError
from roofline.userfiles import load_user_document, read_user_text


def test_missing_oversized_and_binary_files_are_one_line_errors(tmp_path):
    with pytest.raises(InputError, match="space file not found"):
        read_user_text(tmp_path / "none.yaml", kind="space file", max_bytes=10)
    big = tmp_path / "big.yaml"
    big.write_text("a: 1\n" * 10)
    with pytest.raises(InputError, match="larger than 10 bytes; not a space file"):
        read_user_text(big, kind="space file", max_bytes=10)
    binary = tmp_path / "bin.yaml"
    binary.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(InputError, match="not UTF-8 text"):
        read_user_text(binary, kind="space file", max_bytes=100)


def test_yaml_is_parsed_as_data_not_objects(tmp_path):
    path = tmp_path / "evil.yaml"
    path.write_text("x: !!python/object/apply:os.system ['echo hi']\n")
    with pytest.raises(InputError, match="not valid YAML"):
        load_user_document(path, kind="space file", max_bytes=1000)


def test_json_non_finite_constants_are_refused(tmp_path):
    path = tmp_path / "x.json"
    path.write_text('{"a": Infinity}')
    with pytest.raises(InputError, match="non-finite number Infinity"):
        load_user_document(path, kind="law file", max_bytes=1000)
    path.write_text('{"a": 1.5}')
    assert load_user_document(path, kind="law file", max_bytes=1000) == {"a": 1.5}


def test_shipped_yaml_reads_the_same_with_libyaml_and_user_files_keep_the_depth_limit(tmp_path):
    """Every YAML file of the package's data folder parses to the same data with the
    libyaml loader used for shipped files as with the depth-limited loader users' files
    get (YAML 1.2 floats included); a file outside the package keeps the depth limit."""
    import yaml

    from roofline import data_dir
    from roofline.userfiles import _DepthLimitedLoader, _is_packaged, _ShippedLoader

    if _ShippedLoader is None:
        pytest.skip("PyYAML without libyaml")
    shipped = sorted(data_dir().rglob("*.yaml"))
    assert len(shipped) > 20 and all(_is_packaged(path) for path in shipped)
    for path in shipped:
        text = path.read_text(encoding="utf-8")
        assert yaml.load(text, Loader=_ShippedLoader) == yaml.load(
            text, Loader=_DepthLimitedLoader
        ), path
    assert yaml.load("x: 3.35e3", Loader=_ShippedLoader) == {"x": 3350.0}
    deep = tmp_path / "deep.yaml"
    deep.write_text("[" * 40 + "]" * 40)
    assert not _is_packaged(deep)
    with pytest.raises(InputError, match="nested deeper than"):
        load_user_document(deep, kind="test file", max_bytes=1000)
