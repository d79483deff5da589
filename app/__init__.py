"""Front ends: the ``codesign`` CLI and the Streamlit dashboard (no modelling here)."""
