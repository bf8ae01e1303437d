"""Start pools (issue 21): the fly's states at the hand-overs of random scripts, recorded from a steering set,
and steering networks trained from them (``start_pool``), alone and inside ``train-steering``."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from animat import pretrained, runs
from animat.errors import ConfigError
from animat.fly.model import FlyParams
from animat.fly.steer.commands import COMMANDS, parse_script, random_script
from animat.fly.steer.tracking import POOL_SHAPES, pool_starts, read_start_pool

PAPER = "pretrained:paper"
needs_paper = pytest.mark.skipif("paper" not in pretrained.available(), reason="pretrained:paper is not shipped")


def _pool(n=5, seed=0):
    rng = np.random.default_rng(seed)
    q = rng.normal(size=(n, 4))
    return {
        "vel": rng.normal(size=(n, 3)),
        "quat": q / np.linalg.norm(q, axis=1, keepdims=True),
        "omega": rng.normal(size=(n, 3)),
        "wing": rng.normal(size=(n, 2, 3)) * 0.3,
    }


def test_pool_starts_begin_at_rest_and_draw_the_rest_from_the_pool_by_seed():
    params = FlyParams().with_(asymmetric=True)
    pool = {k: v.astype(np.float32) for k, v in _pool(5).items()}
    s = pool_starts(params, 4, 7, pool)
    assert np.all(s.pos == 0) and np.all(s.vel[0] == 0) and np.all(s.omega[0] == 0) and np.all(s.wing[0] == 0)
    assert np.allclose(s.quat[0], [1, 0, 0, 0]) and not s.crashed.any()
    rows = [int(np.flatnonzero((pool["vel"] == v).all(axis=1))[0]) for v in s.vel[1:]]
    assert len(set(rows)) == 3  # without repeats while the pool has enough
    for key in POOL_SHAPES:
        assert np.array_equal(getattr(s, key)[1:], pool[key][rows])
    again, other = pool_starts(params, 4, 7, pool), pool_starts(params, 4, 8, pool)
    assert all(np.array_equal(a, b) for a, b in zip(s, again))
    big = pool_starts(params, 12, 7, pool)  # more starts than states: drawn with repeats
    assert big.vel.shape == (12, 3) and not np.array_equal(other.vel, s.vel)


def test_a_bad_or_changed_start_pool_is_a_one_line_error(tmp_path):
    good = tmp_path / "good.npz"
    runs.atomic_save_npz(good, **_pool())
    arrays = read_start_pool(good, runs.sha256_hex(good.read_bytes()))
    assert {k: v.shape for k, v in arrays.items()} == {k: (5, *s) for k, s in POOL_SHAPES.items()}
    assert all(v.dtype == np.float32 for v in arrays.values())
    cases = {
        "missing": None,
        "no_wing": {k: v for k, v in _pool().items() if k != "wing"},
        "shape": {**_pool(), "quat": np.zeros((5, 3))},
        "nan": {**_pool(), "vel": np.full((5, 3), np.nan)},
    }
    for name, content in cases.items():
        path = tmp_path / f"{name}.npz"
        if content is not None:
            runs.atomic_save_npz(path, **content)
        with pytest.raises(ConfigError) as err:
            read_start_pool(path)
        assert len(str(err.value).splitlines()) == 1 and name in str(err.value)
    with pytest.raises(ConfigError, match="changed since this run began"):
        read_start_pool(good, "0" * 64)


@needs_paper
def test_handover_states_are_the_states_at_each_switch_of_the_script(tmp_path, animat_cli):
    from animat.fly.steer.pilot import fly_script, handover_states, load_steering

    steering = load_steering(PAPER)
    states = handover_states(steering, 1, seed=11)
    script = parse_script(random_script(np.random.default_rng(11)))
    flight = fly_script(steering, script, lookahead=0)  # the plain switcher: the pools train its networks
    ends = np.cumsum([int(round(s / 0.01)) for _, s in script])[:-1] - 1  # the tick before each new command
    assert states["vel"].shape == (len(COMMANDS) - 1, 3)
    assert np.allclose(states["vel"], flight["velocity"][ends], atol=1e-5)
    assert np.allclose(states["quat"], flight["quat"][ends], atol=1e-5) and np.allclose(
        states["wing"], flight["wing"][ends], atol=1e-5
    )
    # the verb writes them as a pool a training run reads, and never overwrites one
    out = tmp_path / "pool.npz"
    code, _, err = animat_cli("fly", "handovers", PAPER, "--scripts", "1", "--seed", "11", "--out", str(out))
    assert code == 0, err
    assert np.allclose(read_start_pool(out)["vel"], states["vel"])
    before = out.read_bytes()
    code, _, err = animat_cli("fly", "handovers", PAPER, "--scripts", "1", "--out", str(out))
    assert code == 2 and "exists" in err and len(err.strip().splitlines()) == 1 and out.read_bytes() == before


POOL_SET = """
preset = "paper"
speed = 2.0
[train]
asymmetric = true
population = 4
starts = 3
seconds = 0.6
replay_seconds = 0.6
anim_seconds = 0.2
{networks}
[networks.left2]
task = "left"
from = "left"
strategy = "open_es"
init_std = 0.02
generations = 1
start_pool = "handover"
[pools.handover]
scripts = 1
seed = 3
networks = {names}
"""


@needs_paper
def test_train_steering_records_a_pool_and_trains_a_network_from_it(tmp_path):
    from animat.fly.options import TrainConfig
    from animat.fly.steer.steering_set import read_steering_config
    from animat.fly.steer.train import train_steering
    from animat.fly.train import fitness_of

    out = tmp_path / "set"
    out.mkdir()
    for name in COMMANDS:  # the shipped networks, as finished runs of this set
        shutil.copytree(pretrained.resolve(PAPER) / name, out / name)
        (out / name / "summary.json").write_text("{}")
    listed = "\n".join(f'[networks.{n}]\ntask = "{n}"\ngenerations = 1' for n in COMMANDS)
    toml = tmp_path / "set.toml"
    toml.write_text(POOL_SET.format(networks=listed, names=json.dumps(list(COMMANDS))))
    done = train_steering(toml, out)
    assert done["left2"]["state"] == "trained" and all(done[n]["state"] == "kept" for n in COMMANDS)
    pool = out / "handover.npz"
    states = read_start_pool(pool)
    assert states["vel"].shape == (len(COMMANDS) - 1, 3)
    stored = runs.read_run_config(out / "left2")
    assert stored["start_pool"] == str(pool) and stored["start_pool_sha256"] == runs.sha256_hex(pool.read_bytes())
    cfg = TrainConfig.build(None, **stored)
    s0 = fitness_of(cfg, cfg.fly_params(), ["tanh"] * 3, stored["start_pool_sha256"]).schedule()[0]
    assert all(any(np.array_equal(v, p) for p in states["vel"]) for v in s0.vel[1:])  # its starts are the pool's
    # a pool that names a network listed after it, or not one per command, is refused in one line
    bad = tmp_path / "bad.toml"
    bad.write_text(POOL_SET.format(networks=listed, names=json.dumps(list(COMMANDS[:-1]))))
    with pytest.raises(ConfigError) as err:
        read_steering_config(bad)
    assert "one network per command" in str(err.value) and len(str(err.value).splitlines()) == 1
    # a changed pool stops a resumed run before it trains
    pool.write_bytes(runs.npz_bytes({**states, "vel": states["vel"] + 1}))
    shutil.rmtree(out / "left2" / "plots")
    (out / "left2" / "summary.json").unlink()
    with pytest.raises(ConfigError, match="changed since this run began"):
        train_steering(toml, out)
