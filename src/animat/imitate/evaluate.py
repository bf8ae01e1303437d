"""``animat imitate evaluate``: how well a trained policy imitates, from reference-state starts.

``episodes`` episodes of the deterministic policy (the Gaussian's mean), each from the clip's state at
a random time (phase) of its cycle (episode i's start drawn with seed ``seed * episodes + i``: evaluations with
different seeds and the same number of episodes start from disjoint sets of seeds; ``seed + i`` made seeds 1
and 2 share 19 of 20 starts), for up to
``seconds`` s, on the physics and the episode ends the run trained with (falls, and its pose
termination if it had one; :mod:`animat.imitate.batch`, all episodes stepped together). Figures:

``mean_imitation_reward``  r_I per step over all steps of all episodes, the paper's weights
(:mod:`animat.imitate.reward`), 0 on a step that ends an episode early (as in training);
``full_episode_fraction``  episodes that reach ``seconds`` (a one-shot clip's: its end plus the hold, the run's
``hold_seconds`` or ``--hold-seconds``) without an early end;
``mean_episode_seconds``   mean episode length, s;  ``episodes``.

The run directory of the evaluation gets ``summary.json`` (those, the source, clip, seed),
``episodes.csv`` (one row per episode: start time in the clip, seconds, steps, r_I per step, how
it ended: ``time``, ``fall``, ``pose`` or ``nonfinite``), ``plots/episodes.png`` (each episode's length
and r_I per step) and ``report.html`` (those figures and the plot; no replay: ``animat imitate play`` draws one);
the command line adds ``config.json``.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from animat import pretrained, runs
from animat.character.model import CONTROL_HZ
from animat.errors import CheckpointError, ConfigError
from animat.imitate.policy import load_policy, training_config
from animat.imitate.report import write_imitate_report
from animat.viz import plots

EPISODE_FIELDS = ["episode", "start_seconds", "seconds", "steps", "r_i_per_step", "ended"]


def load_policy_run(source: str | Path, clip: str | None = None):
    """``(TrainConfig, SavedPolicy, run_dir)`` of a training run directory or ``pretrained:NAME``, the clip
    replaced by ``clip`` when given. One-line errors (CheckpointError / ConfigError) for a missing run,
    a missing clip and a policy made for another character or observation."""
    from animat.imitate.train import CHARACTER

    run_dir = pretrained.resolve(source)
    if not run_dir.is_dir():
        raise CheckpointError(
            f"no run directory {str(source)!r}; give one written by animat imitate train, or pretrained:NAME"
        )
    cfg = training_config(run_dir, clip)
    policy = load_policy(run_dir / "policy")
    character = policy.manifest.get("character", CHARACTER)  # policies from before the key drove this humanoid
    if character != CHARACTER:
        raise CheckpointError(
            f"{str(run_dir)!r}: the policy was trained on character {character!r}; animat imitate drives {CHARACTER!r}"
        )
    if cfg.goal:
        raise ConfigError(
            f"{str(run_dir)!r}: a policy with a task goal; evaluate measures pure imitation (goal = false)"
        )
    return cfg, policy, run_dir


def evaluate_policy(
    cfg, policy, clip, episodes: int, seconds: float, seed: int, threads: int = 2
) -> tuple[dict, list[dict]]:
    """Run the episodes (see the module docstring); returns ``(figures, per-episode rows)``."""
    from animat.imitate.batch import ImitateBatch
    from animat.imitate.train import batch_options

    options = {**batch_options(cfg), "max_seconds": float(seconds), "rsi": True}
    options.pop("reward")  # always the paper's r_I
    batch = ImitateBatch(clip, episodes, seed=seed * episodes, threads=threads, **options)
    try:
        if policy.obs_dim != batch.observation_size or policy.act_dim != batch.action_size:
            raise CheckpointError(
                f"the policy takes {policy.obs_dim} observations and gives {policy.act_dim} actions; this humanoid has "
                f"{batch.observation_size} and {batch.action_size}: it was trained on another character"
            )
        obs = batch.observations()
        start = batch.t0.copy()
        alive = np.ones(episodes, bool)
        total, steps, ended = np.zeros(episodes), np.zeros(episodes, int), np.array(["time"] * episodes, dtype=object)
        while alive.any():
            obs, reward, terminated, truncated, nonfinite, _ = batch.step(policy.act(obs))
            total += np.where(alive, reward, 0.0)
            steps += alive
            fall = terminated & ~nonfinite & batch.fallen & batch.early_termination
            for mask, why in ((nonfinite, "nonfinite"), (fall, "fall"), (terminated & ~nonfinite & ~fall, "pose")):
                ended[alive & mask] = why
            alive &= ~(terminated | truncated)
    finally:
        batch.close()
    rows = [
        {
            "episode": i,
            "start_seconds": round(float(start[i]), 6),
            "seconds": round(steps[i] / CONTROL_HZ, 4),
            "steps": int(steps[i]),
            "r_i_per_step": float(total[i] / max(steps[i], 1)),
            "ended": str(ended[i]),
        }
        for i in range(episodes)
    ]
    figures = {
        "mean_imitation_reward": float(total.sum() / max(steps.sum(), 1)),
        "full_episode_fraction": float(np.mean(ended == "time")),
        "mean_episode_seconds": float(steps.mean() / CONTROL_HZ),
        "episodes": int(episodes),
    }
    return figures, rows


def evaluate(
    source: str | Path,
    out: Path,
    *,
    episodes: int = 20,
    seconds: float = 10.0,
    seed: int = 0,
    clip: str | None = None,
    hold_seconds: float | None = None,
) -> dict:
    """Evaluate the policy of ``source`` (run directory or ``pretrained:NAME``) into run directory ``out``, a one-shot
    clip's last pose held ``hold_seconds`` past its end (None: as the run trained); returns the summary (the figures
    first)."""
    cfg, policy, run_dir = load_policy_run(source, clip)
    if hold_seconds is not None:
        cfg = dataclasses.replace(cfg, hold_seconds=float(hold_seconds))
    figures, rows = evaluate_policy(cfg, policy, cfg.load_clip(), episodes, seconds, seed)
    summary = {
        **figures,
        "seconds": float(seconds),
        "seed": int(seed),
        "source": str(source),
        "run_dir": str(run_dir),
        "clip": cfg.clip_label,
        "pose_termination_m": cfg.pose_termination,
        "hold_seconds": cfg.hold_seconds,
        "reward": "paper",
    }
    out = Path(out)
    runs.atomic_write_csv(out / "episodes.csv", rows, EPISODE_FIELDS)
    plots.metrics_panel(
        rows,
        out / "plots" / "episodes.png",
        title=f"{episodes} episodes of up to {seconds:g} s: length (s) and r_I per step",
        time_key="episode",
        skip=("start_seconds", "steps", "ended"),
    )
    runs.atomic_write_json(out / "summary.json", summary)
    write_imitate_report(out)
    return summary
