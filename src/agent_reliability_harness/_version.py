"""The one place the harness version is written."""

__version__ = "0.3.0"
