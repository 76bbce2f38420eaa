"""`GenerationError`: a task could not be built from its draws.

Its own module so that everything a scenario builds with (the context's catalog look-ups, the
shared blocks, the scenario base) raises the one class the generation loop catches.
"""


class GenerationError(ValueError):
    """A task could not be built from these draws (the caller counts it and moves on)."""
