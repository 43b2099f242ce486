"""The version, in a module of its own so that a stage can read it without the public facade."""

__version__ = "0.1.0"
