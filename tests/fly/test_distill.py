"""The goal network distilled from the switch networks (issue 21, ``animat fly distill``, DAgger): the rollouts
record the active command's teacher, a student equal to its teacher has nothing to learn, fitting lowers the
error, the run resumes exactly, and a steering set's ``[distill.NAME]`` stage trains inside ``train-steering``."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from animat import pretrained, runs
from animat.errors import ConfigError
from animat.fly.steer.commands import COMMANDS

PAPER = "pretrained:paper"
needs_paper = pytest.mark.skipif("paper" not in pretrained.available(), reason="pretrained:paper is not shipped")
TINY = ["--episodes", "4", "--seconds", "0.3", "--epochs", "1", "--hidden", "8"]


def _fly(steering, student_genes, student_layers, goal_flies, command: str, ticks: int = 40):
    """Two episodes from rest under one command: (inputs, targets, alive), flown by the student where ``goal_flies``."""
    import jax.numpy as jnp

    from animat.evolve.network import layer_activations, unflatten
    from animat.fly.steer.distill import dagger_rollouts
    from animat.fly.steer.tracking import command_velocity, varied_starts

    params = steering.params
    flights = dagger_rollouts(
        params,
        tuple(tuple(steering.switch[c].genome.activations) for c in COMMANDS),
        layer_activations(student_layers, "tanh"),
    )
    teachers = tuple({k: jnp.asarray(v) for k, v in steering.switch[c].genome.params.items()} for c in COMMANDS)
    rest = varied_starts(params, 1, 0, 0.0, 0.0, 0.0)
    starts = type(rest)(*(jnp.asarray(np.repeat(np.asarray(x), 2, axis=0)) for x in rest))
    switch = np.zeros((2, ticks), bool)
    cmd_vel = np.broadcast_to(command_velocity(command, steering.speed), (2, ticks, 3)).astype(np.float32)
    idx = np.full((2, ticks), COMMANDS.index(command), np.int32)
    net = {k: jnp.asarray(v) for k, v in unflatten(student_genes, student_layers).items()}
    return [
        np.asarray(a)
        for a in flights(
            teachers, net, jnp.asarray(goal_flies), starts, jnp.asarray(switch), jnp.asarray(cmd_vel), jnp.asarray(idx)
        )
    ]


@needs_paper
def test_a_student_equal_to_its_teacher_flies_its_flight_and_has_nothing_to_learn():
    """The hover network widened by three zero-weighted command inputs is the hover network: flown by the
    student or by the teacher the episode is the same, and its error on the records is zero; under another
    command the records hold that command's network, which the hover network is not."""
    from animat.evolve.network import layer_activations, widen_inputs
    from animat.fly.steer.distill import mse
    from animat.fly.steer.pilot import load_steering

    steering = load_steering(PAPER)
    hover = steering.switch["hover"].genome
    layers = [hover.layers[0] + 3, *hover.layers[1:]]
    genes = widen_inputs(hover.genes, hover.layers, 3)
    X, Y, alive = _fly(steering, genes, layers, np.array([True, False]), "hover")
    assert X.shape == (2, 40, layers[0]) and Y.shape == (2, 40, layers[-1]) and alive.all()
    np.testing.assert_allclose(
        X[0], X[1], atol=1e-2
    )  # the same flight, whoever flies it (to rounding: the wider sum rounds apart)
    acts = layer_activations(layers, "tanh")
    assert mse(genes, layers, acts, X.reshape(-1, layers[0]), Y.reshape(-1, layers[-1])) < 1e-10
    X, Y, _ = _fly(steering, genes, layers, np.array([False, False]), "left")
    assert mse(genes, layers, acts, X.reshape(-1, layers[0]), Y.reshape(-1, layers[-1])) > 1e-3
    from animat.fly.steer.tracking import command_input, command_velocity

    np.testing.assert_allclose(
        X[0, :, -3:], np.broadcast_to(command_input(command_velocity("left", steering.speed)), (40, 3))
    )  # the command inputs


def test_fitting_lowers_the_error_on_the_records():
    """Adam on a network the records could come from (a random tanh network): the error falls well below
    the first weights'."""
    from animat.evolve.network import activate, layer_activations, param_count
    from animat.fly.options import DistillConfig
    from animat.fly.steer.distill import fit, initial_genes, mse

    layers, rng = [5, 16, 16, 3], np.random.default_rng(0)
    acts = layer_activations(layers, "tanh")
    from animat.evolve.network import unflatten

    truth = unflatten(rng.normal(0, 0.6, param_count(layers)).astype(np.float32), layers)
    X = rng.normal(size=(4096, 5)).astype(np.float32)
    Y = np.asarray(activate(truth, X.T, acts)).T
    genes = initial_genes(layers, 0)
    before = mse(genes, layers, acts, X, Y)
    fitted, loss = fit(
        genes, layers, acts, X, Y, DistillConfig.build(None, epochs=40, batch=256, learning_rate=3e-3), 0
    )
    assert np.isfinite(fitted).all() and loss == pytest.approx(mse(fitted, layers, acts, X, Y), rel=0.5)
    assert mse(fitted, layers, acts, X, Y) < 0.1 * before


@needs_paper
def test_distill_writes_a_goal_network_and_resumes_exactly(tmp_path, animat_cli):
    from animat.fly.steer.pilot import load_network

    full, part = tmp_path / "full", tmp_path / "part"
    assert animat_cli("fly", "distill", PAPER, "--rounds", "2", *TINY, "--no-animation", "--out", str(full))[0] == 0
    assert animat_cli("fly", "distill", PAPER, "--rounds", "1", *TINY, "--no-animation", "--out", str(part))[0] == 0
    code, _, err = animat_cli("fly", "distill", "--resume", str(part), "--rounds", "2", "--seed", "3")
    assert code == 2 and "only --rounds may change" in err
    code, _, err = animat_cli("fly", "distill", "--resume", str(part), "--rounds", "2")
    assert code == 0, err
    rows = runs.read_csv(full / "metrics.csv")
    strip = lambda rs: [{k: v for k, v in r.items() if k != "seconds"} for r in rs]
    assert strip(runs.read_csv(part / "metrics.csv")) == strip(rows)
    np.testing.assert_array_equal(
        np.load(full / "best_genome.npz")["genes"], np.load(part / "best_genome.npz")["genes"]
    )
    # round 0 is the teacher's alone (beta 1); then the student flies about half the episodes
    assert rows[0]["beta"] == "1.0" and rows[0]["goal_episodes"] == "0" and rows[0]["on_policy_loss"] == ""
    assert float(rows[1]["beta"]) == 0.5 and int(rows[1]["samples"]) > int(rows[0]["samples"])
    cfg = json.loads((full / "config.json").read_text())
    assert cfg["task"] == "goal" and cfg["layers"] == [21, 8, 6] and cfg["distilled"]["teacher"] == PAPER
    assert (cfg["system"], cfg["verb"]) == ("fly", "distill")  # who wrote it (issue 46)
    code, out, err = animat_cli("--json", "info", str(full))
    assert code == 0 and (json.loads(out)["system"], json.loads(out)["verb"]) == ("fly", "distill"), err
    net = load_network(tmp_path, "full", goal=True)  # a goal network as any other: the steering set loads it
    assert net.goal and list(net.genome.layers) == [21, 8, 6]
    summary = json.loads((full / "summary.json").read_text())
    assert (
        summary["rounds"] == 2
        and summary["replay_commands"].startswith("hover:")
        and (full / "plots" / "distill.png").is_file()
    )
    page = (full / "report.html").read_text()  # its numbers and plot, its flight of every command as the replay
    assert "plots/distill.png" in page and "scene-json" in page and "command: " in page
    assert "scene-json" in (full / "steer" / "report.html").read_text()
    code, _, err = animat_cli("fly", "distill", "--resume", str(full))
    assert code == 2 and "already finished its 2 rounds" in err
    # animat fly steer flies the distilled network (the goal controller without being told), at the run's speed
    steer = tmp_path / "steer"
    code, _, err = animat_cli(
        "fly", "steer", str(full), "--commands", "up:0.3,left:0.3", "--no-animation", "-o", str(steer)
    )
    assert code == 0, err
    flown = json.loads((steer / "summary.json").read_text())
    assert flown["controller"] == "goal" and flown["speed"] == cfg["speed"] and flown["seconds"] == pytest.approx(0.6)
    assert flown["network_seconds"] == {"full": pytest.approx(0.6)} and not (steer / "media").exists()


@needs_paper
def test_distill_refuses_a_set_without_every_command(tmp_path, animat_cli):
    src = tmp_path / "set"
    shutil.copytree(pretrained.resolve(PAPER), src)
    spec = json.loads((src / "steering.json").read_text())
    del spec["switch"]["left"]
    spec.get("alternates", {}).pop("left", None)  # (alternates of a command the set lacks are refused when it loads)
    (src / "steering.json").write_text(json.dumps(spec))
    code, out, err = animat_cli("fly", "distill", str(src), *TINY, "--out", str(tmp_path / "d"))
    assert code == 2 and "no switch network for left" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "d").exists()
    code, _, err = animat_cli("fly", "distill", PAPER, "--hidden", "8,x", "--out", str(tmp_path / "d"))
    assert code == 2 and "--hidden" in err


SET = """
preset = "paper"
speed = 3.0
[train]
asymmetric = true
population = 8
starts = 2
seconds = 0.3
replay_seconds = 0.7
anim_seconds = 0.3
{switch}
[pools.hand]
scripts = 1
seed = 5
networks = [{nets}]
[distill.taught]
networks = [{nets}]
rounds = 1
episodes = 4
seconds = 0.3
epochs = 1
hidden = [8]
start_pool = "hand"
replay_seconds = 0.7
[networks.goal]
task = "goal"
from = "taught"
layers = [21, 8, 6]
strategy = "open_es"
generations = 1
"""


@needs_paper
def test_a_distill_stage_trains_inside_train_steering(tmp_path):
    """A set whose switch networks are trained (the shipped ones, finished): its ``[distill.NAME]`` is distilled
    from them when the goal network that starts from it needs it, its start pool recorded first; bad stages are one-line
    errors."""
    from animat.fly.steer.steering_set import read_steering_config
    from animat.fly.steer.train import train_steering

    nets = ", ".join(f'"{c}"' for c in COMMANDS)
    text = SET.format(nets=nets, switch="".join(f'[networks.{c}]\ntask = "{c}"\n' for c in COMMANDS))
    (tmp_path / "set.toml").write_text(text)
    out = tmp_path / "out"
    for c in COMMANDS:
        shutil.copytree(pretrained.resolve(PAPER) / c, out / c)
        runs.atomic_write_json(out / c / "summary.json", {"best_fitness": 0.0})
    done = train_steering(tmp_path / "set.toml", out)
    assert done["goal"]["state"] == "trained" and all(done[c]["state"] == "kept" for c in COMMANDS)
    taught = json.loads((out / "taught" / "config.json").read_text())
    assert taught["distilled"]["start_pool"] == str(out / "hand.npz") and (out / "hand.npz").is_file()
    assert json.loads((out / "goal" / "config.json").read_text())["from"]["path"] == str(out / "taught")
    assert json.loads((out / "steering.json").read_text())["goal"] == "goal"
    # goal = "NAME": the distilled network itself is the set's goal network (kept here: distilled above)
    alone = 'goal = "taught"\n' + text[: text.index("[networks.goal]")]
    (tmp_path / "alone.toml").write_text(alone)
    done = train_steering(tmp_path / "alone.toml", out)
    assert done["taught"]["state"] == "kept" and json.loads((out / "steering.json").read_text())["goal"] == "taught"
    (tmp_path / "bad.toml").write_text(alone.replace('goal = "taught"', 'goal = "nothing"'))
    with pytest.raises(ConfigError, match="names no goal network"):
        read_steering_config(tmp_path / "bad.toml")
    (tmp_path / "bad.toml").write_text(alone.replace('goal = "taught"\n', ""))
    with pytest.raises(ConfigError, match=r"\[distill.taught\] is neither"):
        read_steering_config(tmp_path / "bad.toml")
    (tmp_path / "bad.toml").write_text(
        text.replace(
            'task = "goal"\nfrom = "taught"\nlayers = [21, 8, 6]', 'task = "up"\nfrom = "taught"\nlayers = [18, 8, 6]'
        )
    )
    with pytest.raises(ConfigError, match="only a goal network can"):
        read_steering_config(tmp_path / "bad.toml")
    (tmp_path / "bad.toml").write_text(
        text.replace("[distill.taught]\nnetworks = [", '[distill.taught]\nnetworks = ["hover", ')
    )
    with pytest.raises(ConfigError, match="one switch network per command"):
        read_steering_config(tmp_path / "bad.toml")
