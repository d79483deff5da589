"""Streamlit pages of the what-if dashboard (entry point: ``app/dashboard/main.py``).

Each ``*_page.py`` file is a Streamlit page script: it reads the sidebar's
`~app.dashboard.state.Selection`, calls genz/roofline (through the cached
helpers in `state`) and draws with `app.charts`. No modelling happens here.
"""
