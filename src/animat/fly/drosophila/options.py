"""Declared options of ``animat fly train --preset drosophila`` (its config file and its run's
``config.json``). The genetic algorithm's settings are :class:`animat.evolve.options.GAOptions`' own
declarations. Imports no JAX."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from animat.config import check_instance, option, read_options, same_as
from animat.errors import ConfigError
from animat.evolve.options import GAOptions, PopulationOptions
from animat.fly.curriculum import stage_configs
from animat.fly.options import TrainConfig

PRESET = "drosophila"
HIDDEN = (20, 20)  # the default network's hidden layers


@dataclass
class DrosophilaTrainConfig:
    """Everything that defines a drosophila training run (resolved: defaults < config file < command line)."""

    RUN_RECORD: ClassVar[tuple[str, ...]] = TrainConfig.RUN_RECORD  # a --from run's config.json records its source

    preset: str = option(
        PRESET, "The fly: drosophila, the real-scale fruit fly (animat.fly.drosophila)", choices=(PRESET,)
    )
    generations: int = option(100, "Number of generations", ge=1)
    population: int = option(48, "Flies per generation (at least 4: elites and a mating pool)", ge=4)
    seconds: float = option(1.0, "Episode length (s)", gt=0)
    fitness: str = option(
        "hover",
        "hover (hold the start point and a level stroke plane) | forward | back | left | right | up | down (fly that "
        "way at --speed, tracking a point that moves so; animat.fly.drosophila.tasks)",
        choices=("hover", "forward", "back", "left", "right", "up", "down"),
    )
    speed: float = option(0.3, "A direction task's speed, m/s", gt=0)
    position_weight: float = option(
        0.25, "A direction task's weight on tracking its moving point (per metre of error per m/s of speed)", ge=0
    )
    velocity_weight: float = option(
        1.0, "A direction task's weight on its 0.5 s windows' velocity error (per m/s of speed)", ge=0
    )
    starts: int = option(2, "Start states per fly (start 0 at rest; the others perturbed)", ge=1)
    start_pool: str | None = option(
        None,
        "Draw the perturbed starts (all but start 0, at rest) from this .npz of a steered fly's states at its "
        "hand-overs (animat fly handovers of a drosophila steering set): the states a network must take over from",
    )
    noise: float = option(0.05, "Sensor-noise std on the perturbed starts (network-input units)", ge=0)
    power_weight: float = option(
        0.01, "Fitness cost per W/kg of mechanical power (aerodynamic + induced + inertial)", ge=0
    )
    peak_weight: float = option(
        0.0, "Fitness cost per body length of the episode's largest height change (beside the mean)", ge=0
    )
    layers: list[int] | None = option(None, "Network layers, e.g. '12,20,20,11'", shown="12,20,20,11")
    activations: str | list[str] = option("tanh", "One activation for every layer, or one per non-input layer")
    seed: int = same_as(PopulationOptions, "seed")
    strategy: str = same_as(TrainConfig, "strategy")
    init_std: float = option(0.1, "Std of the first generation's weights and biases", gt=0)
    es_result: str = same_as(TrainConfig, "es_result")
    crossover_prob: float = same_as(GAOptions, "crossover_prob")
    mutation_rate: float = option(0.1, "Probability that a gene mutates", ge=0, le=1)
    mutation: str = option(
        "additive",
        "normal (a mutated gene is redrawn) | additive (noise is added to it)",
        choices=("normal", "additive"),
    )
    mutation_std: float | None = option(0.1, "Std of a mutation (None: the initial std, init_std)", ge=0)
    pool_frac: float = option(0.2, "Fraction of the population in the mating pool (at least 2)", gt=0, le=1)
    elite_frac: float = option(
        0.1, "Fraction copied unchanged into the next generation (at least 1 when > 0)", ge=0, lt=1
    )
    fitness_threshold: float | None = same_as(TrainConfig, "fitness_threshold")
    delta_fitness: float | None = same_as(TrainConfig, "delta_fitness")
    save_every: int = same_as(TrainConfig, "save_every")
    backend: str = same_as(TrainConfig, "backend")
    address: str | None = same_as(TrainConfig, "address")
    replay_seconds: float = same_as(TrainConfig, "replay_seconds")
    anim_seconds: float = same_as(TrainConfig, "anim_seconds")
    drosophila: dict = option(help="DrosophilaParams overrides, e.g. {n_stations = 8}", factory=dict)
    stages: list[dict] = same_as(TrainConfig, "stages")

    def fly_params(self):
        from animat.fly.drosophila.model import DrosophilaParams

        return DrosophilaParams.from_dict(self.drosophila)

    def validate(self) -> DrosophilaTrainConfig:
        """Checks every option by its declaration and the network against the fly; fills in the default
        network (``[12, *HIDDEN, 11]``)."""
        from animat.evolve.network import check_architecture, layer_activations
        from animat.fly.drosophila.rollout import N_INPUTS, N_OUTPUTS

        check_instance(self)
        self.fly_params()
        if self.layers is None:
            self.layers = [N_INPUTS, *HIDDEN, N_OUTPUTS]
        self.layers = [int(n) for n in self.layers]
        layer_activations(check_architecture(self.layers), self.activations)
        if self.layers[0] != N_INPUTS or self.layers[-1] != N_OUTPUTS:
            raise ConfigError(
                f"network layers {self.layers} do not fit the drosophila preset: first layer must be "
                f"{N_INPUTS} (observation size) and last {N_OUTPUTS} (wingbeat pattern parameters)"
            )
        if self.stages:
            stage_configs(self)  # every stage's options checked now, not hours later when it starts
        return self

    @classmethod
    def build(cls, file: str | Path | None = None, **overrides: Any) -> DrosophilaTrainConfig:
        """Defaults < ``file`` < ``overrides`` (a run's config.json may also hold :attr:`RUN_RECORD`, not options)."""
        return cls(**read_options(cls, file, overrides)).validate()
