"""PPO (Stable-Baselines3) on :class:`~animat.imitate.env.ImitateEnv`: configuration, the run, its run directory.

Read top to bottom: :class:`TrainConfig` (defaults < ``--config`` TOML < command line), then
:func:`train`: make K environments (``SubprocVecEnv`` across processes, or ``DummyVecEnv`` in
this one), wrap them in ``VecMonitor`` (episode returns and lengths) and ``VecNormalize``
(running observation normalisation; rewards are r_I ∈ [0, 1] and stay as they are), build PPO with
a Gaussian MLP policy (``net_arch`` for both actor and critic, ReLU by default), evaluate the
untrained policy, learn, evaluate again, and write the run directory:

``config.json``  resolved config;  ``metrics.csv``  one row per PPO iteration (rollout + update):
``timesteps``, ``episodes``, ``ep_return_mean`` (Σ r_I per episode, the "mean episode imitation
reward"), ``ep_len_mean`` (steps at 30 Hz), ``r_i_per_step_mean`` (return / length), ``nonfinite``
(episodes ended by a physics blow-up, see :class:`ImitateEnv`), losses,
``fps`` (with a task goal, returns and per-step means are of the total reward w_I r_I + w_G r_G);
``logs/progress.csv`` (+ TensorBoard event files when the ``tensorboard`` package is
installed) from SB3's logger;  ``policy.npz`` + ``policy.json`` (safe weights, see
:mod:`animat.imitate.policy`) and ``checkpoints/policy_<timesteps>.*``;
``plots/learning_curve.png``;  ``summary.json``;  ``checkpoints/train_state-<seq>.npz/.json`` + the
pointer ``checkpoints/latest.json`` (policy, optimiser and normaliser state and the step counter, see
:mod:`animat.imitate.resume`), written with every checkpoint (after the update that follows it) and at
the end (also when interrupted).

``train(cfg, out, resume=True)`` continues the run in ``out`` from its training state: the same
policy and Adam moments, normaliser and step counter (the environments start new episodes; PPO is
seeded with ``seed + timesteps done``); ``metrics.csv`` keeps its rows and grows (the first new row
gets the loss columns of the update the state was saved after, which the state holds), SB3's logs of
the new session go to ``logs/resume_<timesteps>/``, and ``checkpoints/policy_<timesteps>`` is written
at the start of each session (``policy_0`` for a new run). A run trained to ``timesteps`` whose
outputs a crash left out (no ``summary.json``) is finished without learning further.

Episode statistics in ``metrics.csv`` come from the stochastic training policy; ``summary.json``
also holds deterministic evaluations (``eval_episodes`` episodes, reference-state initialisation,
seeded) of the untrained and the final policy.
"""

from __future__ import annotations

import importlib.util
import math
import time
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Callable

import numpy as np

from animat import runs
from animat.config import merge_options
from animat.errors import CheckpointError, ConfigError

LOSS_FIELDS = ["approx_kl", "clip_fraction", "entropy_loss", "value_loss", "policy_gradient_loss", "explained_variance"]
METRIC_FIELDS = [
    "iteration", "timesteps", "episodes", "ep_return_mean", "ep_len_mean", "r_i_per_step_mean", "ep_seconds_mean",
    "nonfinite", "fps", "seconds", *LOSS_FIELDS, "std",
]


@dataclass
class TrainConfig:
    """Everything that defines a training run. Times in s; ``timesteps`` are 30 Hz control steps."""

    clip: str | None = None  # DeepMimic clip file, or shared:NAME (shared/data/deepmimic/NAME); None: the demo clip
    timesteps: int = 1_000_000
    envs: int = 2  # parallel environments
    vec_env: str = "subproc"  # subproc (processes) | dummy (in this process)
    seed: int = 0
    max_minutes: float = 0.0  # wall-clock cap on learning (stops after the iteration that crosses it); 0: none
    # environment
    reward: str = "paper"  # reward preset (animat.imitate.reward.PRESETS)
    max_seconds: float = 10.0  # episode cap
    rsi: bool = True
    early_termination: bool = True
    residual: bool = False  # actions are offsets from the clip's pose (see ImitateEnv); DeepMimic: absolute
    joint_limits: bool = False  # per-axis ball-joint limits of DeepMimic's character file (character.add_ball_limits)
    # optional task goal r_G (target heading and speed, animat.imitate.goal); reward w_I r_I + w_G r_G
    goal: bool = False
    goal_weights: list[float] = field(default_factory=lambda: [0.7, 0.3])  # [w_I, w_G] when goal is on
    goal_heading_range: float = math.pi  # rad, ± around the clip's direction of travel
    goal_speed: list[float] = field(default_factory=list)  # [low, high] m/s; empty: the clip's mean speed
    goal_change_seconds: list[float] = field(default_factory=list)  # [low, high] s between new goals; empty: one per episode
    # policy (Gaussian, state-independent log std)
    net_arch: list[int] = field(default_factory=lambda: [1024, 512])
    activation: str = "relu"
    log_std_init: float = -1.0  # std e^-1 ≈ 0.37 rad on every PD target at the start
    normalize_obs: bool = True
    # PPO (SB3 names)
    learning_rate: float = 1e-4
    n_steps: int = 1024  # per environment per iteration
    batch_size: int = 512
    n_epochs: int = 5
    gamma: float = 0.95  # DeepMimic's
    gae_lambda: float = 0.95
    clip_range: float = 0.2
    ent_coef: float = 0.0
    vf_coef: float = 0.5
    max_grad_norm: float = 0.5
    target_kl: float | None = None
    torch_threads: int = 1  # torch intra-op threads in the learner; 0: torch's default (all cores; slow when the envs share them)
    # outputs
    eval_episodes: int = 10
    checkpoint_every: int = 100_000  # timesteps; 0: final policy only
    progress_bar: bool = False  # SB3's own bar (the CLI shows a rich one instead)

    def validate(self) -> "TrainConfig":
        from animat.imitate.reward import preset

        preset(self.reward)
        for name in ("timesteps", "envs", "n_steps", "batch_size", "n_epochs"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ConfigError(f"{name} must be an integer ≥ 1, got {v!r}")
        if not self.net_arch or any(isinstance(n, bool) or not isinstance(n, int) or n < 1 for n in self.net_arch):
            raise ConfigError(f"net_arch must be a list of layer sizes ≥ 1 like [1024, 512], got {self.net_arch!r}")
        if self.vec_env not in ("subproc", "dummy"):
            raise ConfigError(f"vec_env must be 'subproc' or 'dummy', got {self.vec_env!r}")
        if self.activation not in ("relu", "tanh"):
            raise ConfigError(f"activation must be 'relu' or 'tanh', got {self.activation!r}")
        for name in ("max_seconds", "learning_rate", "clip_range"):
            if not float(getattr(self, name)) > 0:
                raise ConfigError(f"{name} must be > 0, got {getattr(self, name)!r}")
        for name in ("gamma", "gae_lambda"):  # a discount or a GAE weight above 1 lets returns grow without bound
            if not 0 < float(getattr(self, name)) <= 1:
                raise ConfigError(f"{name} must be in (0, 1], got {getattr(self, name)!r}")
        for name in ("eval_episodes", "checkpoint_every", "torch_threads", "max_minutes"):
            if getattr(self, name) < 0:
                raise ConfigError(f"{name} must be >= 0, got {getattr(self, name)!r}")
        if self.progress_bar and (importlib.util.find_spec("tqdm") is None or importlib.util.find_spec("rich") is None):
            raise ConfigError("progress_bar = true needs the tqdm and rich packages (SB3's bar); the CLI shows its own")
        if self.clip is not None:
            from animat.imitate.clip import resolve_clip

            resolve_clip(self.clip)
        w = self.goal_weights
        if not (isinstance(w, list) and len(w) == 2 and all(isinstance(x, (int, float)) and x >= 0 for x in w) and sum(w) > 0):
            raise ConfigError(f"goal_weights must be [w_I, w_G] with both ≥ 0 and a positive sum, got {w!r}")
        if self.goal and not w[1] > 0:
            raise ConfigError(f"with goal = true, goal_weights needs w_G > 0 (else r_G is ignored), got {w!r}")
        self.goal_config()
        return self

    def goal_config(self):
        """The :class:`~animat.imitate.goal.GoalConfig` of the ``goal_*`` options, or None when ``goal`` is off."""
        from animat.imitate.goal import GoalConfig

        if not self.goal:
            return None
        for name in ("goal_speed", "goal_change_seconds"):
            if not isinstance(getattr(self, name), (list, tuple)) or len(getattr(self, name)) not in (0, 2):
                raise ConfigError(f"{name} must be [] or [low, high], got {getattr(self, name)!r}")
        return GoalConfig(heading_range=float(self.goal_heading_range), speed=tuple(self.goal_speed) or None,
                          change_seconds=tuple(self.goal_change_seconds) or None)

    @classmethod
    def build(cls, file: str | Path | None = None, **overrides: Any) -> "TrainConfig":
        values = merge_options(cls, file, overrides)
        cfg = cls(**values)
        if cfg.clip is not None:
            cfg.clip = str(cfg.clip)
        return cfg.validate()

    def load_clip(self):
        from animat.imitate.clip import load_clip, resolve_clip
        from animat.imitate.demo import demo_clip

        return demo_clip() if self.clip is None else load_clip(resolve_clip(self.clip))


def make_env(cfg: TrainConfig, clip=None, **overrides):
    """One :class:`ImitateEnv` as ``cfg`` describes it (``overrides``: env keyword arguments)."""
    from animat.imitate.env import ImitateEnv
    from animat.imitate.reward import preset

    weights = dict(w_imitation=cfg.goal_weights[0], w_goal=cfg.goal_weights[1]) if cfg.goal else {}
    kw = dict(reward=preset(cfg.reward, **weights), rsi=cfg.rsi, early_termination=cfg.early_termination,
              max_seconds=cfg.max_seconds, residual=cfg.residual, goal=cfg.goal_config(), joint_limits=cfg.joint_limits)
    kw.update(overrides)
    return ImitateEnv(clip if clip is not None else cfg.load_clip(), **kw)


def tensorboard_available() -> bool:
    return importlib.util.find_spec("tensorboard") is not None or importlib.util.find_spec("tensorboardX") is not None


def evaluate(policy: Callable[[np.ndarray], np.ndarray], cfg: TrainConfig, episodes: int, seed: int, clip=None) -> dict:
    """Deterministic episodes (RSI as configured, seeded): mean return Σ r_I, length (steps) and r_I per step."""
    env = make_env(cfg, clip)
    returns, lengths = [], []
    for e in range(episodes):
        obs, _ = env.reset(seed=seed + e)
        total, n, done = 0.0, 0, False
        while not done:
            obs, r, terminated, truncated, _ = env.step(policy(obs))
            total, n, done = total + r, n + 1, terminated or truncated
        returns.append(total)
        lengths.append(n)
    ret, ln = np.array(returns), np.array(lengths)
    return {
        "episodes": int(episodes),
        "return_mean": float(ret.mean()) if episodes else math.nan,
        "len_mean": float(ln.mean()) if episodes else math.nan,
        "r_i_per_step_mean": float(ret.sum() / max(ln.sum(), 1)) if episodes else math.nan,
    }


def read_metrics(path: Path) -> list[dict]:
    """The rows of a ``metrics.csv`` written by :func:`train`, as numbers (empty cells stay empty), so that
    writing them again reproduces the file's text."""
    rows = runs.read_csv(path)
    ints = {"iteration", "timesteps", "episodes", "nonfinite"}
    try:
        return [{k: "" if v in ("", None) else int(v) if k in ints else float(v) for k, v in row.items()} for row in rows]
    except (TypeError, ValueError) as exc:
        raise CheckpointError(f"{str(path)!r} is not a metrics file written by animat imitate train ({exc})") from None


def learning_curve_plot(rows: list[dict], path: Path, title: str, evals: list[tuple[int, dict]] = ()) -> Path:
    """Mean episode return (Σ r_I) and mean episode length against timesteps (two panels), plus r_I per step.

    ``evals``: (timesteps, :func:`evaluate` result) pairs, drawn as black diamonds (deterministic policy)."""
    import matplotlib.pyplot as plt

    from animat.viz.plots import _col, save_figure

    t = _col(rows, "timesteps")
    fig, (a1, a2) = plt.subplots(2, 1, figsize=(7.0, 6.0), sharex=True)
    for ax, key, label, colour in ((a1, "ep_return_mean", "mean episode return (Σ r; Σ r_I without a goal)", "C0"),
                                   (a2, "ep_len_mean", "mean episode length (steps, 30 Hz)", "C1")):
        y = _col(rows, key)
        ok = np.isfinite(y) & np.isfinite(t)
        ax.plot(t[ok], y[ok], color=colour, lw=1.8, marker="o" if ok.sum() == 1 else None, label="training episodes (stochastic)")
        if evals:
            ek = "return_mean" if key == "ep_return_mean" else "len_mean"
            ax.plot([n for n, _ in evals], [e[ek] for _, e in evals], "kD", ms=6, label="evaluation (deterministic)")
            ax.legend(loc="upper left", frameon=False, fontsize=8)
        ax.set_ylabel(label, fontsize=9)
        ax.grid(alpha=0.3)
    per_step = _col(rows, "r_i_per_step_mean")
    ok = np.isfinite(per_step) & np.isfinite(t)
    if ok.any():
        ax3 = a1.twinx()
        ax3.plot(t[ok], per_step[ok], color="C2", lw=1.0, ls="--")
        ax3.set_ylabel("mean r_I per step (dashed)", color="C2", fontsize=9)
        ax3.set_ylim(0.0, 1.0)
    a2.set_xlabel("timesteps")
    a1.set_title(title)
    return save_figure(fig, path)


def train(cfg: TrainConfig, out: Path, *, resume: bool = False, state: tuple[dict, dict] | None = None,
          on_iteration: Callable[[dict], Any] | None = None) -> dict:
    """Train per ``cfg`` into run directory ``out`` (already created), or with ``resume`` continue the run
    there (see the module docstring) from ``state``, the run's training state as
    :func:`~animat.imitate.resume.resumable_state` returns it (loaded here if not given);
    returns ``summary.json``'s content."""
    import torch
    from stable_baselines3 import PPO
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.logger import configure
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv, VecMonitor, VecNormalize

    from animat.imitate.policy import load_policy, save_policy
    from animat.imitate.resume import restore_train_state, resumable_state, save_train_state

    out = Path(out)
    if resume and state is None:  # before anything in the run directory changes
        state = resumable_state(out, cfg.timesteps)
    done = int(state[1]["num_timesteps"]) if state else 0
    runs.atomic_write_json(out / "config.json", asdict(cfg))
    if cfg.torch_threads:
        torch.set_num_threads(cfg.torch_threads)
    clip = cfg.load_clip()
    fns = [partial(make_env, cfg, clip) for _ in range(cfg.envs)]
    venv = SubprocVecEnv(fns) if cfg.vec_env == "subproc" and cfg.envs > 1 else DummyVecEnv(fns)
    venv = VecMonitor(venv)
    venv = VecNormalize(venv, norm_obs=cfg.normalize_obs, norm_reward=False, gamma=cfg.gamma) if cfg.normalize_obs else venv
    vecnorm = venv if cfg.normalize_obs else None

    activation = torch.nn.ReLU if cfg.activation == "relu" else torch.nn.Tanh
    model = PPO(
        "MlpPolicy", venv, learning_rate=cfg.learning_rate, n_steps=cfg.n_steps, batch_size=cfg.batch_size,
        n_epochs=cfg.n_epochs, gamma=cfg.gamma, gae_lambda=cfg.gae_lambda, clip_range=cfg.clip_range,
        ent_coef=cfg.ent_coef, vf_coef=cfg.vf_coef, max_grad_norm=cfg.max_grad_norm, target_kl=cfg.target_kl,
        policy_kwargs=dict(net_arch=dict(pi=list(cfg.net_arch), vf=list(cfg.net_arch)), activation_fn=activation,
                           log_std_init=cfg.log_std_init),
        seed=cfg.seed + done, device="cpu", verbose=0,
    )
    if state:
        restore_train_state(model, vecnorm, *state)
    formats = ["csv"] + (["tensorboard"] if tensorboard_available() else [])
    model.set_logger(configure(str(out / "logs" / (f"resume_{done}" if done else "")), formats))
    extra = {"vf_arch": list(cfg.net_arch), "clip": cfg.clip or "demo", "reward": cfg.reward,
             "max_seconds": cfg.max_seconds, "early_termination": cfg.early_termination, "residual": cfg.residual,
             "goal": cfg.goal, "joint_limits": cfg.joint_limits}

    def save(stem: Path) -> Path:
        return save_policy(stem, model, vecnorm, net_arch=cfg.net_arch, activation=cfg.activation, extra=extra)

    start = out / "checkpoints" / f"policy_{done}"
    if not start.with_name(start.name + ".json").exists():  # the policy this session starts from; on --resume a
        save(start)  # checkpoint of that step may exist already: it holds the policy before that iteration's update
    if state:
        initial, eval_seconds, seconds_before = state[1]["initial_eval"], state[1]["eval_seconds"], state[1]["train_seconds"]
        history = [row for row in read_metrics(out / "metrics.csv") if row["timesteps"] <= done]
    else:  # the untrained policy, deterministic, with the (fresh) normaliser
        t_eval = time.perf_counter()
        initial = evaluate(load_policy(out / "checkpoints" / "policy_0").act, cfg, cfg.eval_episodes, cfg.seed + 10_000, clip)
        eval_seconds, seconds_before, history = time.perf_counter() - t_eval, 0.0, []
    t0 = time.perf_counter()
    last_ckpt = [int(state[1]["last_checkpoint"]) if state else 0]

    def save_state() -> None:  # after an update whose losses no metrics row holds yet (see Recorder)
        logged = model.logger.name_to_value
        pending = {k: float(logged[f"train/{k}"]) for k in LOSS_FIELDS if f"train/{k}" in logged}
        if not pending and state:  # no update in this session yet: the resumed state's are still pending
            pending = dict(state[1].get("pending_losses", {}))
        save_train_state(out, model, vecnorm, initial_eval=initial, eval_seconds=eval_seconds, last_checkpoint=last_ckpt[0],
                         train_seconds=seconds_before + time.perf_counter() - t0, pending_losses=pending)

    class Recorder(BaseCallback):
        """One metrics.csv row per iteration, from the episodes that ended during its rollout."""

        def __init__(self):
            super().__init__()
            self.returns, self.lengths, self.t_last, self.n_last, self.state_due = [], [], time.perf_counter(), done, False
            self.nonfinite = 0
            self.pending = dict(state[1].get("pending_losses", {})) if state else {}  # the losses of the update before a resume

        def _on_rollout_start(self) -> None:
            if self.state_due:  # after the update that followed a checkpoint: a state to resume from
                save_state()
                self.state_due = False

        def _on_step(self) -> bool:
            for info in self.locals["infos"]:
                self.nonfinite += bool(info.get("nonfinite"))
                ep = info.get("episode")
                if ep is not None:
                    self.returns.append(float(ep["r"]))
                    self.lengths.append(int(ep["l"]))
            return not (cfg.max_minutes and time.perf_counter() - t0 > 60.0 * cfg.max_minutes)

        def _on_rollout_end(self) -> None:
            now, n = time.perf_counter(), self.model.num_timesteps
            logged = self.model.logger.name_to_value  # the previous update's losses (dumped after this)
            losses = {k: logged[f"train/{k}"] if f"train/{k}" in logged else self.pending.get(k, "") for k in LOSS_FIELDS}
            self.pending = {}
            ret, ln = np.array(self.returns), np.array(self.lengths)
            row = {
                "iteration": len(history), "timesteps": n, "episodes": len(ret), "nonfinite": self.nonfinite,
                "ep_return_mean": float(ret.mean()) if len(ret) else math.nan,
                "ep_len_mean": float(ln.mean()) if len(ln) else math.nan,
                "r_i_per_step_mean": float(ret.sum() / ln.sum()) if len(ln) else math.nan,
                "ep_seconds_mean": float(ln.mean() / 30.0) if len(ln) else math.nan,
                "fps": round((n - self.n_last) / max(now - self.t_last, 1e-9), 1), "seconds": round(seconds_before + now - t0, 2),
                "std": float(torch.exp(self.model.policy.log_std.detach()).mean()),
                **losses,
            }
            self.returns, self.lengths, self.t_last, self.n_last, self.nonfinite = [], [], now, n, 0
            history.append(row)
            runs.atomic_write_csv(out / "metrics.csv", history, METRIC_FIELDS)
            if cfg.checkpoint_every and n - last_ckpt[0] >= cfg.checkpoint_every:
                save(out / "checkpoints" / f"policy_{n}")
                last_ckpt[0] = n
                self.state_due = True
            if on_iteration is not None:
                on_iteration(row)

    def finite() -> bool:
        return all(bool(torch.isfinite(p).all()) for p in model.policy.parameters())

    try:
        if done < cfg.timesteps:  # else: a finished run whose outputs are written below
            model.learn(total_timesteps=cfg.timesteps - done, callback=Recorder(), progress_bar=cfg.progress_bar, reset_num_timesteps=not state)
    finally:
        train_seconds = seconds_before + time.perf_counter() - t0
        if finite():  # never a broken policy as the point to resume from
            save(out / "policy")
            save_state()
        venv.close()
    if not finite():
        raise FloatingPointError(f"the policy's weights became non-finite after {model.num_timesteps} steps; "
                                 f"the last good state in {str(out)!r} is kept for --resume")
    final = evaluate(load_policy(out / "policy").act, cfg, cfg.eval_episodes, cfg.seed + 10_000, clip)

    title = f"PPO on {Path(cfg.clip).name if cfg.clip else 'the demo clip'}, {cfg.envs} envs, net {cfg.net_arch}"
    learning_curve_plot(history, out / "plots" / "learning_curve.png", title, [(0, initial), (int(model.num_timesteps), final)])
    finite = [r for r in history if np.isfinite(r["ep_return_mean"])]
    first, last = (finite[0], finite[-1]) if finite else ({}, {})

    def gain(a, b):
        return float(b / a - 1.0) if a and np.isfinite(a) and np.isfinite(b) else math.nan

    summary = {
        "timesteps": int(model.num_timesteps), "iterations": len(history), "envs": cfg.envs, "vec_env": cfg.vec_env,
        "train_seconds": round(train_seconds, 2), "steps_per_second": round(model.num_timesteps / max(train_seconds, 1e-9), 1),
        "clip": cfg.clip or "demo", "net_arch": list(cfg.net_arch),
        "first_iteration_ep_return_mean": first.get("ep_return_mean", math.nan),
        "first_iteration_ep_len_mean": first.get("ep_len_mean", math.nan),
        "last_iteration_ep_return_mean": last.get("ep_return_mean", math.nan),
        "last_iteration_ep_len_mean": last.get("ep_len_mean", math.nan),
        "last_iteration_r_i_per_step_mean": last.get("r_i_per_step_mean", math.nan),
        **{f"initial_eval_{k}": v for k, v in initial.items()},
        **{f"final_eval_{k}": v for k, v in final.items()},
        "eval_return_gain": gain(initial["return_mean"], final["return_mean"]),
        "eval_len_gain": gain(initial["len_mean"], final["len_mean"]),
        "curve_return_gain": gain(first.get("ep_return_mean"), last.get("ep_return_mean", math.nan)),
        "curve_len_gain": gain(first.get("ep_len_mean"), last.get("ep_len_mean", math.nan)),
        "nonfinite_episodes": int(sum(int(r.get("nonfinite") or 0) for r in history)),
        "eval_seconds_each": round(eval_seconds, 2),
        "logs": "logs/progress.csv" + (" + TensorBoard events" if "tensorboard" in formats else " (tensorboard not installed: CSV only)"),
    }
    runs.atomic_write_json(out / "summary.json", summary)
    return summary
