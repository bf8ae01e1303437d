"""animat: simulate a body, evolve or learn how it moves, replace slow physics with a learned model."""

__version__ = "0.1.0"
