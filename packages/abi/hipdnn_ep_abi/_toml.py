"""TOML parsing: the standard library's tomllib from Python 3.11, its backport tomli (the same API) on 3.10."""

from __future__ import annotations

try:
    from tomllib import loads  # novm: tomli below on 3.10
except ModuleNotFoundError:  # Python 3.10: tomli is a build and test requirement there
    from tomli import loads

__all__ = ["loads"]
