"""Ember's version (``ember.__version__``), in a leaf module so that anything may read it."""

__version__ = "0.1.0"
