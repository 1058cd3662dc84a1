"""`python integration/matrix [options]` (or `python -m matrix` from integration/): see the package's docstring."""

import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a folder: make the package importable by its name
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from matrix.cli import main  # noqa: E402

sys.exit(main())
