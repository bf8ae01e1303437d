"""Another run of networks as the start of a new one (``--from``, :func:`animat.evolve.start.plan`'s
``read_source``): its final population for the paper GA (:func:`final_population`), its best genome as an
evolution strategy's first centre (:func:`best_genome`). Both take the hook ``inputs_to_add(layers, activations)
-> int``: it checks the source's network against the new run's (a one-line ConfigError else) and says how many
inputs the new network has beyond it, whose weights start at zero (a goal network's command inputs,
:func:`animat.evolve.network.widen_inputs`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from animat import runs
from animat.errors import ConfigError
from animat.evolve.genome_file import load_genome
from animat.evolve.network import widen_inputs
from animat.evolve.population import Population

InputsToAdd = Callable[[Sequence[int], Sequence[str]], int]


def final_population(
    source: Path, population: int, inputs_to_add: InputsToAdd, unit: str = "genomes"
) -> tuple[np.ndarray, dict]:
    """The final population's genes ``(P, G)`` of run ``source`` (its last checkpoint), widened by
    ``inputs_to_add``, and the ``from`` record ``{path, generation}``; ConfigError (one line) unless its size is
    ``population`` (``unit``: what its members are called in that message)."""
    src = Population.resume(source)
    added = inputs_to_add(src.layers, src.activations)
    if src.size != population:
        raise ConfigError(
            f"--from {str(source)!r}: its population has {src.size} {unit}, this run {population}; give "
            f"--population {src.size}"
        )
    return widen_inputs(src.genes, src.layers, added), {"path": str(source), "generation": int(src.generation)}


def best_genome(source: Path, strategy: str, inputs_to_add: InputsToAdd) -> tuple[np.ndarray, dict]:
    """The best genome ``(G,)`` of finished run ``source`` (its ``best_genome.npz``, any strategy's), widened by
    ``inputs_to_add``, and the ``from`` record ``{path, generation}`` (its summary's generations, 0 without one);
    ConfigError/CheckpointError (one line) for a run without one. ``strategy``: the new run's, for the message."""
    if not (source / "best_genome.npz").is_file():
        raise ConfigError(
            f"--from {str(source)!r} with --strategy {strategy}: it holds no best_genome.npz (is its training "
            "finished?)"
        )
    saved = load_genome(source / "best_genome.npz")
    layers = saved.genome.layers
    added = inputs_to_add(layers, saved.genome.activations)
    summary = source / "summary.json"
    generation = runs.read_json(summary).get("generations", 0) if summary.is_file() else 0
    return widen_inputs(saved.genome.genes, layers, added), {"path": str(source), "generation": int(generation)}
