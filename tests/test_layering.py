"""What import-linter (the layer contracts in pyproject.toml) cannot see: what loads at run time."""

import subprocess
import sys


def test_numerical_core_imports_without_pandas_or_front_ends():
    code = (
        "import sys; import roofline, genz, scaling_law; "
        "bad = [m for m in ('pandas', 'streamlit', 'plotly', 'pulp', 'app', 'search') "
        "if m in sys.modules]; print(','.join(bad))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == ""


def test_one_search_sub_package_does_not_load_the_others():
    code = (
        "import sys; import search.sizing; "
        "print(','.join(m for m in ('search.bits', 'search.codesign', 'pulp') if m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == ""
