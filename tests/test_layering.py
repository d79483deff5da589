"""Layer rules from DESIGN.md that a test can check cheaply."""

import subprocess
import sys


def test_numerical_core_imports_without_pandas_or_front_ends():
    code = (
        "import sys; import roofline, genz.predict, genz.serving, genz.economics, scaling_law; "
        "bad = [m for m in ('pandas', 'streamlit', 'plotly', 'app', 'search') if m in sys.modules]; "
        "print(','.join(bad))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == ""
