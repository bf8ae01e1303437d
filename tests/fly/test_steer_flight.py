"""``animat fly steer`` flying real networks: the run directory, the command trace, the live loop, and
issue 21's acceptance on random command scripts against ``pretrained:paper``."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import sys
import termios
import threading
import time

import numpy as np
import pytest

from animat import pretrained, runs
from animat.fly.steer.commands import COMMANDS, direction, heading, parse_script, random_script
from animat.fly.steer.live import fly_live
from animat.fly.steer.score import steer_score

PAPER = "pretrained:paper"
HAS_PAPER = "paper" in pretrained.available()
needs_paper = pytest.mark.skipif(
    not HAS_PAPER, reason="pretrained:paper is not shipped on this branch yet (the steer branch trains it)"
)


def test_random_scripts_hold_every_command_for_2_to_4_s_and_20_s_in_all():
    for seed in range(20):
        script = parse_script(random_script(np.random.default_rng(seed)))
        assert sorted(n for n, _ in script) == sorted(COMMANDS)
        assert all(2.0 <= s <= 4.0 for _, s in script) and sum(s for _, s in script) == pytest.approx(20.0)


def synthetic_flight(script: str, speed: float = 2.0, dt: float = 0.01) -> dict[str, np.ndarray]:
    """A flight that does exactly what ``script`` commands at ``speed``, heading 0, wings still."""
    names = [n for n, s in parse_script(script) for _ in range(int(round(s / dt)))]
    d = np.array([direction(n, 0.0) for n in names])
    vel = speed * d
    T = len(names)
    return {
        "t": dt * np.arange(1, T + 1),
        "position": np.cumsum(vel * dt, axis=0),
        "velocity": vel,
        "quat": np.tile([1.0, 0, 0, 0], (T, 1)),
        "wing": np.zeros((T, 2, 3)),
        "command": np.array(names),
        "command_direction": d,
        "crashed": np.zeros(T, bool),
    }


def test_steer_run_directory_of_a_flight(tmp_path):
    from animat.fly.model import FlyParams
    from animat.fly.report import write_fly_report
    from animat.fly.steer.run import write_steer_run

    flight = synthetic_flight("up:1,left:1.5,hover:1")
    params = FlyParams()
    summary = write_steer_run(
        tmp_path,
        flight,
        params=params,
        speed=2.0,
        config={"controller": "switch", "commands": "up:1,left:1.5,hover:1"},
        anim_seconds=0.3,
    )
    write_fly_report(tmp_path, params=params)
    for name in (
        "config.json",
        "trajectory.npz",
        "summary.json",
        "plots/velocity.png",
        "plots/path.png",
        "media/flight.gif",
        "report.html",
    ):
        assert (tmp_path / name).is_file(), name
    traj = runs.read_npz(
        tmp_path / "trajectory.npz",
        keys=("t", "position", "velocity", "command_direction", "command", "quaternion", "wing_angles"),
    )
    assert traj["command"].dtype.kind == "U" and list(traj["command"][[0, 100, 250]]) == ["up", "left", "hover"]
    assert (
        traj["t"].shape == (350,)
        and traj["command_direction"].shape == (350, 3)
        and traj["wing_angles"].shape == (350, 6)
    )
    stored = json.loads((tmp_path / "summary.json").read_text())
    assert stored == json.loads(json.dumps(summary)) and stored["all_ok"] and stored["controller"] == "switch"
    assert [s["command"] for s in stored["segments"]] == ["up", "left", "hover"]
    up, left, hover = stored["segments"]
    assert up["direction_ok_fraction"] == 1.0 and left["mean_speed_along"] == pytest.approx(2.0, rel=1e-5)
    assert hover["max_hover_distance_body_lengths"] == pytest.approx(0.0, abs=1e-6)
    assert "command: left" in (tmp_path / "report.html").read_text()  # the replay's captions


TINY_SET = """
preset = "paper"
speed = 2.0
[train]
asymmetric = true
population = 4
generations = 1
seconds = 0.2
replay_seconds = 0.2
anim_seconds = 0.1
[networks.hover]
task = "hover"
[networks.up]
task = "up"
[networks.upB]
task = "up"
seed = 1
[networks.forward]
task = "forward"
from = "hover"
[networks.goal]
task = "goal"
[alternates]
up = ["upB"]
"""


@pytest.fixture(scope="module")
def tiny_set(tmp_path_factory):
    """A steering set trained for one generation of 4 flies (hover, up and an alternate, forward and the goal network):
    it flies badly, but through every part of the real code (the lookahead among the up networks included)."""
    from animat.fly.steer.train import train_steering

    folder = tmp_path_factory.mktemp("steering")
    (folder / "tiny.toml").write_text(TINY_SET)
    train_steering(folder / "tiny.toml", folder / "set")
    return folder / "set"


def check_follows(traj: dict, script: str) -> None:
    """``command`` and ``command_direction`` of a flight follow ``script``: each command for its duration,
    its direction from the fly's heading at the sample before it began (the start: heading 0)."""
    names = [n for n, s in parse_script(script) for _ in range(int(round(s / 0.01)))]
    assert list(traj["command"]) == names
    first = 0
    for name, seconds in parse_script(script):
        yaw = heading(traj["quaternion"][first - 1]) if first else 0.0
        n = int(round(seconds / 0.01))
        np.testing.assert_allclose(
            traj["command_direction"][first : first + n], np.tile(direction(name, float(yaw)), (n, 1)), atol=1e-5
        )
        first += n


@pytest.mark.parametrize("controller", ["switch", "goal"])
def test_steer_flies_the_script_and_writes_the_run_directory(controller, tiny_set, tmp_path, animat_cli):
    script, out = "up:0.6,forward:0.7,hover:0.5", tmp_path / "steer"
    code, stdout, err = animat_cli(
        "fly",
        "steer",
        str(tiny_set),
        "--commands",
        script,
        "--controller",
        controller,
        "--anim-seconds",
        "0.2",
        "--out",
        str(out),
    )
    assert code == 0, err
    for name in (
        "config.json",
        "trajectory.npz",
        "summary.json",
        "plots/velocity.png",
        "plots/path.png",
        "media/flight.gif",
        "report.html",
    ):
        assert (out / name).is_file(), name
    traj = runs.read_npz(
        out / "trajectory.npz",
        keys=("t", "position", "velocity", "command_direction", "command", "quaternion", "wing_angles"),
    )
    np.testing.assert_allclose(traj["t"], 0.01 * np.arange(1, 181), rtol=1e-6)
    check_follows(traj, script)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["controller"] == controller and summary["speed"] == 2.0 and summary["commands"] == script
    assert json.loads((tiny_set / "steering.json").read_text())["alternates"] == {"up": ["upB"]}
    assert json.loads((out / "config.json").read_text())["lookahead"] == 1.0
    flown = runs.read_npz(out / "trajectory.npz", keys=("network",))["network"]
    assert (
        set(flown) <= ({"hover", "up", "upB", "forward"} if controller == "switch" else {"goal"}) and len(flown) == 180
    )
    assert sum(summary["network_seconds"].values()) == pytest.approx(1.8) and summary["network_seconds"] == {
        n: pytest.approx(0.01 * int((flown == n).sum())) for n in set(flown)
    }
    assert [s["command"] for s in summary["segments"]] == ["up", "forward", "hover"]
    # the scores are those of the trajectory written
    again = steer_score(
        traj["t"],
        traj["position"],
        traj["velocity"],
        traj["command"],
        traj["command_direction"],
        speed=2.0,
        body_length=4.0,
        start=np.zeros(3),
    )
    assert [s["direction_ok_fraction"] for s in summary["segments"]] == [
        s["direction_ok_fraction"] for s in again["segments"]
    ]
    assert summary["segments"][2]["max_hover_distance_body_lengths"] == pytest.approx(
        again["segments"][2]["max_hover_distance_body_lengths"]
    )
    assert "all_ok" in stdout


def gif_frames(path) -> int:
    from PIL import Image

    with Image.open(path) as gif:
        return gif.n_frames


def test_steer_options_in_a_config_file_take_effect_and_the_command_line_overrides_them(tiny_set, tmp_path, animat_cli):
    """``animat fly steer --config FILE``: every option set only in the file (script, controller, target speed, seed,
    lookahead, animation length) reaches config.json, the flight, its score and its animation; each one also given on
    the command line (``--speed`` among them) wins. The flight is compared bit for bit with :func:`fly_script` at the
    values meant, and shown to differ from the flight at the value used if the option were dropped (the set's 2 u/s,
    seed 0, the 1 s lookahead), so an option recorded but not flown fails; the score is the one at the target speed."""
    from animat.fly.replay import ANIMATION_FPS
    from animat.fly.steer.commands import parse_script
    from animat.fly.steer.pilot import Pilot, fly_script, load_steering
    from animat.viz.animate import frame_stride

    steering = load_steering(tiny_set)
    dt = steering.params.control_dt
    file = tmp_path / "steer.toml"
    file.write_text(
        'commands = "up:0.7,forward:0.6"\ncontroller = "switch"\nspeed = 1.5\nseed = 2\nlookahead = 0.0\n'
        "anim_seconds = 0.2\n"
    )
    override = [
        "--commands",
        "up:1.1,hover:0.3",
        "--controller",
        "goal",
        "--speed",
        "2.5",
        "--seed",
        "1",
        "--lookahead",
        "0.5",
        "--anim-seconds",
        "0.4",
    ]
    cases = {
        "file": ([], "up:0.7,forward:0.6", "switch", 1.5, 2, 0.0, 0.2),
        "override": (override, "up:1.1,hover:0.3", "goal", 2.5, 1, 0.5, 0.4),
    }
    for name, (args, commands, controller, speed, seed, lookahead, anim) in cases.items():
        out = tmp_path / name
        code, _, err = animat_cli("fly", "steer", str(tiny_set), "--config", str(file), *args, "--out", str(out))
        assert code == 0, err
        options = {"speed": speed, "seed": seed, "lookahead": lookahead}
        recorded = {"steering": str(tiny_set), "commands": commands, "controller": controller, **options}
        assert json.loads((out / "config.json").read_text()) == recorded
        traj = runs.read_npz(out / "trajectory.npz")
        script = parse_script(commands)
        fly = lambda **kw: fly_script(steering, script, controller, **{**options, **kw})
        want = fly()
        np.testing.assert_array_equal(traj["position"], want["position"])
        np.testing.assert_array_equal(traj["network"], want["network"])
        assert not np.array_equal(fly(speed=None)["position"], want["position"])  # the target speed steers the flight
        assert not np.array_equal(fly(seed=0)["position"], want["position"])
        if controller == "switch":  # the tiny set's up alternate: with the lookahead the pilot picks it at times
            assert set(want["network"]) == {"up", "forward"} and "upB" in set(fly(lookahead=None)["network"])
        summary = json.loads((out / "summary.json").read_text())
        start = np.asarray(Pilot(steering, controller, speed, seed).state.pos, float).reshape(3)
        score = steer_score(
            traj["t"],
            traj["position"],
            traj["velocity"],
            traj["command"],
            traj["command_direction"],
            traj["crashed"],
            speed=speed,
            body_length=steering.params.body_length,
            start=start,
        )
        assert summary["speed"] == summary["target_speed"] == speed
        assert summary["segments"] == json.loads(json.dumps(score["segments"]))
        stride = frame_stride(dt, ANIMATION_FPS)[0]
        assert gif_frames(out / "media" / "flight.gif") == len(range(0, int(round(anim / dt)), stride))


def test_an_interrupted_train_steering_resumes_to_the_set_of_an_uninterrupted_run(
    tiny_set, tmp_path, animat_cli, monkeypatch
):
    """``animat fly train-steering`` stopped twice, then run again with the same command: first a run limited to two
    networks (``--networks hover,up``), then one interrupted (Ctrl-C, exit 130) inside ``upB`` after its generation
    was checkpointed and before its replay and summary. The run that follows keeps the finished networks, resumes
    ``upB`` from its checkpoint and trains the rest, and the set equals the ``tiny_set`` fixture trained in one go:
    steering.json, and every network's best genome bit for bit (its arrays) and best fitness."""
    import importlib

    fly_train = importlib.import_module("animat.fly.train")  # the module (animat.fly's `train` is its function)
    (tmp_path / "tiny.toml").write_text(TINY_SET)
    out = tmp_path / "set"
    command = ["fly", "train-steering", "--config", str(tmp_path / "tiny.toml"), "--out", str(out)]
    code, _, err = animat_cli(*command, "--networks", "hover,up")
    assert code == 0, err
    assert sorted(p.name for p in out.iterdir() if p.is_dir()) == ["hover", "up"]
    replay = fly_train.task_replay

    def interrupted_in_upb(cfg, where):
        if where.name == "upB":
            raise KeyboardInterrupt
        return replay(cfg, where)

    monkeypatch.setattr(fly_train, "task_replay", interrupted_in_upb)
    code, stdout, err = animat_cli(*command)
    assert code == 130 and err.strip().splitlines()[-1] == "interrupted", stdout + err
    assert (out / "upB" / "checkpoints").is_dir() and not (out / "upB" / "summary.json").exists()
    assert not (out / "forward").exists()
    monkeypatch.setattr(fly_train, "task_replay", replay)
    code, stdout, err = animat_cli(*command)
    assert code == 0, err
    told = [line.split("train-steering: ")[1] for line in stdout.splitlines() if line.startswith("train-steering: ")]
    assert told[:3] == ["upB resumed", "upB finished", "forward started"]
    assert not any(t.startswith(("hover ", "up ")) for t in told)  # the finished networks are kept
    assert (out / "steering.json").read_text() == (tiny_set / "steering.json").read_text()
    for name in ("hover", "up", "upB", "forward", "goal"):
        got, want = (runs.read_npz(d / name / "best_genome.npz") for d in (out, tiny_set))
        assert got.keys() == want.keys()
        for key in want:
            np.testing.assert_array_equal(got[key], want[key], err_msg=f"{name}: {key}")
        fitness = [json.loads((d / name / "summary.json").read_text())["best_fitness"] for d in (out, tiny_set)]
        assert fitness[0] == fitness[1], name


def test_a_script_command_the_switch_set_has_no_network_for_is_a_one_line_error(tiny_set, tmp_path, animat_cli):
    code, _, err = animat_cli(
        "fly", "steer", str(tiny_set), "--commands", "up:1,left:1", "--out", str(tmp_path / "out")
    )
    assert code == 2 and "'left'" in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "out").exists()


class ScriptedKeys:
    """Keys typed at given reads: ``{read index: bytes, or an exception to raise}``."""

    def __init__(self, at: dict):
        self.at, self.reads = at, 0

    def read(self, timeout: float) -> bytes:
        typed = self.at.get(self.reads, b"")
        self.reads += 1
        if isinstance(typed, BaseException):
            raise typed
        return typed


def test_live_loop_switches_commands_at_the_keys(tiny_set):
    from animat.fly.steer.pilot import Pilot

    keys = ScriptedKeys(
        {0: b"\x1b[5~", 30: b"\x1b[A", 45: b"\x1b", 46: b"[A", 60: b" \x1b[", 61: b"6~", 62: b"\x1b[5~", 80: b"q"}
    )
    shown = []
    records = fly_live(Pilot(tiny_set), keys, realtime=False, status=lambda record, note: shown.append((record, note)))
    assert len(records) == 80 and keys.reads == 81
    # a cut sequence completes at the next read; "down" (page down) has no network in this set: skipped, noted
    assert [r["command"] for r in records] == ["up"] * 30 + ["forward"] * 30 + ["hover"] * 2 + ["up"] * 18
    assert [s[0]["t"] for s in shown] == pytest.approx(
        [0.01, 0.11, 0.21, 0.31, 0.41, 0.51, 0.61, 0.71, 0.80]
    )  # every 0.1 s, and the end
    assert [note for _, note in shown] == [""] * 9  # refused at read 61, taken over at 62
    shown.clear()
    fly_live(
        Pilot(tiny_set),
        ScriptedKeys({0: b"\x1b[6~", 5: b"q"}),
        realtime=False,
        status=lambda record, note: shown.append(note),
    )
    assert shown == ["no network for down"] * 2


def test_live_loop_ends_on_ctrl_c(tiny_set):
    from animat.fly.steer.pilot import Pilot

    records = fly_live(Pilot(tiny_set), ScriptedKeys({0: b"\x1b[5~", 12: KeyboardInterrupt()}), realtime=False)
    assert len(records) == 12 and {r["command"] for r in records} == {"up"}


def test_interactive_steer_in_a_terminal(tiny_set, tmp_path, monkeypatch):
    """``animat fly steer --interactive`` with stdin and stdout on a pseudo-terminal, typed at in real time: page up
    once the terminal is in cbreak mode, q once the status line shows the fly going up."""
    from animat import cli
    from animat.console import console

    master, slave = pty.openpty()
    before = termios.tcgetattr(slave)
    screen = bytearray()
    done = threading.Event()

    def typist():
        deadline = time.monotonic() + 120
        while termios.tcgetattr(slave)[3] & termios.ICANON and time.monotonic() < deadline:
            time.sleep(0.01)
        os.write(master, b"\x1b[5~")
        quit_sent = False
        while not done.is_set():
            if select.select([master], [], [], 0.05)[0]:
                screen.extend(os.read(master, 4096))
            going_up = re.search(rb"t +(?!0\.0[01] )\d+\.\d\d s[^\r\n\x1b]*u/s   up", bytes(screen))
            if not quit_sent and (going_up or time.monotonic() > deadline):  # up, after its first tick
                os.write(master, b"q")
                quit_sent = True

    stdin = open(slave, "rb", buffering=0, closefd=False)
    stdout = open(slave, "w", closefd=False)
    monkeypatch.setattr(sys, "stdin", stdin)
    monkeypatch.setattr(sys, "stdout", stdout)
    monkeypatch.setattr(console, "file", stdout)
    monkeypatch.setattr(
        sys,
        "argv",
        [
            "animat",
            "fly",
            "steer",
            str(tiny_set),
            "--interactive",
            "--anim-seconds",
            "0.2",
            "--out",
            str(tmp_path / "live"),
        ],
    )
    thread = threading.Thread(target=typist, daemon=True)
    thread.start()
    code = 0
    try:
        cli.main()
    except SystemExit as exc:
        code = exc.code
    finally:
        stdout.flush()
        time.sleep(0.2)
        done.set()
        thread.join(5)
        monkeypatch.undo()
        restored = termios.tcgetattr(slave)
        os.close(master)
        os.close(slave)
    assert code in (0, None), screen.decode(errors="replace")
    assert b"u/s   up" in screen and b"page up/down" in screen
    assert restored == before  # the terminal is as it was
    traj = runs.read_npz(tmp_path / "live" / "trajectory.npz")
    commands = list(traj["command"])
    assert commands[-1] == "up" and set(commands) <= {"hover", "up"}
    assert commands == sorted(commands)  # hover (the first command) until the key, then up
    summary = json.loads((tmp_path / "live" / "summary.json").read_text())
    assert summary["commands"] == "interactive" and summary["segments"][-1]["command"] == "up"


SCRIPTS = (  # three scripts of our choice for issue 21's acceptance 1, then three the tests draw at random
    "up:1,forward:2,left:2,hover:2",
    "forward:3,right:3,back:3,hover:3",
    "up:2,left:2,down:2,right:2,hover:3",
    *(random_script(np.random.default_rng(seed)) for seed in (0, 1, 2)),
)


@needs_paper
@pytest.mark.slow
@pytest.mark.parametrize("controller", ["switch", "goal"])
@pytest.mark.parametrize("script", SCRIPTS)
def test_pretrained_paper_steers_by_every_command(controller, script):
    """Issue 21, acceptance 1: per command, after a 0.5 s hand-over, ≥ 80 % of the 0.5 s windows within 30° of the
    commanded direction at ≥ half the target speed, hovers within 2 body lengths, no crash."""
    from animat.fly.steer.pilot import Pilot, fly_script, load_steering

    steering = load_steering(PAPER)
    flight = fly_script(steering, parse_script(script), controller=controller)
    pilot = Pilot(steering, controller=controller)
    score = steer_score(
        flight["t"],
        flight["position"],
        flight["velocity"],
        flight["command"],
        flight["command_direction"],
        flight["crashed"],
        speed=pilot.speed,
        body_length=pilot.body_length,
        start=np.asarray(pilot.state.pos, float).reshape(3),
    )
    failed = [
        {
            k: s[k]
            for k in (
                "command",
                "start_s",
                "direction_ok_fraction",
                "mean_speed_along",
                "max_hover_distance_body_lengths",
                "crashed",
            )
        }
        for s in score["segments"]
        if s["ok"] is False
    ]
    assert score["all_ok"] and not failed, f"{controller} on {script!r}: {failed}"
