"""The compiler's version; the single source for pyproject (hatch) and the artifact metadata."""

__version__ = "0.4.5"
