"""Declared options of ``animat imitate train`` (:class:`TrainConfig`: defaults < ``--config`` TOML <
command line; a run's ``config.json``). Training itself: :mod:`animat.imitate.train`."""

from __future__ import annotations

import importlib.util
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from animat.character.clip import load_clip, resolve_clip
from animat.character.demo import demo_clip
from animat.config import check_instance, option, read_options
from animat.errors import ConfigError
from animat.imitate.goal import GoalConfig
from animat.imitate.skills import skill_names
from animat.parallel import BACKENDS


@dataclass
class TrainConfig:
    """Everything that defines a training run. Times in s; ``timesteps`` are 30 Hz control steps."""

    clip: str | None = option(
        None, "DeepMimic clip file, or shared:NAME (shared/data/deepmimic/NAME)", shown="the demo clip"
    )
    clips: list[str] = option(
        help="Several clips (files or shared:NAME) for one policy, instead of clip; each a skill named after its "
        "file (shared:humanoid3d_walk.txt: walk); see animat.imitate.skills",
        factory=list,
    )
    multi_clip: str = option(
        "selector",
        "How several clips make one policy: selector (a one-hot skill command in the observation, a clip drawn per "
        "episode) | max (the largest of the clips' rewards)",
        choices=("selector", "max"),
    )
    timesteps: int = option(1_000_000, "Environment steps (30 Hz) to train for", ge=1, label="--timesteps")
    envs: int = option(2, "Parallel environments", ge=1)
    vec_env: str = option(
        "subproc",
        "subproc (processes) | dummy (one process) | batched (all in this process, stepped together on threads: "
        "animat.imitate.batch; the paper's r_I, no goal)",
        choices=("subproc", "dummy", "batched"),
    )
    threads: int = option(2, "Threads stepping the physics of vec_env = batched", ge=1)
    backend: str = option(
        "local",
        "local | ray: the environments as Ray actors, batched pieces of them (animat.imitate.vecenv)",
        choices=BACKENDS,
    )
    address: str | None = option(
        None, "Ray cluster (host:port, auto, ray://host:10001) for backend ray", shown="a local Ray"
    )
    actors: int = option(0, "Ray actors holding the environments (backend ray); 0: one per CPU of the cluster", ge=0)
    seed: int = option(0, "Random seed")
    init_policy: str | None = option(
        None,
        "Start from this policy (a run directory of animat imitate train, or pretrained:NAME): "
        "its actor, critic and observation normaliser; a fresh optimiser and return normaliser",
        shown="none",
    )
    max_minutes: float = option(
        0.0, "Stop learning after this many minutes, after the iteration that crosses them (0: no cap)", ge=0
    )
    # environment
    reward: str = option("paper", "Reward preset (animat.imitate.reward.PRESETS)")
    max_seconds: float = option(10.0, "Episode cap, s", gt=0)
    hold_seconds: float = option(
        0.0,
        "One-shot clips (Loop: none): s an episode goes on past the clip's end, imitating its last pose held still "
        "(DeepMimic holds it); 0: the episode ends with the clip (animat.imitate.skills)",
        ge=0,
    )
    rsi: bool = option(True, "Reference-state initialisation")
    early_termination: bool = option(True, "End an episode when the character falls")
    residual: bool = option(False, "Actions are offsets from the clip's pose (see ImitateEnv); DeepMimic: absolute")
    joint_limits: bool = option(
        False, "Per-axis ball-joint limits of DeepMimic's character file (character.add_ball_limits)"
    )
    substeps: int = option(20, "Physics steps per 30 Hz control step (20: 600 Hz)", ge=1)
    pose_termination: float = option(
        0.0,
        "End an episode when a key body (head, hands, feet) is farther than this from the reference, m "
        "(MimicKit: 1.0); 0: off",
        ge=0,
    )
    target_obs: bool = option(
        False,
        "Observe where the reference is, seen from the character (root position and orientation, hands "
        "and feet in its heading frame; MimicKit's tar_obs): lets the policy correct drift",
    )
    # optional task goal r_G (target heading and speed, animat.imitate.goal); reward w_I r_I + w_G r_G
    goal: bool = option(False, "Add the task goal r_G (target heading and speed)")
    goal_weights: list[float] = option(help="[w_I, w_G] when goal is on", factory=lambda: [0.7, 0.3])
    goal_heading_range: float = option(math.pi, "rad, ± around the clip's direction of travel")
    goal_speed: list[float] = option(help="[low, high] m/s; empty: the clip's mean speed", factory=list)
    goal_change_seconds: list[float] = option(
        help="[low, high] s between new goals; empty: one per episode", factory=list
    )
    # policy (Gaussian, state-independent log std)
    net_arch: list[int] = option(help="Hidden layers of actor and critic", factory=lambda: [1024, 512], ge=1)
    activation: str = option("relu", "relu | tanh", choices=("relu", "tanh"))
    log_std_init: float = option(-1.0, "Initial log std (e^-1 ≈ 0.37 rad on every PD target)")
    action_std: float = option(
        0.0, "Fixed action noise σ, rad, not learned (MimicKit's DeepMimic: 0.05); 0: learned from log_std_init", ge=0
    )
    normalize_obs: bool = option(True, "Running observation normalisation")
    normalize_reward: bool = option(
        False,
        "PPO sees rewards over the running std of the discounted return (SB3's VecNormalize "
        "norm_reward); metrics.csv stays in r_I",
    )
    # PPO (SB3 names)
    learning_rate: float = option(1e-4, "Adam learning rate", gt=0)
    n_steps: int = option(1024, "Steps per environment per iteration", ge=1)
    batch_size: int = option(512, "Minibatch size", ge=1)
    n_epochs: int = option(5, "Epochs per iteration", ge=1)
    gamma: float = option(0.95, "Discount (DeepMimic's); above 1 returns grow without bound", gt=0, le=1)
    gae_lambda: float = option(0.95, "GAE lambda", gt=0, le=1)
    clip_range: float = option(0.2, "PPO clip range", gt=0)
    schedule: str = option(
        "constant",
        "constant | linear: learning rate and clip range fall linearly to 0 at timesteps",
        choices=("constant", "linear"),
    )
    ent_coef: float = option(0.0, "Entropy coefficient")
    vf_coef: float = option(0.5, "Value-loss coefficient")
    max_grad_norm: float = option(0.5, "Gradient-norm clip")
    target_kl: float | None = option(None, "Stop an update early past this KL")
    torch_threads: int = option(
        1, "Torch intra-op threads in the learner; 0: torch's default (all cores; slow when the envs share them)", ge=0
    )
    rollout_torch_threads: int = option(
        1,
        "Torch intra-op threads while collecting rollouts (the policy's forward on one observation per "
        "environment a step: a small batch, faster on one thread); 0: as torch_threads",
        ge=0,
    )
    # outputs
    eval_episodes: int = option(10, "Deterministic evaluation episodes before and after", ge=0)
    checkpoint_every: int = option(100_000, "Timesteps between checkpoints; 0: final policy only", ge=0)
    progress_bar: bool = option(False, "SB3's own bar (the CLI shows a rich one instead)")

    def validate(self) -> TrainConfig:
        from animat.imitate.reward import preset

        check_instance(self)
        preset(self.reward)
        if not self.net_arch:
            raise ConfigError(f"net_arch must be a list of layer sizes ≥ 1 like [1024, 512], got {self.net_arch!r}")
        if self.progress_bar and (importlib.util.find_spec("tqdm") is None or importlib.util.find_spec("rich") is None):
            raise ConfigError("progress_bar = true needs the tqdm and rich packages (SB3's bar); the CLI shows its own")
        if self.clip is not None:
            resolve_clip(self.clip)
        self._validate_clips()
        if self.batched and (self.goal or preset(self.reward).variant != "paper"):
            where = "backend = 'ray'" if self.backend == "ray" else "vec_env = 'batched'"
            raise ConfigError(
                f"{where} computes the paper's r_I only: use reward = 'paper' and goal = false (got {self.reward!r}, "
                f"goal {self.goal})"
            )
        w = self.goal_weights
        if not (
            isinstance(w, list)
            and len(w) == 2
            and all(isinstance(x, (int, float)) and x >= 0 for x in w)
            and sum(w) > 0
        ):
            raise ConfigError(f"goal_weights must be [w_I, w_G] with both ≥ 0 and a positive sum, got {w!r}")
        if self.goal and not w[1] > 0:
            raise ConfigError(f"with goal = true, goal_weights needs w_G > 0 (else r_G is ignored), got {w!r}")
        self.goal_config()
        return self

    def _validate_clips(self) -> None:

        if not self.clips:
            return
        if not isinstance(self.clips, list) or not all(isinstance(c, str) for c in self.clips):
            raise ConfigError(f"clips must be a list of clip files or shared:NAME, got {self.clips!r}")
        if self.clip is not None:
            raise ConfigError(f"give clip or clips, not both (clip {self.clip!r}, clips {self.clips!r})")
        if self.goal:
            raise ConfigError("several clips (clips) take no task goal: use goal = false")
        skill_names(self.clips)
        for c in self.clips:
            resolve_clip(c)

    @property
    def skills(self) -> list[str]:
        """The skills' names (:func:`~animat.imitate.skills.skill_name` of each of ``clips``); empty for one clip."""

        return skill_names(self.clips) if self.clips else []

    @property
    def clip_label(self) -> str:
        """What the run imitates, for titles and summaries: the clip, ``demo``, or the skills joined by ``+``."""
        return "+".join(self.skills) if self.clips else self.clip or "demo"

    def steps_run(self, done: int = 0) -> int:
        """The step count PPO reaches when it trains from ``done`` steps to ``timesteps``: SB3 collects whole
        iterations of ``n_steps`` × ``envs`` steps and checks the count only between them, so a ``timesteps`` that
        is not ``done`` plus a multiple of that is rounded up to one."""
        per_iteration = self.n_steps * self.envs
        return done + -(-max(self.timesteps - done, 0) // per_iteration) * per_iteration

    def rounding_note(self, done: int = 0) -> str | None:
        """One line saying that :meth:`steps_run` rounds ``timesteps`` up (None where it is exact)."""
        per_iteration, runs_to = self.n_steps * self.envs, self.steps_run(done)
        if runs_to == self.timesteps:
            return None
        return (
            f"--timesteps {self.timesteps}: PPO trains in whole iterations of n_steps {self.n_steps} × {self.envs} "
            f"envs = {per_iteration} steps, so this run stops at {runs_to} (a multiple of {per_iteration} is exact)"
        )

    @property
    def batched(self) -> bool:
        """Whether the environments are :mod:`animat.imitate.batch`'s (vec_env batched, or on Ray)."""
        return self.vec_env == "batched" or self.backend == "ray"

    def goal_config(self):
        """The :class:`~animat.imitate.goal.GoalConfig` of the ``goal_*`` options, or None when ``goal`` is off."""

        if not self.goal:
            return None
        for name in ("goal_speed", "goal_change_seconds"):
            if not isinstance(getattr(self, name), (list, tuple)) or len(getattr(self, name)) not in (0, 2):
                raise ConfigError(f"{name} must be [] or [low, high], got {getattr(self, name)!r}")
        return GoalConfig(
            heading_range=float(self.goal_heading_range),
            speed=tuple(self.goal_speed) or None,
            change_seconds=tuple(self.goal_change_seconds) or None,
        )

    @classmethod
    def build(cls, file: str | Path | None = None, **overrides: Any) -> TrainConfig:
        cfg = cls(**read_options(cls, file, overrides))
        if cfg.clip is not None:
            cfg.clip = str(cfg.clip)
        return cfg.validate()

    def load_clip(self):
        """The clip (the first of ``clips`` where several are given); a ClipError in one line for a bad file."""

        if self.clips:
            return self.load_clips()[0]
        return demo_clip() if self.clip is None else load_clip(resolve_clip(self.clip))

    def load_clips(self) -> list | None:
        """Every clip of ``clips`` (each read and checked against the humanoid3d skeleton: 44 numbers a frame,
        ClipError in one line otherwise), or None for a one-clip run."""

        return [load_clip(resolve_clip(c)) for c in self.clips] if self.clips else None
