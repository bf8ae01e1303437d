"""PPO (Stable-Baselines3) on :class:`~animat.imitate.env.ImitateEnv`: configuration, the run, its run directory.

Read top to bottom: :class:`TrainConfig` (defaults < ``--config`` TOML < command line), the small
state of a run (:class:`TrainState`, :class:`RolloutEpisodes`, :class:`Session`), then
:func:`setup`: make K environments (``SubprocVecEnv`` across processes, or ``DummyVecEnv`` in
this one), wrap them in ``VecMonitor`` (episode returns and lengths) and ``VecNormalize``
(running observation normalisation; rewards are r_I ∈ [0, 1] and stay as they are unless ``normalize_reward``), build
PPO with a Gaussian MLP policy (``net_arch`` for both actor and critic, ReLU by default), evaluate the untrained policy;
:func:`train`: learn (one metrics row per iteration from the callback :class:`~animat.imitate.recorder.Recorder`);
:func:`finish`: evaluate again, and write the run directory:

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
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from animat import interrupt, runs
from animat.errors import CheckpointError
from animat.imitate.env import make_env
from animat.imitate.metrics import LOSS_FIELDS, RolloutEpisodes
from animat.imitate.options import TrainConfig
from animat.imitate.policy import load_policy, save_policy
from animat.imitate.resume import restore_train_state, resumable_state, save_train_state
from animat.imitate.warm_start import warm_start
from animat.parallel import RayPool

CHARACTER = "humanoid3d"  # what a policy saved here drives (policy.json's "character")
METRIC_FIELDS = [
    "iteration",
    "timesteps",
    "episodes",
    "ep_return_mean",
    "ep_len_mean",
    "r_i_per_step_mean",
    "ep_seconds_mean",
    "nonfinite",
    "fps",
    "seconds",
    *LOSS_FIELDS,
    "std",
]


def batch_options(cfg: TrainConfig) -> dict:
    """:class:`~animat.imitate.batch.ImitateBatch`'s keyword arguments for ``cfg``'s environments (all but clip, n,
    seed, threads)."""
    from animat.imitate.reward import preset

    return dict(
        reward=preset(cfg.reward),
        rsi=cfg.rsi,
        early_termination=cfg.early_termination,
        max_seconds=cfg.max_seconds,
        hold_seconds=cfg.hold_seconds,
        residual=cfg.residual,
        joint_limits=cfg.joint_limits,
        substeps=cfg.substeps,
        pose_termination=cfg.pose_termination,
        target_obs=cfg.target_obs,
        **({"clips": cfg.load_clips(), "multi_clip": cfg.multi_clip} if cfg.clips else {}),
    )


def make_vec_env(cfg: TrainConfig, clip):
    """The ``cfg.envs`` training environments as an SB3 VecEnv: processes (``subproc``), this process one by one
    (``dummy``), batched here on ``threads`` threads (``batched``) or batched pieces on Ray actors
    (``backend = "ray"``)."""
    if not cfg.batched:
        from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

        fns = [partial(make_env, cfg, clip) for _ in range(cfg.envs)]
        return SubprocVecEnv(fns) if cfg.vec_env == "subproc" and cfg.envs > 1 else DummyVecEnv(fns)
    from animat.imitate.batch import ImitateBatch
    from animat.imitate.vecenv import BatchVecEnv, RayBatch

    if cfg.backend == "ray":
        pool = RayPool(address=cfg.address)
        return BatchVecEnv(RayBatch(clip, cfg.envs, pool, actors=cfg.actors or pool.chunks, **batch_options(cfg)))
    return BatchVecEnv(ImitateBatch(clip, cfg.envs, threads=cfg.threads, **batch_options(cfg)))


def fix_action_std(policy, std: float) -> None:
    """Hold the Gaussian policy's σ at ``std`` rad on every action (MimicKit's fixed action noise): its log std
    is set and taken out of learning (no gradient, so Adam leaves it as it is)."""
    import torch

    with torch.no_grad():
        policy.log_std.fill_(math.log(std))
    policy.log_std.requires_grad_(False)


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
        return [
            {k: "" if v in ("", None) else int(v) if k in ints else float(v) for k, v in row.items()} for row in rows
        ]
    except (TypeError, ValueError) as exc:
        raise CheckpointError(f"{str(path)!r} is not a metrics file written by animat imitate train ({exc})") from None


@dataclass
class TrainState:
    """The counters a saved training state holds besides PPO's, Adam's and the normaliser's arrays (see
    :mod:`animat.imitate.resume`): the untrained policy's evaluation and the seconds it took, the step
    of the last policy checkpoint, the training seconds of all sessions so far, and the losses of the
    last update, which no metrics row holds yet (the next row gets them)."""

    initial_eval: dict
    eval_seconds: float
    last_checkpoint: int = 0
    train_seconds: float = 0.0
    pending_losses: dict = field(default_factory=dict)

    def save(self, run_dir: Path, model, vec_normalize) -> Path:
        """Save this state with ``model`` (PPO) and ``vec_normalize`` in ``run_dir``; returns the manifest's path."""

        return save_train_state(run_dir, model, vec_normalize, **asdict(self))

    @classmethod
    def restore(cls, model, vec_normalize, arrays: dict, meta: dict) -> TrainState:
        """Load a saved state (:func:`~animat.imitate.resume.resumable_state`'s ``arrays, meta``) into a freshly
        built ``model`` and ``vec_normalize``; returns its counters."""
        restore_train_state(model, vec_normalize, arrays, meta)
        return cls(
            initial_eval=meta["initial_eval"],
            eval_seconds=meta["eval_seconds"],
            last_checkpoint=int(meta["last_checkpoint"]),
            train_seconds=meta["train_seconds"],
            pending_losses=dict(meta.get("pending_losses", {})),
        )


@dataclass
class Session:
    """One training session in run directory ``out``: the PPO ``model`` over ``venv`` (``vecnorm``: its
    ``VecNormalize``, or None), the counters ``state``, the metrics rows ``history`` (earlier sessions'
    included), the step count ``start`` it began at and the wall clock ``t0`` (s) of its learning."""

    cfg: TrainConfig
    out: Path
    clip: Any
    model: Any
    venv: Any
    vecnorm: Any
    state: TrainState
    history: list[dict]
    start: int
    t0: float = 0.0
    seconds_before: float = 0.0  # training seconds of the earlier sessions

    def elapsed(self) -> float:
        """Training seconds of all sessions so far."""
        return self.seconds_before + time.perf_counter() - self.t0

    def out_of_time(self) -> bool:
        return bool(self.cfg.max_minutes) and time.perf_counter() - self.t0 > 60.0 * self.cfg.max_minutes

    def save_policy(self, stem: Path) -> Path:
        """The policy as safe files ``stem``.npz/.json (:func:`~animat.imitate.policy.save_policy`)."""

        cfg = self.cfg
        extra = {
            "character": CHARACTER,
            "vf_arch": list(cfg.net_arch),
            "clip": cfg.clip_label,
            "reward": cfg.reward,
            "max_seconds": cfg.max_seconds,
            "hold_seconds": cfg.hold_seconds,
            "early_termination": cfg.early_termination,
            "residual": cfg.residual,
            "goal": cfg.goal,
            "joint_limits": cfg.joint_limits,
            **({"skills": cfg.skills, "multi_clip": cfg.multi_clip} if cfg.clips else {}),
        }
        return save_policy(
            stem, self.model, self.vecnorm, net_arch=cfg.net_arch, activation=cfg.activation, extra=extra
        )

    def save_state(self) -> None:
        """The state to resume from, after an update whose losses no metrics row holds yet (they become
        pending; with no update in this session, the resumed state's stay pending)."""
        logged = self.model.logger.name_to_value
        pending = {k: float(logged[f"train/{k}"]) for k in LOSS_FIELDS if f"train/{k}" in logged}
        self.state.pending_losses = pending or self.state.pending_losses
        self.state.train_seconds = self.elapsed()
        self.state.save(self.out, self.model, self.vecnorm)

    def record(self, episodes: RolloutEpisodes, losses: dict, now: float) -> dict:
        """Append the metrics row of the iteration whose rollout ended at wall clock ``now`` (``losses``: of
        the update before it) and rewrite ``metrics.csv``; returns the row."""
        import torch

        n = self.model.num_timesteps
        row = {
            "iteration": len(self.history),
            "timesteps": n,
            **episodes.stats(n, now),
            "seconds": round(self.seconds_before + now - self.t0, 2),
            "std": float(torch.exp(self.model.policy.log_std.detach()).mean()),
            **losses,
        }
        self.history.append(row)
        runs.atomic_write_csv(self.out / "metrics.csv", self.history, METRIC_FIELDS)
        return row

    def checkpoint(self) -> bool:
        """A policy checkpoint ``checkpoints/policy_<timesteps>`` (and the imitation curve so far) when
        ``checkpoint_every`` steps have passed since the last one; True when one was written."""
        n = self.model.num_timesteps
        if not (self.cfg.checkpoint_every and n - self.state.last_checkpoint >= self.cfg.checkpoint_every):
            return False
        self.save_policy(self.out / "checkpoints" / f"policy_{n}")
        self.state.last_checkpoint = n
        self.plot_imitation()
        return True

    def title(self) -> str:
        cfg = self.cfg
        what = cfg.clip_label if cfg.clips else Path(cfg.clip).name if cfg.clip else "the demo clip"
        return f"PPO on {what}, {cfg.envs} envs, net {cfg.net_arch}"

    def plot_imitation(self) -> None:
        """``plots/imitation_curve.png``: r_I per step and episode length against samples and wall time, from the
        metrics rows."""
        from animat.imitate.report import imitation_curve_plot

        imitation_curve_plot(self.history, self.out / "plots" / "imitation_curve.png", self.title())

    def finite(self) -> bool:
        """Whether every weight of the policy is finite."""
        import torch

        return all(bool(torch.isfinite(p).all()) for p in self.model.policy.parameters())


def _vec_env(cfg: TrainConfig, clip):
    """``(venv, vecnorm)``: ``cfg.envs`` environments of ``clip`` under SB3's VecMonitor, then VecNormalize where
    observations or rewards are normalised (``vecnorm``: that wrapper, else None)."""
    from stable_baselines3.common.vec_env import VecMonitor, VecNormalize

    venv = VecMonitor(make_vec_env(cfg, clip))
    normalise = cfg.normalize_obs or cfg.normalize_reward
    venv = (
        VecNormalize(venv, norm_obs=cfg.normalize_obs, norm_reward=cfg.normalize_reward, gamma=cfg.gamma)
        if normalise
        else venv
    )
    return venv, venv if normalise else None


def _ppo(cfg: TrainConfig, venv, done: int):
    """SB3's PPO of ``cfg`` on ``venv`` (CPU, seed ``cfg.seed + done``: a resumed session draws anew)."""
    import torch
    from stable_baselines3 import PPO

    activation = torch.nn.ReLU if cfg.activation == "relu" else torch.nn.Tanh
    linear = (
        cfg.schedule == "linear"
    )  # SB3 calls a schedule with the progress remaining, 1 -> 0 over the run's timesteps
    return PPO(
        "MlpPolicy",
        venv,
        learning_rate=(lambda p: p * cfg.learning_rate) if linear else cfg.learning_rate,
        n_steps=cfg.n_steps,
        batch_size=cfg.batch_size,
        n_epochs=cfg.n_epochs,
        gamma=cfg.gamma,
        gae_lambda=cfg.gae_lambda,
        clip_range=(lambda p: p * cfg.clip_range) if linear else cfg.clip_range,
        ent_coef=cfg.ent_coef,
        vf_coef=cfg.vf_coef,
        max_grad_norm=cfg.max_grad_norm,
        target_kl=cfg.target_kl,
        policy_kwargs=dict(
            net_arch=dict(pi=list(cfg.net_arch), vf=list(cfg.net_arch)),
            activation_fn=activation,
            log_std_init=math.log(cfg.action_std) if cfg.action_std > 0 else cfg.log_std_init,
        ),
        seed=cfg.seed + done,
        device="cpu",
        verbose=0,
    )


def setup(cfg: TrainConfig, out: Path, state: tuple[dict, dict] | None = None) -> Session:
    """The environments, PPO and its logger for a session in ``out``; from the saved training ``state``
    (:func:`~animat.imitate.resume.resumable_state`) when given, else a new run, whose untrained policy
    is evaluated here. Writes ``config.json`` (first: a run stopped after it starts again from it) and the session's
    first policy checkpoint."""
    runs.atomic_write_json(out / "config.json", runs.config_record("imitate", "train", cfg))
    import torch
    from stable_baselines3.common.logger import configure

    done = int(state[1]["num_timesteps"]) if state else 0
    if cfg.torch_threads:
        torch.set_num_threads(cfg.torch_threads)
    clip = cfg.load_clip()
    venv, vecnorm = _vec_env(cfg, clip)
    model = _ppo(cfg, venv, done)
    if cfg.init_policy and not state:
        warm_start(model, vecnorm, cfg.init_policy, added_inputs=len(cfg.skills) if cfg.multi_clip == "selector" else 0)
    if cfg.action_std > 0:
        fix_action_std(model.policy, cfg.action_std)
    counters = TrainState.restore(model, vecnorm, *state) if state else None
    formats = ["csv"] + (["tensorboard"] if tensorboard_available() else [])
    model.set_logger(configure(str(out / "logs" / (f"resume_{done}" if done else "")), formats))
    session = Session(cfg, out, clip, model, venv, vecnorm, counters or TrainState({}, 0.0), [], done)
    _start(session, counters)
    return session


def _start(session: Session, counters: TrainState | None) -> None:
    """The session's first policy checkpoint (``checkpoints/policy_<done>``), then, resumed (``counters``), its
    time and metrics rows so far, else the untrained policy's evaluation (deterministic, the fresh normaliser)."""

    cfg, out, done = session.cfg, session.out, session.start
    first = out / "checkpoints" / f"policy_{done}"
    if not first.with_name(first.name + ".json").exists():  # the policy this session starts from; on --resume a
        session.save_policy(
            first
        )  # checkpoint of that step may exist already: it holds the policy before that iteration's update
    if counters is not None:
        session.seconds_before = counters.train_seconds
        session.history = [row for row in read_metrics(out / "metrics.csv") if row["timesteps"] <= done]
    else:  # the untrained policy, deterministic, with the (fresh) normaliser
        t_eval = time.perf_counter()
        session.state.initial_eval = evaluate(
            load_policy(first).act, cfg, cfg.eval_episodes, cfg.seed + 10_000, session.clip
        )
        session.state.eval_seconds = time.perf_counter() - t_eval


def finish(session: Session) -> dict:
    """Evaluate the final policy, draw the learning curve and write ``summary.json``; returns the summary."""
    from animat.viz.plots import learning_curve_plot

    cfg, out, model, history = session.cfg, session.out, session.model, session.history
    initial = session.state.initial_eval
    final = evaluate(load_policy(out / "policy").act, cfg, cfg.eval_episodes, cfg.seed + 10_000, session.clip)
    learning_curve_plot(
        history,
        out / "plots" / "learning_curve.png",
        session.title(),
        [(0, initial), (int(model.num_timesteps), final)],
    )
    session.plot_imitation()
    ended = [r for r in history if np.isfinite(r["ep_return_mean"])]  # iterations in which an episode ended
    first, last = (ended[0], ended[-1]) if ended else ({}, {})

    def gain(a, b):
        return float(b / a - 1.0) if a and np.isfinite(a) and np.isfinite(b) else math.nan

    train_seconds = session.state.train_seconds
    summary = {
        "timesteps": int(model.num_timesteps),
        "iterations": len(history),
        "envs": cfg.envs,
        "vec_env": cfg.vec_env,
        "train_seconds": round(train_seconds, 2),
        "steps_per_second": round(model.num_timesteps / max(train_seconds, 1e-9), 1),
        "clip": cfg.clip_label,
        "net_arch": list(cfg.net_arch),
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
        "eval_seconds_each": round(session.state.eval_seconds, 2),
        "logs": "logs/progress.csv"
        + (" + TensorBoard events" if tensorboard_available() else " (tensorboard not installed: CSV only)"),
    }
    interrupt.check()  # a signal whose KeyboardInterrupt was lost: no summary, so --resume writes the outputs again
    runs.atomic_write_json(out / "summary.json", summary)
    from animat.imitate.report import write_imitate_report

    write_imitate_report(out)
    return summary


def train(
    cfg: TrainConfig,
    out: Path,
    *,
    resume: bool = False,
    state: tuple[dict, dict] | None = None,
    on_iteration: Callable[[dict], Any] | None = None,
) -> dict:
    """Train per ``cfg`` into run directory ``out`` (already created), or with ``resume`` continue the run
    there (see the module docstring) from ``state``, the run's training state as
    :func:`~animat.imitate.resume.resumable_state` returns it (loaded here if not given);
    returns ``summary.json``'s content. ``on_iteration(row)`` after each metrics row."""
    from animat.imitate.recorder import Recorder

    out = Path(out)
    if resume and state is None:  # before anything in the run directory changes
        state = resumable_state(out, cfg.timesteps)
    session = setup(cfg, out, state)
    session.t0 = time.perf_counter()
    try:
        if session.start < cfg.timesteps:  # else: a finished run whose outputs are written below
            session.model.learn(
                total_timesteps=cfg.timesteps - session.start,
                callback=Recorder(session, on_iteration),
                progress_bar=cfg.progress_bar,
                reset_num_timesteps=not state,
            )
    finally:
        if session.finite():  # never a broken policy as the point to resume from
            session.save_policy(out / "policy")
            session.save_state()
        session.venv.close()
    if not session.finite():
        raise FloatingPointError(
            f"the policy's weights became non-finite after {session.model.num_timesteps} steps; "
            f"the last good state in {str(out)!r} is kept for --resume"
        )
    return finish(session)
