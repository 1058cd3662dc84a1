"""Test double of hipdnn-ep-compiler (see tests/fakes/README.md)."""
__version__ = "0.0.1+fake"
