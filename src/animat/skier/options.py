"""Declared options of ``animat skier train`` (:class:`TrainConfig`: its config file, command line and
a run's ``config.json``); the body and world parameters of its ``[skier]`` table are
:class:`animat.skier.model.SkierParams`' own declarations. Imports no MuJoCo (the command line reads
its help and defaults from here): the skier's modules are imported where a method needs them."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from animat.config import check_instance, option, read_options
from animat.errors import ConfigError
from animat.evolve.strategies import EVOLUTION_STRATEGIES
from animat.evolve.strategies.keyframe_ga import PARENT_PROBS, KeyframeParams
from animat.skier.modes import FRICTION_MODES, HIP_MODES

BACKENDS = ("local", "ray")  # as animat.evolve.evaluate's (not imported here: it loads JAX)
INIT_NOISE = ("symmetric", "free")  # the noise of generation 0's standing seeds (animat.skier.gene.standing_genes)
TAU = 0.5  # s per keyframe state of a gene (animat.skier.gene)
REPLAY_SETTINGS = (
    "seconds",
    "frame_dt",
    "fall_deg",
    "bonus",
)  # what a gene file carries so that its replay scores as training did
STRATEGIES = ("keyframe_ga", *EVOLUTION_STRATEGIES)  # --strategy: the slides' GA, or an evolution strategy (loads JAX)


@dataclass
class TrainConfig:
    """Everything that defines a run (defaults < config file < command line)."""

    # what a run whose config.json predates an option ran with: the slides' GA (before issue 24's symmetric breeding),
    # then the symmetric one-axis skier (the default until the V-skate, issue 49; configs/skier_symmetric.toml)
    OLD_DEFAULTS: ClassVar[dict[str, Any]] = {
        "symmetric": False,
        "hip": "one-axis",
        "tau": TAU,
        "init_noise": "symmetric",
        "init_spread_deg": 0.0,
        "init_toe_deg": 0.0,
        "skate_weight": 0.0,
        "skate_min_yaw_deg": 10.0,
        "skate_max_yaw_deg": 180.0,
        "creep_rate": 0.0,
    }

    generations: int = option(250, "Number of generations", ge=1)
    population: int = option(50, "Skiers per generation", ge=1)
    seconds: float = option(20.0, "Seconds per evaluation", gt=0)
    seed: int = option(0, "Random seed", ge=0)
    strategy: str = option(
        "keyframe_ga",
        "keyframe_ga (the slides' GA) | cma_es | snes | open_es (evosax evolution strategies; they ignore elites, "
        "parent_probs, mutation_rate, symmetric, init_standing)",
        choices=STRATEGIES,
    )
    friction: str = option("anisotropic", "anisotropic | isotropic", choices=FRICTION_MODES)
    # the V-skate (issue 49; RESULTS.md, "Skier: V-skate"): the two-axis hip sways the pelvis over one ski
    hip: str = option("two-axis", "one-axis | two-axis (two more gene columns)", choices=HIP_MODES)
    backend: str = option("local", "local (a mujoco.rollout thread pool) | ray (Ray tasks)", choices=BACKENDS)
    ray_address: str | None = option(None, "Ray cluster address for --backend ray", shown="start a local one")
    n_states: int = option(10, "Keyframe states of a gene (even: the second half mirrors the first)", ge=1)
    tau: float = option(0.15, "Seconds per keyframe state (0.15: a 0.75 s stroke)", gt=0)
    elites: int = option(5, "Elites kept and bred from", ge=1)
    parent_probs: list[float] = option(help="Probability of each elite being a parent", factory=lambda: _parent_probs())
    mutation_rate: float = option(0.02, "Probability that a gene mutates", ge=0, le=1)
    creep_rate: float = option(
        0.05,
        "Probability that an angle also creeps: a small normal step after the uniform draws (0: the slides' GA)",
        ge=0,
        le=1,
    )
    creep_deg: float = option(3.0, "Standard deviation of a creep step, degrees", gt=0)
    # symmetric breeding keeps both sides alike: on the narrow one-axis stance a state that moves the left and right
    # limbs differently rolls the skier over sideways within ~2 s (RESULTS.md, "Skier: symmetric breeding"); a skate
    # needs the legs to differ, which the spread stance below stands (RESULTS.md, "Skier: V-skate")
    symmetric: bool = option(
        False, "Breed bilaterally symmetric states (each bred state its own mirror image; false: the slides' GA)"
    )
    frame_dt: float = option(0.02, "Seconds between scored frames", gt=0)
    fall_deg: float = option(80.0, "A tilt beyond this (degrees) is a fall")
    bonus: float = option(5.0, "Fitness bonus of a skier that does not fall")
    # a V-skate term (issue 24): the push-offs the replay reports, counted in training from the skis' contact sensors
    skate_weight: float = option(
        3.0,
        "Extra fitness per metre skated on push-offs that alternate legs with the ski angled outwards (skiers that "
        "do not fall)",
        ge=0,
    )
    skate_min_yaw_deg: float = option(15.0, "Outward ski yaw (degrees) a push-off needs to count for skate_weight")
    skate_max_yaw_deg: float = option(
        35.0, "Outward ski yaw (degrees) beyond which a push-off does not count for skate_weight", le=180
    )
    # issue 49: the servos' mechanical work (sum of |torque x joint speed|, animat.skier.effort) in metres, W / (m g)
    effort_weight: float = option(
        0.0,
        "Fitness lost per metre of height the servos' mechanical work over the scored motion would lift the skier "
        "(work / (mass g); 0: no effort term)",
        ge=0,
    )
    effort_free_cot: float = option(
        0.0,
        "Cost of transport (J/(kg m)) the effort term allows for free: only the work beyond it over the counted "
        "progress is charged (0: all of it)",
        ge=0,
    )
    nthread: int = option(0, "Rollout threads, or Ray workers (0: one per CPU)", ge=0, label="--threads")
    chunk_seconds: float = option(
        2.0, "Simulate in chunks this long and stop simulating skiers that fell (same fitness)", gt=0
    )
    # generation 0: this fraction is the standing pose plus bilaterally symmetric noise (sigma degrees), the rest
    # uniform random genes; random genes almost all fall within 2 s, so without standing seeds the GA starts from
    # nothing that skis (animat.skier.gene.standing_genes)
    init_standing: float = option(0.5, "Fraction of generation 0 seeded around the standing pose", ge=0, le=1)
    init_sigma_deg: float = option(20.0, "Noise of those seeds, degrees", ge=0)
    init_noise: str = option(
        "free",
        "symmetric (each seeded state its own mirror image) | free (left and right limbs apart)",
        choices=INIT_NOISE,
    )
    init_spread_deg: float = option(
        8.0,
        "Two-axis hip: the seeds' stance, each leg spread out this much (a wider base to shift weight over)",
        ge=0,
        le=45,
    )
    init_toe_deg: float = option(
        15.0,
        "Two-axis hip: the seeds' skis toed out this much each (degrees; a V to push off from)",
        ge=0,
        le=45,
    )
    anim_seconds: float = option(10.0, "Seconds in the animation (GIF, MP4; 0: none)", ge=0)
    skier: dict = option(help="SkierParams overrides (friction coefficients, timestep, ...)", factory=dict)

    def skier_params(self):
        """The :class:`~animat.skier.model.SkierParams` of the ``[skier]`` table, with ``friction`` and ``hip``."""
        from animat.skier.model import SkierParams

        clash = {k: self.skier[k] for k in ("friction", "hip") if k in self.skier and self.skier[k] != getattr(self, k)}
        if clash:
            raise ConfigError(
                f"set {', '.join(clash)} at the top level of the config (or with --{'/--'.join(clash)}), not in "
                f"[skier]: got {clash}"
            )
        return SkierParams.from_dict({**self.skier, "friction": self.friction, "hip": self.hip})

    @property
    def n_joints(self) -> int:
        from animat.skier.model import hip_joints

        return hip_joints(self.hip)

    def ga_params(self):

        return KeyframeParams(
            int(self.elites),
            tuple(float(p) for p in self.parent_probs),
            float(self.mutation_rate),
            bool(self.symmetric),
            float(self.creep_rate),
            float(self.creep_deg),
        )

    def validate(self) -> TrainConfig:
        check_instance(self)
        if self.n_states % 2:
            raise ConfigError(f"n_states must be even (the second half mirrors the first), got {self.n_states}")
        if self.population <= self.elites:
            raise ConfigError(f"population ({self.population}) must exceed elites ({self.elites})")
        if (
            self.elites < 2
            or len(self.parent_probs) != self.elites
            or any(p < 0 for p in self.parent_probs)
            or sum(p > 0 for p in self.parent_probs) < 2
        ):
            raise ConfigError(
                f"parent_probs must be {self.elites} non-negative numbers (one per elite, elites >= 2), at least two "
                f"of them > 0 (two different parents), got {self.parent_probs}"
            )
        for name, what in (("init_spread_deg", "spread"), ("init_toe_deg", "toe out")):
            if getattr(self, name) and self.hip != "two-axis":
                raise ConfigError(
                    f'{name} ({getattr(self, name)}) needs hip = "two-axis" (the one-axis hip cannot {what} a '
                    f"leg alone), got hip = {self.hip!r}"
                )
        dt = self.skier_params().timestep
        if not dt <= self.frame_dt <= self.seconds:
            raise ConfigError(f"need timestep ({dt} s) <= frame_dt ({self.frame_dt} s) <= seconds ({self.seconds} s)")
        return self

    @classmethod
    def build(cls, file: str | Path | None = None, **overrides: Any) -> TrainConfig:
        values = read_options(cls, file, overrides)
        try:
            return cls(**values).validate()
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"bad training option in {file or 'options'}: {exc}") from None

    @classmethod
    def from_run(cls, stored: dict[str, Any], **overrides: Any) -> TrainConfig:
        """The config of a run from its ``config.json`` (``stored``): an option it lacks has the value the run
        had (:attr:`OLD_DEFAULTS`), not today's default."""
        return cls.build(None, **{**cls.OLD_DEFAULTS, **stored, **overrides})


def _parent_probs() -> list[float]:

    return list(PARENT_PROBS)
