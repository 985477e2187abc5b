"""The package's version, in one place below every layer (the lab extension's package.json agrees)."""

__version__ = "0.1.0"
