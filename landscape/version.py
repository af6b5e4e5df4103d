"""The version of landscape (the package's metadata reads it from here)."""

__version__ = "0.3.0.dev0"
