"""The engine for every genetic algorithm: strategies over an immutable state (``strategies/``), the one
generation loop (``loop``), the paper's ``Population`` API over them, networks, genomes, checkpoints, evaluation."""
