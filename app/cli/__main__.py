"""``python -m app.cli``: the ``codesign`` console script."""

from app.cli import main

raise SystemExit(main())
