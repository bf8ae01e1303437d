"""Distilling a steering set's switch networks into one goal network (``animat fly distill``).

The goal network (one network that reads the command, :mod:`animat.fly.steer.tracking`) trained by evolution alone
from its own random commands tracks far worse than the switch set (one network per command): it must
learn seven behaviours and their hand-overs at once from one scalar fitness. Here it learns them from the
switch networks instead, by dataset aggregation (DAgger; Ross, Gordon & Bagnell 2011, "A reduction of
imitation learning and structured prediction to no-regret online learning", AISTATS; as policy
distillation: Rusu et al. 2016, "Policy distillation", ICLR):

- round ``r`` flies ``episodes`` episodes of ``seconds`` s whose commands change at random times (as the
  goal task's, :func:`animat.fly.steer.tracking.command_schedule`), half from rest and half from the states of a
  start pool (the hand-overs flight meets, :func:`animat.fly.steer.pilot.handover_states`) where one is given;
- each episode is flown by the switch networks (the teacher) with probability β_r = 0.5^r, else by the
  goal network being trained; at every control tick the goal network's input and the output of the
  active command's switch network for that state are recorded (ticks after a crash are dropped);
- the goal network is fitted to every round's records so far (mean squared error of the outputs, Adam
  at ``learning_rate · decay^r``, ``epochs`` passes), so it learns what the teacher does in the states
  its own flying reaches, not only in the teacher's.

The result is an ordinary goal-network run directory (``config.json`` a :class:`TrainConfig` of task
``goal``, ``best_genome.npz``): ``animat fly steer`` flies it, and ``animat fly train --from`` it goes on
with evolution (the same engine) on the goal task's own fitness. Resumable: the checkpoint after each
round holds the network and each round's flying network, from which the earlier rounds' records are
flown again (the same flights: same inputs, same compiled code).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from animat import runs
from animat.checkpoint import read_checkpoint, save_checkpoint
from animat.errors import CheckpointError, ConfigError
from animat.fly.options import DistillConfig, TrainConfig
from animat.fly.steer.commands import COMMANDS

METRICS = [
    "round",
    "beta",
    "goal_episodes",
    "goal_crashes",
    "teacher_crashes",
    "samples",
    "on_policy_loss",
    "loss",
    "seconds",
]


def check_teacher(steering) -> None:
    """ConfigError (one line) unless ``steering`` has a switch network for every command."""
    missing = [c for c in COMMANDS if c not in steering.switch]
    if missing:
        raise ConfigError(
            f"steering directory {str(steering.folder)!r} has no switch network for {', '.join(missing)}: distilling "
            "needs one per command"
        )


def teacher_digest(steering) -> str:
    """sha256 of the switch networks' layers and genes in :data:`COMMANDS` order (a resumed run refuses another
    teacher)."""
    parts = [
        np.asarray(steering.switch[c].genome.layers, np.int64).tobytes() + steering.switch[c].genome.genes.tobytes()
        for c in COMMANDS
    ]
    return runs.sha256_hex(b"".join(parts))


@functools.lru_cache(maxsize=8)
def dagger_rollouts(params, teacher_activations: tuple[tuple[str, ...], ...], activations: tuple[str, ...]) -> Callable:
    """Jitted ``(teachers, net, goal_flies (S,) bool, starts (S, ...), switch (S, T), cmd_vel (S, T, 3), cmd_idx (S, T))
    -> (inputs (S, T, n_in + 3), targets (S, T, n_out), alive (S, T) bool)``: each episode flown by the
    goal network ``net`` where ``goal_flies``, else by ``teachers`` (one parameter dict per command, in
    :data:`COMMANDS` order); recorded per tick: the goal network's input, the active command's teacher output
    for that state, and whether the fly had not crashed before the tick."""
    import jax
    import jax.numpy as jnp

    from animat.evolve.network import activate
    from animat.fly.steer.tracking import command_input, command_observation, new_frame, steering_tick, switch_frame

    def episode(teachers, net, goal_flies, state0, switch, cmd_vel, cmd_idx):
        def tick(carry, inputs):
            state, frame = carry
            starts, vel, idx = inputs
            frame = switch_frame(starts, state, frame)
            obs = command_observation(params, state, frame, vel, False)
            x = jnp.concatenate([obs, command_input(vel)])
            taught = jnp.stack([activate(t, obs[:, None], a)[:, 0] for t, a in zip(teachers, teacher_activations)])[idx]
            action = jnp.where(goal_flies, activate(net, x[:, None], activations)[:, 0], taught)
            alive = ~state.crashed
            return steering_tick(params, state, frame, action), (x, taught, alive)

        switch = switch.at[0].set(True)
        return jax.lax.scan(tick, (state0, new_frame(state0)), (switch, cmd_vel, cmd_idx))[1]

    return jax.jit(jax.vmap(episode, in_axes=(None, None, 0, 0, 0, 0, 0)))


def round_flights(steering, cfg: DistillConfig, r: int, params, pool: dict | None):
    """Round ``r``'s episodes: ``(starts, switch (S, T), cmd_vel (S, T, 3), cmd_idx (S, T), goal_flies (S,), beta)``,
    all drawn from ``cfg.seed`` and ``r`` (the goal network flies an episode with probability 1 - beta, beta =
    0.5^r)."""
    from animat.fly.steer.tracking import command_schedule, pool_starts, varied_starts

    S, T = cfg.episodes, max(1, int(round(cfg.seconds / params.control_dt)))
    seed = int(cfg.seed) * 10_000 + r
    switch, cmd_vel, names = command_schedule("goal", S, T, params.control_dt, steering.speed, seed, tuple(cfg.segment))
    cmd_idx = np.vectorize(COMMANDS.index, otypes=[np.int32])(names)
    n_rest = S if pool is None else S // 2
    rest = varied_starts(params, 1, seed, 0.0, 0.0, 0.0)
    parts = [[np.repeat(np.asarray(x), n_rest, axis=0)] for x in rest]
    if pool is not None:
        pooled = pool_starts(params, S - n_rest + 1, seed, pool)
        parts = [p + [np.asarray(x)[1:]] for p, x in zip(parts, pooled)]
    starts = type(rest)(*(np.concatenate(p) for p in parts))
    beta = 1.0 if r == 0 else 0.5**r
    goal_flies = np.random.default_rng([int(cfg.seed), r, 1]).random(S) >= beta
    return starts, switch, cmd_vel, cmd_idx, goal_flies, beta


def goal_config(steering, cfg: DistillConfig) -> TrainConfig:
    """The distilled network's run config: a goal network of ``cfg.hidden`` layers for the teacher's fly, at its
    speed."""
    teacher = TrainConfig.build(None, **runs.read_run_config(steering.folder / steering.switch["hover"].name))
    params = steering.params
    return TrainConfig.build(
        None,
        task="goal",
        asymmetric=teacher.asymmetric,
        fly=teacher.fly,
        control_ms=teacher.control_ms,
        layers=[params.n_inputs + 3, *cfg.hidden, params.n_outputs],
        activations="tanh",
        speed=steering.speed,
        seconds=cfg.seconds,
        segment=list(cfg.segment),
        seed=cfg.seed,
        start_pool=cfg.start_pool,
        replay_seconds=cfg.replay_seconds,
        anim_seconds=cfg.anim_seconds,
    )


def initial_genes(layers, seed: int) -> np.ndarray:
    """LeCun-scaled normal weights (std 1/sqrt(fan-in), suited to tanh), zero biases: ``(G,)`` float32."""
    from animat.evolve.network import flatten, param_shapes

    rng = np.random.default_rng([int(seed), 7])
    params = {
        name: (rng.standard_normal(shape) / np.sqrt(shape[1]) if name.startswith("W") else np.zeros(shape)).astype(
            np.float32
        )
        for name, shape in param_shapes(layers)
    }
    return np.asarray(flatten(params, layers), np.float32)


def fit(
    genes: np.ndarray, layers, activations, X: np.ndarray, Y: np.ndarray, cfg: DistillConfig, r: int
) -> tuple[np.ndarray, float]:
    """``genes`` fitted to ``X (N, n_in) -> Y (N, n_out)`` (Adam, a fresh optimiser each round at
    ``learning_rate · decay^r``, ``epochs`` passes in minibatches of ``batch`` drawn from ``cfg.seed`` and ``r``);
    returns ``(genes, mean loss of the last pass)``."""
    import jax
    import jax.numpy as jnp
    import optax

    from animat.evolve.network import activate, flatten, unflatten

    opt = optax.adam(cfg.learning_rate * cfg.decay**r)
    loss = lambda p, x, y: jnp.mean((activate(p, x.T, activations).T - y) ** 2)

    @jax.jit
    def step(p, state, x, y):
        value, grad = jax.value_and_grad(loss)(p, x, y)
        updates, state = opt.update(grad, state, p)
        return optax.apply_updates(p, updates), state, value

    p = {k: jnp.asarray(v) for k, v in unflatten(genes, layers).items()}
    state = opt.init(p)
    rng = np.random.default_rng([int(cfg.seed), r, 2])
    n, bs = len(X), min(cfg.batch, len(X))
    last = []
    for _ in range(cfg.epochs):
        order = rng.permutation(n)
        last = []
        for i in range(0, n - bs + 1, bs):
            p, state, value = step(p, state, X[order[i : i + bs]], Y[order[i : i + bs]])
            last.append(value)
    return np.asarray(flatten({k: np.asarray(v) for k, v in p.items()}, layers), np.float32), float(
        np.mean(jax.device_get(last))
    )


def mse(genes, layers, activations, X, Y) -> float:
    """Mean squared error of network ``genes`` on ``X (N, n_in) -> Y (N, n_out)``."""
    from animat.evolve.network import activate, unflatten

    return (
        float(np.mean((np.asarray(activate(unflatten(genes, layers), X.T, activations)).T - Y) ** 2))
        if len(X)
        else float("nan")
    )


def distill(
    steering,
    cfg: DistillConfig,
    out: Path,
    *,
    resume: bool = False,
    teacher: str | None = None,
    on_round: Callable[[dict], Any] | None = None,
) -> dict:
    """DAgger from ``steering``'s switch networks (a :class:`animat.fly.steer.pilot.Steering` with every command)
    into a goal network, written to run directory ``out``: ``config.json`` (the goal network's
    :class:`TrainConfig` + ``distilled``: the teacher, its digest and ``cfg``), ``metrics.csv`` (per round: β,
    episodes the goal network flew and crashed, samples so far, the goal network's loss on the round's
    new records before fitting them (on-policy) and after), ``checkpoints/``, ``best_genome.npz/.json``,
    ``plots/distill.png``, its flight of every command from rest (``steer/``, :func:`animat.fly.train.task_replay`)
    and ``summary.json`` (returned). ``teacher``: how config.json names the teacher (default: its folder;
    ``animat fly distill --resume`` loads it from there). ``on_round(row)`` after each round."""
    from animat.evolve.genome import Genome
    from animat.evolve.network import layer_activations

    check_teacher(steering)
    out = Path(out)
    train_cfg = goal_config(steering, cfg)
    layers, activations = tuple(train_cfg.layers), layer_activations(train_cfg.layers, train_cfg.activations)
    pool = _write_run_record(steering, cfg, train_cfg, out, resume, teacher)
    fly_round = _round_flyer(steering, cfg, pool, layers, activations)

    genes, flown, rows, data = initial_genes(layers, cfg.seed), [], [], ([], [])
    if resume and (out / "checkpoints").is_dir():
        genes, flown, rows, data = _resumed_rounds(out, cfg, fly_round)
    for r in range(len(flown), cfg.rounds):
        t0 = time.perf_counter()
        X, Y, row = fly_round(r, genes)
        flown.append(genes)
        data[0].append(X), data[1].append(Y)
        on_policy = mse(genes, layers, activations, X, Y) if row["goal_episodes"] else None
        genes, loss = fit(genes, layers, activations, np.concatenate(data[0]), np.concatenate(data[1]), cfg, r)
        if not np.isfinite(genes).all():
            raise ConfigError(
                f"distillation diverged in round {r} (non-finite weights); lower learning_rate (now "
                f"{cfg.learning_rate})"
            )
        rows.append(
            {
                "round": r,
                **row,
                "samples": int(sum(len(x) for x in data[0])),
                "on_policy_loss": on_policy,
                "loss": loss,
                "seconds": time.perf_counter() - t0,
            }
        )
        save_checkpoint(out, r, {"genes": genes, "flown": np.stack(flown)}, {"distill_rows": rows})
        runs.atomic_write_csv(out / "metrics.csv", rows, METRICS)
        if on_round is not None:
            on_round(rows[-1])
    return _finish(steering, train_cfg, out, Genome(layers, genes, activations), rows)


def _resumed_rounds(out: Path, cfg: DistillConfig, fly_round) -> tuple[np.ndarray, list, list[dict], tuple]:
    """``(genes, flown, rows, data)`` of a distillation resumed from its last checkpoint in ``out``: the goal
    network's genes, the genes that flew each round so far, the metrics rows, and the rounds' records ``(X list,
    Y list)`` flown again (``fly_round``) by the networks that flew them. Refuses a run already at ``cfg.rounds``."""

    arrays, meta = read_checkpoint(out / "checkpoints", "population")
    if "distill_rows" not in meta:
        raise CheckpointError(f"--resume {str(out)!r}: its checkpoints are not a distillation's")
    genes, flown, rows = arrays["genes"], list(arrays["flown"]), list(meta["distill_rows"])
    runs.refuse_finished(out, len(rows), cfg.rounds, "rounds", "--rounds")
    data = ([], [])
    for r, acting in enumerate(flown):
        X, Y, _ = fly_round(r, acting)
        data[0].append(X), data[1].append(Y)
    return genes, flown, rows, data


def _write_run_record(steering, cfg: DistillConfig, train_cfg, out: Path, resume: bool, teacher: str | None):
    """``config.json`` of a distillation (on resume: the same, but for a grown ``rounds``; a teacher that differs
    from the one distilled is refused); returns the start pool's states (None without ``cfg.start_pool``)."""
    from animat.fly.steer.tracking import read_start_pool

    digest = teacher_digest(steering)
    if resume:
        stored = runs.read_run_config(out, "a fly distill run directory").get("distilled", {})
        if stored.get("teacher_sha256") != digest:
            raise ConfigError(
                f"--resume {str(out)!r}: the switch networks differ from the ones this run distilled (teacher sha256)"
            )
    pool_record = {}
    pool = None
    if cfg.start_pool is not None:
        pool = read_start_pool(cfg.start_pool, runs.read_run_config(out).get("start_pool_sha256") if resume else None)
        pool_record = {"start_pool_sha256": runs.sha256_hex(Path(cfg.start_pool).read_bytes())}
    distilled = {"teacher": str(steering.folder) if teacher is None else teacher, "teacher_sha256": digest}
    record = {
        **runs.config_record("fly", "distill", train_cfg),
        **pool_record,
        "distilled": {**distilled, **cfg.__dict__},
    }
    runs.atomic_write_json(out / "config.json", record)
    return pool


def _round_flyer(steering, cfg: DistillConfig, pool, layers: tuple, activations):
    """``fly_round(r, genes) -> (X, Y, row)``: round ``r``'s DAgger flights (:func:`round_flights`) with the goal
    network ``genes`` acting in some of them; the surviving ticks' inputs ``X`` and teacher outputs ``Y``, and the
    round's β, goal episodes and crashes."""
    import jax
    import jax.numpy as jnp

    from animat.evolve.network import unflatten

    params = steering.params
    teachers = tuple({k: jnp.asarray(v) for k, v in steering.switch[c].genome.params.items()} for c in COMMANDS)
    flights = dagger_rollouts(
        params, tuple(tuple(steering.switch[c].genome.activations) for c in COMMANDS), activations
    )

    def fly_round(r: int, genes: np.ndarray):
        starts, switch, cmd_vel, cmd_idx, goal_flies, beta = round_flights(steering, cfg, r, params, pool)
        net = {k: jnp.asarray(v) for k, v in unflatten(genes, layers).items()}
        inputs = (jnp.asarray(goal_flies), jax.tree_util.tree_map(jnp.asarray, starts), jnp.asarray(switch))
        X, Y, alive = jax.device_get(flights(teachers, net, *inputs, jnp.asarray(cmd_vel), jnp.asarray(cmd_idx)))
        crashed = ~alive[:, -1]
        row = {
            "beta": beta,
            "goal_episodes": int(goal_flies.sum()),
            "goal_crashes": int((crashed & goal_flies).sum()),
            "teacher_crashes": int((crashed & ~goal_flies).sum()),
        }
        return X[alive], Y[alive], row

    return fly_round


def _finish(steering, train_cfg, out: Path, genome, rows: list[dict]) -> dict:
    """A finished distillation's files: ``best_genome.npz/.json``, ``plots/distill.png``, the replay of every command
    (``steer/``), ``summary.json`` (returned) and ``report.html``."""
    from animat.evolve.genome_file import save_genome
    from animat.fly.report import distill_plot, write_task_report
    from animat.fly.train import task_replay

    params = steering.params
    save_genome(
        out / "best_genome.npz", genome, float("nan"), {"fly": params.to_dict(), "task": "goal", "distilled": True}
    )
    distill_plot(rows, out / "plots" / "distill.png", title=f"goal network distilled from {steering.folder.name}")
    flight = task_replay(train_cfg, out)
    summary = {
        "task": "goal",
        "distilled": True,
        "rounds": len(rows),
        "samples": rows[-1]["samples"],
        "final_loss": rows[-1]["loss"],
        "final_on_policy_loss": rows[-1]["on_policy_loss"],
        "goal_crashes": sum(int(r["goal_crashes"]) for r in rows),
        "train_seconds": sum(float(r["seconds"]) for r in rows),
        "generations": 0,
        **{f"replay_{k}": v for k, v in flight.items()},
    }
    runs.atomic_write_json(out / "summary.json", summary)
    write_task_report(out, params)
    return summary
