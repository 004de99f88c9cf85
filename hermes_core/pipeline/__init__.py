"""The call pipeline of a tool system (see ``_pipeline`` for the stages)."""

from ._pipeline import Pipeline

__all__ = ["Pipeline"]
