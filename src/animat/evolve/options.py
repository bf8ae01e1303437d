"""Declared options of the genetic algorithm (:class:`GAOptions`): the breeding and bookkeeping settings
that :meth:`animat.evolve.population.Population.run` takes and that the fly's training config declares
again (:func:`animat.config.same_as`), so that a value is accepted or refused by the same rule, with the
same message, from a config file, the command line or the library."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from animat.config import check_options, option
from animat.errors import ConfigError

MUTATIONS = ("normal", "additive")


@dataclass
class GAOptions:
    """Breeding (see :func:`animat.evolve.operators.next_generation`) and bookkeeping of a GA run."""

    crossover_prob: float = option(0.5, "Probability that a child's gene comes from its first parent", ge=0, le=1)
    mutation_rate: float = option(0.05, "Probability that a gene mutates", ge=0, le=1)
    mutation: str = option(
        "normal", "normal (a mutated gene is redrawn) | additive (noise is added to it)", choices=MUTATIONS
    )
    mutation_std: float | None = option(None, "Std of a mutation (None: the initial std, init_std)", ge=0)
    pool_frac: float = option(0.1, "Fraction of the population in the mating pool (at least 2)", gt=0, le=1)
    elite_frac: float = option(
        0.05, "Fraction copied unchanged into the next generation (at least 1 when > 0)", ge=0, lt=1
    )
    fitness_threshold: float | None = option(None, "Save the genome of each generation whose best exceeds this")
    delta_fitness: float | None = option(None, "Raise the threshold by this after each save (None: to that best)", gt=0)
    save_every: int = option(1, "Checkpoint every this many generations", ge=1)


@dataclass
class PopulationOptions:
    """What makes a population: its size, the spread of its first genes and its seed."""

    size: int = option(200, "Individuals per generation", ge=2)
    init_std: float = option(1.0, "Std of the first generation's weights and biases", gt=0)
    seed: int = option(0, "Random seed", ge=0)


#: The run settings that are not breeding options: how the fitness is called and the outputs' names.
EXTRA_SETTINGS = ("batched", "output_names")


def check_settings(settings: dict[str, Any], n_outputs: int) -> dict[str, Any]:
    """The run settings of :meth:`~animat.evolve.population.Population.run` (:class:`GAOptions`' fields
    plus :data:`EXTRA_SETTINGS`) checked by their declarations and normalised (fractions as floats,
    ``output_names`` as a list of ``n_outputs`` strings); ConfigError (one line) on a bad one."""
    s = dict(settings)
    check_options(GAOptions, {k: v for k, v in s.items() if k not in EXTRA_SETTINGS})
    if not isinstance(s["batched"], (bool, np.bool_)):
        raise ConfigError(f"batched must be True or False, got {s['batched']!r}")
    if s["output_names"] is not None and (
        isinstance(s["output_names"], str) or not isinstance(s["output_names"], Sequence)
    ):
        raise ConfigError(f"output_names must be a list of names, got {s['output_names']!r}")
    for name in ("crossover_prob", "mutation_rate", "pool_frac", "elite_frac"):
        s[name] = float(s[name])
    s["batched"] = bool(s["batched"])
    if s["output_names"] is not None:
        s["output_names"] = [str(n) for n in s["output_names"]]
        if len(s["output_names"]) != n_outputs:
            raise ConfigError(f"{len(s['output_names'])} output_names for {n_outputs} network outputs")
    return s


def run_defaults() -> dict[str, Any]:
    """The run settings' defaults: :class:`GAOptions`' and ``batched`` False, ``output_names`` None (in the
    order a checkpoint has always recorded them)."""
    ga = {f.name: f.default for f in fields(GAOptions)}
    breeding = ("crossover_prob", "mutation_rate", "mutation", "mutation_std", "pool_frac", "elite_frac")
    return {
        "batched": False,
        **{k: ga[k] for k in breeding},
        "output_names": None,
        **{k: v for k, v in ga.items() if k not in breeding},
    }
