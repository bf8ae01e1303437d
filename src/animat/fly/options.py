"""Declared options of the fly's verbs: :class:`TrainConfig` (``animat fly train``, its config file and
its run's ``config.json``) and :class:`ReplayOptions` (``animat fly replay``). The genetic algorithm's
settings are :class:`animat.evolve.options.GAOptions`' own declarations (the same rules as the
library's ``Population``). Imports no JAX: the command line reads its help and defaults from here."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from animat.config import check_instance, option, read_options, same_as
from animat.errors import ConfigError
from animat.evolve.options import GAOptions, PopulationOptions
from animat.evolve.strategies import EVOLUTION_STRATEGIES
from animat.fly.curriculum import stage_configs
from animat.fly.model import FlyParams
from animat.fly.steer.commands import parse_script

HIDDEN = (20, 20)  # the default network's hidden layers
STEERING_TASKS = (
    "hover",
    "forward",
    "back",
    "left",
    "right",
    "up",
    "down",
    "goal",
)  # = animat.fly.tasks.TASKS (no JAX here)
STRATEGIES = (
    "paper_ga",
    *EVOLUTION_STRATEGIES,
)  # --strategy: the paper's GA, or an evolution strategy (animat.evolve.strategies)
ES_RESULTS = ("best", "centre")  # --es-result: what a strategy's run keeps (animat.fly.evolve.run_strategy)


@dataclass
class TrainConfig:
    """Everything that defines a training run (resolved: defaults < config file < command line)."""

    preset: str = option(
        "paper", "The fly: paper, the paper's fly in its simulation units (animat.fly.model)", choices=("paper",)
    )
    generations: int = option(100, "Number of generations", ge=1)
    population: int = option(200, "Flies per generation (at least 4: elites and a mating pool)", ge=4)
    seconds: float = option(3.0, "Episode length (s)", gt=0)
    fitness: str = option("lateral", "hover | mean-height | final-height | lateral (see animat.fly.tasks)")
    starts: int = option(1, "Start states per fly (1: at rest only; more: perturbed starts too, for robustness)", ge=1)
    noise: float = option(0.0, "Sensor-noise std on the perturbed starts (network-input units)", ge=0)
    layers: list[int] | None = option(
        None, "Network layers, e.g. '15,20,20,3'", shown="15,20,20,3; 18,20,20,6 with --asymmetric"
    )
    activations: str | list[str] = option("tanh", "One activation for every layer, or one per non-input layer")
    control_ms: float = option(10.0, "Control interval (ms)", gt=0)
    asymmetric: bool = option(False, "Drive both wings (18 in, 6 out)", shown="symmetric")
    seed: int = same_as(PopulationOptions, "seed")
    strategy: str = option(
        "paper_ga",
        "paper_ga (the paper's GA) | cma_es | snes | open_es (evosax evolution strategies; they ignore the GA's "
        "breeding settings)",
        choices=STRATEGIES,
    )
    init_std: float = same_as(PopulationOptions, "init_std")
    es_result: str = option(
        "best",
        "What an evolution strategy's run keeps as its genome: best (the best sample it evaluated) | centre "
        "(its distribution's final mean, evaluated once more)",
        choices=ES_RESULTS,
    )
    crossover_prob: float = same_as(GAOptions, "crossover_prob")
    mutation_rate: float = same_as(GAOptions, "mutation_rate")
    mutation: str = same_as(GAOptions, "mutation")
    mutation_std: float | None = same_as(GAOptions, "mutation_std")
    pool_frac: float = same_as(GAOptions, "pool_frac")
    elite_frac: float = same_as(GAOptions, "elite_frac")
    fitness_threshold: float | None = same_as(GAOptions, "fitness_threshold")
    delta_fitness: float | None = same_as(GAOptions, "delta_fitness")
    save_every: int = same_as(GAOptions, "save_every")
    backend: str = option("local", "local | ray", choices=("local", "ray"))
    address: str | None = option(None, "Ray cluster address (with --backend ray)")
    replay_seconds: float = option(30.0, "Replay length of the best fly (s)", gt=0)
    anim_seconds: float = option(6.0, "Seconds of flight in the animation (0: none)", ge=0)
    fly: dict = option(help="FlyParams overrides, e.g. {speed_limits = [30, 20, 10]}", factory=dict)
    task: str | None = option(
        None,
        "Steering task instead of --fitness: hover | forward | back | left | right | up | down | goal "
        "(animat.fly.steer.tracking)",
        choices=STEERING_TASKS,
    )
    speed: float = option(2.0, "Target speed of the direction tasks and the goal network's commands (u/s)", gt=0)
    start_speed: float = option(
        0.5, "Steering tasks' perturbed starts: each velocity component uniform within ± this (u/s)", ge=0
    )
    start_angle: float = option(0.2, "... roll and pitch uniform within ± this (rad; any heading)", ge=0)
    start_spin: float = option(0.5, "... each angular-velocity component uniform within ± this (rad/s)", ge=0)
    start_pool: str | None = option(
        None,
        "Steering tasks: draw the perturbed starts (all but start 0, at rest) from this .npz of recorded fly states "
        "(animat fly handovers) instead of the uniform ranges",
    )
    position_weight: float = option(
        1.0,
        "Steering tasks: weight of the reference-point tracking term (position and tilt; animat.fly.tasks.tracking)",
        ge=0,
    )
    velocity_weight: float = option(
        0.0, "Steering tasks: weight of the 0.5 s window velocity error (animat.fly.tasks.window_velocity_error)", ge=0
    )
    window_power: float = option(
        1.0,
        "Steering tasks: the window velocity errors' power mean (1: their mean; larger: the worst windows count more)",
        ge=1,
    )
    cone_weight: float = option(
        0.0,
        "Steering tasks: weight of the windows' distance outside a cone about the command "
        "(animat.fly.tasks.window_cone_error)",
        ge=0,
    )
    cone_angle_deg: float = option(
        20.0, "Steering tasks: that cone's half-angle (degrees; the steering score's is 30)", gt=0, lt=90
    )
    segment: list[float] = option(
        help="--task goal: each random command lasts between these seconds",
        factory=lambda: [1.0, 3.0],
        gt=0,
        shown="1,3",
    )
    stages: list[dict] = option(
        help="Later stages of the run (TOML [[stages]] tables), each the stage before with these options changed "
        "(animat.fly.curriculum)",
        factory=list,
    )
    # what a run's config.json records besides these options: "from" = {"path", "generation"} of a --from run
    # and "start_pool_sha256": the start pool's digest when the run began (a resumed run refuses a changed pool)
    # and "distilled": the teacher and DistillConfig of a goal network distilled from a switch set
    # (animat.fly.steer.distill)
    RUN_RECORD: ClassVar[tuple[str, ...]] = ("from", "start_pool_sha256", "distilled")

    def fly_params(self) -> FlyParams:
        base = FlyParams.from_dict(self.fly)
        return base.with_(control_dt=self.control_ms / 1000.0, asymmetric=self.asymmetric)

    @property
    def n_inputs(self) -> int:
        """The network's inputs: the fly's observation, plus the command (3) for the goal network."""
        return self.fly_params().n_inputs + (3 if self.task == "goal" else 0)

    @property
    def label(self) -> str:
        """What the run is trained for: the task, or else the fitness."""
        return f"task {self.task}" if self.task else f"{self.fitness} fitness"

    def validate(self) -> TrainConfig:
        """Checks every option by its declaration, the fitness name and the network against the fly; fills in
        the default network (``[inputs, *HIDDEN, outputs]``)."""
        from animat.evolve.network import check_architecture, layer_activations
        from animat.fly.tasks import fitness_function

        check_instance(self)
        fitness_function(self.fitness)
        params = self.fly_params()
        if self.layers is None:
            self.layers = [self.n_inputs, *HIDDEN, params.n_outputs]
        self.layers = [int(n) for n in self.layers]
        layer_activations(check_architecture(self.layers), self.activations)
        if self.layers[0] != self.n_inputs or self.layers[-1] != params.n_outputs:
            raise ConfigError(
                f"network layers {self.layers} do not fit the fly: first layer must be {self.n_inputs} "
                f"(observation size{' + command' if self.task == 'goal' else ''}) and last "
                f"{params.n_outputs} (wing angles)"
                f"{' with --asymmetric' if self.asymmetric else ''}"
            )
        if len(self.segment) != 2 or self.segment[0] > self.segment[1]:
            raise ConfigError(f"segment must be [shortest, longest] seconds, got {self.segment}")
        if self.start_pool is not None and self.task is None:
            raise ConfigError(
                "start_pool is for the steering tasks (--task): the fitness runs fly from their own starts"
            )
        if self.stages:
            stage_configs(self)  # every stage's options checked now, not hours later when it starts
        return self

    @classmethod
    def build(cls, file: str | Path | None = None, **overrides: Any) -> TrainConfig:
        """Defaults < ``file`` < ``overrides`` (a run's config.json may also hold :attr:`RUN_RECORD`, not options)."""
        return cls(**read_options(cls, file, overrides)).validate()


@dataclass
class ReplayOptions:
    """``animat fly replay``: how long to fly the saved genome and how much of it to animate."""

    seconds: float = option(30.0, "Simulated time (s)")
    anim_seconds: float = option(6.0, "Seconds of flight in the animation (0: none)")

    @classmethod
    def build(cls, file: str | Path | None = None, **overrides: Any) -> ReplayOptions:
        opts = cls(**read_options(cls, file, overrides, what="replay option"))
        if not (opts.seconds > 0 and opts.anim_seconds >= 0):  # finite: read_options refuses inf and NaN
            raise ConfigError(
                f"--seconds must be finite and > 0 and --anim-seconds finite and >= 0, got {opts.seconds} and "
                f"{opts.anim_seconds}"
            )
        return opts


@dataclass
class DistillConfig:
    """``animat fly distill``: the goal network learnt from a steering set's switch networks by dataset
    aggregation (DAgger, :mod:`animat.fly.steer.distill`)."""

    hidden: list[int] = option(help="The goal network's hidden layers", factory=lambda: [64, 64], shown="64,64")
    rounds: int = option(
        12,
        "DAgger rounds: round r's episodes are flown by the switch networks with probability 0.5^r, else by the goal "
        "network",
        ge=1,
    )
    episodes: int = option(192, "Episodes flown per round", ge=2)
    seconds: float = option(12.0, "Episode length (s)", gt=0)
    segment: list[float] = option(
        help="Each random command lasts between these seconds", factory=lambda: [2.0, 4.0], gt=0, shown="2,4"
    )
    epochs: int = option(15, "Passes over every round's records so far, per round", ge=1)
    batch: int = option(2048, "Minibatch size (ticks)", ge=1)
    learning_rate: float = option(1e-3, "Adam's learning rate in round 0", gt=0)
    decay: float = option(0.8, "Learning-rate factor per round", gt=0, le=1)
    start_pool: str | None = option(
        None, "Half the episodes start from the states of this .npz (animat fly handovers), the rest at rest"
    )
    seed: int = option(0, "Seed of the episodes, their commands and the network's first weights")
    replay_seconds: float = option(14.0, "The distilled network's flight of every command in turn, from rest (s)", gt=0)
    anim_seconds: float = option(6.0, "Seconds of flight in the animation (0: none)", ge=0)

    @classmethod
    def build(cls, file: str | Path | None = None, **overrides: Any) -> DistillConfig:
        opts = check_instance(cls(**read_options(cls, file, overrides, what="distill option")))
        if len(opts.segment) != 2 or opts.segment[0] > opts.segment[1]:
            raise ConfigError(f"segment must be [shortest, longest] seconds, got {opts.segment}")
        if not opts.hidden or any(int(n) < 1 for n in opts.hidden):
            raise ConfigError(f"hidden must list at least one layer size >= 1, got {opts.hidden}")
        return opts


CONTROLLERS = (
    "switch",
    "goal",
)  # animat fly steer --controller: one network per command, or one taking the command as input
LOOKAHEAD_S = 1.0  # s flown ahead by each candidate network, every 0.5 s (animat.fly.steer.lookahead)


@dataclass
class SteerOptions:
    """``animat fly steer``: which controller flies the commands, how fast, how much of it to animate."""

    OPTION_NAME = "{flag}"

    commands: str | None = option(
        None,
        "Command script name:seconds,..., e.g. 'up:1,forward:2,left:2,hover:2' (commands: hover, forward, back, "
        "left, right, up, down)",
    )
    controller: str = option(
        "switch",
        "switch (one network per command, switched) | goal (one network taking the command as input)",
        choices=CONTROLLERS,
    )
    speed: float | None = option(None, "Target speed of the direction commands (u/s)", gt=0, shown="the steering set's")
    seed: int = option(0, "Seed of the start state")
    anim_seconds: float = option(20.0, "Seconds of flight in the animation (0: none)", ge=0)
    lookahead: float = option(
        LOOKAHEAD_S,
        "Where the set has several networks for a command: every 0.5 s fly each this many seconds ahead and "
        "keep the best (animat.fly.steer.lookahead); 0: its first network only",
        ge=0,
    )

    @classmethod
    def build(cls, file: str | Path | None = None, **overrides: Any) -> SteerOptions:

        opts = cls(**read_options(cls, file, overrides, what="steer option"))
        if opts.commands is not None:
            parse_script(opts.commands)
        return opts
