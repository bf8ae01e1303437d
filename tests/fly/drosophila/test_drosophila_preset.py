"""The drosophila preset's pieces around the physics: parameters to and from dicts, the stroke cap, the
inertial power against a numerical derivative, the power cost in the fitness, the FFT wingbeat, the
preset's selection on the command line, the shipped hover genome against its PROVENANCE.md and the slow
``--from`` and staged runs through the CLI (a tiny train / resume / replay / report run is
test_drosophila_cli.py, in the default suite)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import jax.numpy as jnp
import numpy as np
import pytest

import animat
from animat import runs
from animat.errors import ConfigError
from animat.fly.drosophila import pattern
from animat.fly.drosophila.model import N_PATTERN, DrosophilaParams
from animat.fly.drosophila.physics import pitch_quat
from animat.fly.drosophila.power import induced_power, inertial_power, mechanical_power_per_kg
from animat.fly.drosophila.replay import stroke_spectrum, wingbeat_hz
from animat.fly.drosophila.rollout import Trajectory
from animat.fly.drosophila.tasks import HoverFitness, hover, score
from animat.fly.presets import select

P = DrosophilaParams()


def test_params_round_trip_through_a_dict_and_refuse_unknown_or_mistyped_keys():
    changed = P.with_(mass=1.0e-6, n_stations=6, added_mass=False, hinge=(0.2e-3, -0.4e-3, 0.2e-3))
    back = DrosophilaParams.from_dict(json.loads(json.dumps(changed.to_dict())))
    assert back == changed and hash(back) == hash(changed)
    with pytest.raises(ConfigError, match="unknown drosophila parameter"):
        DrosophilaParams.from_dict({"wingspan": 1.0})
    with pytest.raises(ConfigError, match="n_stations"):
        DrosophilaParams.from_dict({"n_stations": 2.5})
    with pytest.raises(ConfigError, match="hinge"):
        DrosophilaParams.from_dict({"hinge": [0.0, 0.0]})


def test_outputs_set_the_wings_mean_and_a_bounded_difference_with_the_stroke_capped_at_176_degrees():
    out = np.random.default_rng(0).uniform(-3, 3, (500, N_PATTERN)).astype(np.float32)
    p = np.asarray(pattern.from_outputs(jnp.asarray(out)))
    amps = p[:, [1, 6]]
    assert amps.min() >= math.radians(88.0) - 1e-6 and amps.max() <= math.radians(176.0) + 1e-6
    assert np.all((p[:, 0] >= pattern.F_MIN) & (p[:, 0] <= pattern.F_MAX))
    half = np.asarray(pattern.WING_HALF, np.float32)
    assert np.all(np.abs(p[:, 1:6] - p[:, 6:11]) <= 2 * pattern.SIDE_FRACTION * half + 1e-6)
    symmetric = out.copy()
    symmetric[:, 6:] = 0.0
    q = np.asarray(pattern.from_outputs(jnp.asarray(symmetric)))
    np.testing.assert_array_equal(q[:, 1:6], q[:, 6:11])  # no difference: the wings beat alike
    full = np.zeros(N_PATTERN, np.float32)
    full[1] = 1.0
    np.testing.assert_allclose(
        np.asarray(pattern.from_outputs(jnp.asarray(full)))[[1, 6]], math.radians(176.0), rtol=1e-6
    )
    np.testing.assert_allclose(np.asarray(pattern.from_outputs(-jnp.ones(N_PATTERN)))[0], pattern.F_MIN, rtol=1e-6)


def test_inertial_power_is_the_positive_work_of_the_sinusoidal_stroke():
    """I π² f³ Φ² per wing against the mean positive rate of change of ½ I φ̇², φ̇ by finite differences."""
    f, amp_r, amp_l = 210.0, math.radians(160.0), math.radians(120.0)
    p = np.zeros(N_PATTERN)
    p[0], p[1], p[6] = f, amp_r, amp_l
    t = np.linspace(0.0, 10.0 / f, 200001)
    rate = lambda amp: 0.5 * amp * 2 * math.pi * f * np.sin(2 * math.pi * f * t)  # φ̇ of φ0 − (Φ/2) cos 2πft
    numeric = 0.0
    for amp in (amp_r, amp_l):
        energy = 0.5 * P.wing_inertia * rate(amp) ** 2
        numeric += np.clip(np.diff(energy), 0.0, None).sum() / (t[-1] - t[0])
    np.testing.assert_allclose(inertial_power(P, p), numeric, rtol=1e-4)
    np.testing.assert_allclose(mechanical_power_per_kg(P, 1e-6, p), (1e-6 + numeric) / P.mass, rtol=1e-4)
    # the same lift (f Φ fixed) at half the frequency costs half the inertial power
    slow = p.copy()
    slow[0], slow[[1, 6]] = f / 2, 2 * p[[1, 6]]
    np.testing.assert_allclose(inertial_power(P, slow), inertial_power(P, p) / 2, rtol=1e-12)


@pytest.mark.parametrize("f", [120.0, 218.0, 330.0])
def test_an_elastic_thorax_stores_the_stroke_energy_at_its_resonance(f):
    """Spring k = I (2π f_r)² about the stroke's middle, f_r = 218 Hz: the positive rate of change of
    ½ I φ̇² + ½ k (φ − φ0)² (finite differences) is I π² f Φ² |f² − f_r²| per wing,
    zero at resonance."""
    params = P.with_(thorax_resonance_hz=218.0)
    amp = math.radians(150.0)
    p = np.zeros(N_PATTERN)
    p[0], p[1], p[6] = f, amp, amp
    t = np.linspace(0.0, 10.0 / f, 200001)
    angle = -0.5 * amp * np.cos(2 * math.pi * f * t)
    rate = 0.5 * amp * 2 * math.pi * f * np.sin(2 * math.pi * f * t)
    k = params.wing_inertia * (2 * math.pi * 218.0) ** 2
    energy = 0.5 * params.wing_inertia * rate**2 + 0.5 * k * angle**2
    numeric = 2 * np.clip(np.diff(energy), 0.0, None).sum() / (t[-1] - t[0])
    np.testing.assert_allclose(inertial_power(params, p), numeric, rtol=1e-4, atol=1e-12)
    assert (inertial_power(params, p) < 1e-3 * inertial_power(P, p)) == (f == 218.0)


def test_induced_power_is_the_actuator_discs_wake_power():
    """Rankine–Froude momentum theory (k = 1): the disc A0 = Φ R² passes a mass flux ρ A0 w whose far wake
    moves at 2w; the momentum it gains per second carries the weight and its kinetic energy per second is
    the power, W w. k scales it; a disc four times as wide halves w and the power."""
    p = np.zeros(N_PATTERN)
    p[0], p[1], p[6] = 220.0, math.radians(170.0), math.radians(130.0)
    disc = math.radians(150.0) * P.wing_length**2
    power = induced_power(P.with_(induced_power_factor=1.0), p)
    w = power / P.weight
    flux = P.rho * disc * w
    np.testing.assert_allclose(flux * 2 * w, P.weight, rtol=1e-12)  # thrust
    np.testing.assert_allclose(0.5 * flux * (2 * w) ** 2, power, rtol=1e-12)  # wake energy per second
    # Ellington's k: ≈ 6.4 W/kg at 150°
    assert 5.0 < induced_power(P.with_(induced_power_factor=1.2), p) / P.mass < 8.0
    np.testing.assert_allclose(induced_power(P.with_(induced_power_factor=1.2), p), 1.2 * power, rtol=1e-12)
    wide = p.copy()
    wide[[1, 6]] *= 4
    np.testing.assert_allclose(induced_power(P.with_(induced_power_factor=1.0), wide), power / 2, rtol=1e-12)
    assert induced_power(P, p) == 0.0  # the default leaves it out
    on = P.with_(induced_power_factor=1.2)
    np.testing.assert_allclose(
        mechanical_power_per_kg(on, 1e-6, p) - mechanical_power_per_kg(P, 1e-6, p), 1.2 * power / P.mass, rtol=1e-9
    )


def test_power_cost_lowers_the_hover_fitness_by_weight_times_mean_power():
    T = 6
    quat = np.broadcast_to(pitch_quat(P.stroke_plane_angle), (2, T, 4)).astype(np.float64)
    pat = np.zeros((2, T, N_PATTERN))
    pat[..., 0], pat[..., 1], pat[..., 6] = 200.0, 2.5, 2.5
    power = np.array([np.full(T, 3e-5), np.linspace(0.0, 6e-5, T)])
    traj = Trajectory(
        np.zeros((2, T, 3)),
        quat,
        np.zeros((2, T), bool),
        power,
        pat,
        np.zeros((2, T), np.int32),
        np.zeros((2, T, 0, 2, 3)),
        np.zeros((2, T, 0, 3)),
        np.zeros((2, T, 0, 4)),
    )
    base = score(P, traj)
    expected = (power.mean(axis=1) + inertial_power(P, pat[:, 0])) / P.mass
    np.testing.assert_allclose(base - score(P, traj, 0.01), 0.01 * expected, rtol=1e-9)
    assert np.all(np.abs(base) < 1e-6)
    on = P.with_(induced_power_factor=1.2)
    np.testing.assert_allclose(
        score(on, traj) - score(on, traj, 0.01), 0.01 * (expected + induced_power(on, pat[:, 0]) / P.mass), rtol=1e-9
    )


def test_the_peak_term_weighs_a_brief_climb_by_its_height():
    """A level flight that climbs 2 body lengths for one sample of 100: the mean sees 0.02 BL, the peak
    term with weight 0.5 adds 0.5 × 2 BL; a dip counts the same as a climb."""
    T = 100
    quat = np.broadcast_to(pitch_quat(P.stroke_plane_angle), (2, T, 4)).astype(np.float64)
    pos = np.zeros((2, T, 3))
    pos[0, 10, 2], pos[1, 50, 2] = 2 * P.body_length, -2 * P.body_length
    np.testing.assert_allclose(hover(P, pos, quat), -0.02, atol=1e-6)
    np.testing.assert_allclose(hover(P, pos, quat) - hover(P, pos, quat, 0.5), 1.0, rtol=1e-9)
    with pytest.raises(ConfigError, match="peak_weight"):
        HoverFitness(P, 1.0, ("tanh",), peak_weight=-1.0)


def test_fft_wingbeat_of_a_sampled_sinusoid():
    dt = 2e-4
    t = np.arange(5000) * dt
    for f in (187.3, 221.0):
        stroke = 0.2 - 1.3 * np.cos(2 * math.pi * f * t) + 0.1 * np.sin(2 * math.pi * 2 * f * t)
        assert abs(wingbeat_hz(stroke, dt) - f) < 0.1


def test_the_stroke_spectrum_plotted_peaks_at_the_wingbeat_and_its_harmonic_in_proportion():
    """The spectrum of plots/wingbeat_spectrum.png: for 1.3 cos(2π f t) + 0.26 sin(2π 3f t) on whole periods its peak
    is at f, the bin at 3f holds a fifth of it (a Hann window scales every sinusoid alike, spreading each over its
    bin and the two beside it), the mean (0.4) is removed and nothing else is there."""
    dt, f = 2e-4, 200
    t = np.arange(5000) * dt  # 1 s: 200 whole periods, f and 3f fall on bins 200 and 600
    freq, amp = stroke_spectrum(0.4 + 1.3 * np.cos(2 * math.pi * f * t) + 0.26 * np.sin(2 * math.pi * 3 * f * t), dt)
    assert freq.shape == amp.shape == (2501,) and freq[1] == pytest.approx(1.0)
    assert int(np.argmax(amp)) == f and amp[3 * f] / amp[f] == pytest.approx(0.2, rel=1e-3)
    rest = np.delete(amp, [f - 1, f, f + 1, 3 * f - 1, 3 * f, 3 * f + 1])
    assert rest.max() < 1e-3 * amp[f]


def test_preset_is_chosen_by_flag_config_file_or_the_resumed_run(tmp_path):
    toml = tmp_path / "d.toml"
    toml.write_text('preset = "drosophila"\n')
    paper = tmp_path / "p.toml"
    paper.write_text("generations = 3\n")
    name = lambda *args: select(*args).name
    assert name("drosophila", None, None) == "drosophila" and name("paper", toml, None) == "paper"
    assert name(None, toml, None) == "drosophila" and name(None, paper, None) == name(None, None, None) == "paper"
    run = tmp_path / "run"
    run.mkdir()
    runs.atomic_write_json(run / "config.json", {"preset": "drosophila"})
    assert name(None, None, run) == "drosophila"
    with pytest.raises(ConfigError, match="--preset must be paper or drosophila"):
        select("bee", None, None)


@pytest.mark.parametrize("flag", [["--control-ms", "5"], ["--asymmetric"], ["--task", "up"]])
def test_the_paper_presets_own_flags_are_refused_in_one_line(tmp_path, animat_cli, flag):
    code, out, err = animat_cli("fly", "train", "--preset", "drosophila", *flag, "--out", str(tmp_path / "run"))
    assert code != 0 and flag[0] in err and "paper preset's options" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "run").exists()


def test_replay_reads_pretrained_names_and_refuses_an_unknown_one_in_one_line(tmp_path, animat_cli):
    code, _, err = animat_cli(
        "fly", "replay", "pretrained:no-such-genome", "--seconds", "1", "--out", str(tmp_path / "r")
    )
    assert (
        code == 2 and "no pretrained artefact 'pretrained:no-such-genome'" in err and len(err.strip().splitlines()) == 1
    )
    assert not (tmp_path / "r").exists()


@pytest.mark.slow  # two short trainings: minutes of compiling on a loaded 2-core machine
def test_from_starts_an_evolution_strategy_at_a_drosophila_runs_best_genome(tmp_path, animat_cli):
    """A curriculum stage: ``--strategy open_es --from RUN`` centres the first distribution on RUN's best
    genome and records ``from``; the paper preset refuses the drosophila run in one line, nothing written."""
    from animat.evolve import loop
    from animat.evolve.genome_file import load_genome
    from animat.fly.drosophila.options import DrosophilaTrainConfig
    from animat.fly.evolve import evolution_strategy

    common = [
        "--preset",
        "drosophila",
        "--population",
        "4",
        "--seconds",
        "0.01",
        "--replay-seconds",
        "0.01",
        "--generations",
        "1",
    ]
    old, new = tmp_path / "old", tmp_path / "new"
    assert animat_cli("fly", "train", *common, "--out", str(old))[0] == 0
    code, _, err = animat_cli("fly", "train", *common, "--strategy", "open_es", "--from", str(old), "--out", str(new))
    assert code == 0, err
    config = json.loads((new / "config.json").read_text())
    assert config["from"] == {"path": str(old), "generation": 1} and config["strategy"] == "open_es"
    best = load_genome(old / "best_genome.npz").genome.genes
    strategy = evolution_strategy(
        DrosophilaTrainConfig.build(None, **{k: v for k, v in config.items() if k != "from"}), best
    )
    first = np.asarray(loop.load(new / "checkpoints" / "gen-000001.json", strategy)[0].last_genes)
    np.testing.assert_allclose(first.mean(axis=0), best, atol=1e-5)  # antithetic pairs: their mean is the centre
    out = tmp_path / "refused"
    code, _, err = animat_cli(
        "fly", "train", "--population", "4", "--strategy", "open_es", "--from", str(old), "--out", str(out)
    )
    assert code == 2 and "drosophila preset" in err and len(err.strip().splitlines()) == 1 and not out.exists(), err
    # the stage resumes and replays like any run (its config.json's `from` is a record, not an option)
    (new / "summary.json").unlink()
    code, _, err = animat_cli("fly", "train", "--resume", str(new), "--generations", "2")
    assert code == 0, err
    assert json.loads((new / "config.json").read_text())["from"] == config["from"]
    code, _, err = animat_cli("fly", "replay", str(new), "--seconds", "0.01", "--out", str(tmp_path / "replay"))
    assert code == 0, err


def test_a_drosophila_run_started_from_another_resumes_with_its_from_record(tmp_path):
    """A --from run's config.json holds ``from`` beside its options: resuming and replaying read it."""
    from animat.fly.drosophila.options import DrosophilaTrainConfig

    cfg = DrosophilaTrainConfig.build(None, seconds=0.5)
    run = tmp_path / "stage"
    run.mkdir()
    runs.atomic_write_json(run / "config.json", {**vars(cfg), "from": {"path": "runs/dh", "generation": 400}})
    resumed, where = runs.start_or_resume(
        "fly",
        DrosophilaTrainConfig,
        resume=run,
        config=None,
        out=None,
        options={"generations": 7},
        may_change={"generations": "--generations"},
    )
    assert where == run and resumed.generations == 7 and resumed.seconds == 0.5


def test_from_refuses_a_run_of_the_other_preset(tmp_path):
    from animat.fly.drosophila.options import DrosophilaTrainConfig
    from animat.fly.evolve import check_source
    from animat.fly.options import TrainConfig

    paper_run = Path(animat.__file__).parent / "pretrained" / "paper" / "hover"
    for strategy in ("paper_ga", "open_es"):
        with pytest.raises(ConfigError, match="it is a run of the paper preset, this one is drosophila"):
            check_source(DrosophilaTrainConfig.build(None, strategy=strategy), paper_run)
    fly_run = tmp_path / "fly"
    fly_run.mkdir()
    runs.atomic_write_json(
        fly_run / "config.json", {**json.loads((paper_run / "config.json").read_text()), "preset": "drosophila"}
    )
    with pytest.raises(ConfigError, match="it is a run of the drosophila preset, this one is paper"):
        check_source(TrainConfig.build(None), fly_run)


HOVER_30S = {
    "wingbeat_hz": 220.3,
    "max_height_change_body_lengths": 0.69,
    "max_horizontal_drift_body_lengths": 3.56,
    "mechanical_power_w_per_kg": 24.2,
    "induced_power_w_per_kg": 6.6,
    "inertial_power_w_per_kg": 0.14,
}
"""pretrained/drosophila-hover/PROVENANCE.md's row for the shipped genome (30 s from rest in the hover posture), as
issue 50's second pass flies it (the height change was 0.61 BL with the step it was trained with, 0.56 with session
33's step, 0.49 with that step in the second pass's rollout; XLA's rounding moves a beat's end by a step)."""


def _shipped_hover():
    from animat import pretrained
    from animat.evolve.genome_file import load_genome
    from animat.fly.drosophila.options import DrosophilaTrainConfig

    folder = pretrained.resolve("pretrained:drosophila-hover")
    params = DrosophilaTrainConfig.build(None, **json.loads((folder / "config.json").read_text())).fly_params()
    return params, load_genome(folder / "best_genome.npz").genome


def test_the_shipped_hover_genome_flies_three_seconds_inside_its_thirty_second_envelope():
    """pretrained:drosophila-hover flies 3 s from rest without crashing inside the envelope its
    PROVENANCE.md states for 30 s (:data:`HOVER_30S`): the flight's largest height change (0.69 BL with today's
    step, 0.612 as trained; 3 s reach 0.65) and drift (3.56 BL, reached in the take-off's first half second) bound
    the first 3 s within those figures' rounding, 0.70 and 3.60 BL (issue 22 allows 1 and 5: a genome read wrong, a fly
    heavier by a few percent or a changed aerodynamic term leaves them); after the take-off the fly stays
    within 3.6 BL of the start and ends within 2.5 (measured 1.42). Its wingbeat (FFT, 0.33 Hz bins over
    3 s) is 220.3 Hz ± 1, the network's set frequency 215–230 Hz (measured 221.1), the aerodynamic power
    within 5 % of 24.2 W/kg (measured 24.7: the take-off costs more) and the induced part 6.6 ± 0.1 W/kg.
    About 15 s, nearly all of it compiling the 3 s rollout."""
    from animat.fly.drosophila.replay import acceptance, flight_summary, fly_genome

    params, genome = _shipped_hover()
    assert params.thorax_resonance_hz == 218.0 and params.induced_power_factor == 1.2
    flight = fly_genome(params, genome, 3.0)
    summary = flight_summary(params, flight)
    assert summary["seconds"] == pytest.approx(3.0) and not summary["crashed"], summary
    assert all(acceptance(summary).values()), summary
    assert summary["max_height_change_body_lengths"] <= 0.70, summary
    assert summary["max_horizontal_drift_body_lengths"] <= 3.60, summary
    late = flight.t >= 0.5
    horiz = np.hypot(*(flight.pos[late, :2] - flight.pos[0, :2]).T) / params.body_length
    assert horiz.max() <= 3.6 and horiz[-1] <= 2.5, (horiz.max(), horiz[-1])
    assert abs(summary["wingbeat_hz"] - HOVER_30S["wingbeat_hz"]) <= 1.0, summary
    assert 215.0 <= summary["mean_set_frequency_hz"] <= 230.0, summary
    assert abs(summary["mechanical_power_w_per_kg"] / HOVER_30S["mechanical_power_w_per_kg"] - 1) <= 0.05, summary
    assert abs(summary["induced_power_w_per_kg"] - HOVER_30S["induced_power_w_per_kg"]) <= 0.1, summary


@pytest.mark.slow  # a 30 s flight at 10 kHz physics, its plots and animation: about a minute on 2 cores
def test_the_shipped_hover_genome_reproduces_its_provenance_row(tmp_path, animat_cli):
    """``animat fly replay pretrained:drosophila-hover --seconds 30``, PROVENANCE.md's own command: the
    summary repeats :data:`HOVER_30S` to its printed digits (within one unit of the last digit, for CPUs
    that round XLA's float32 otherwise), no crash, and issue 22's four checks pass."""
    out = tmp_path / "r"
    code, _, err = animat_cli("fly", "replay", "pretrained:drosophila-hover", "--seconds", "30", "--out", str(out))
    assert code == 0, err
    summary = json.loads((out / "summary.json").read_text())
    assert summary["seconds"] == pytest.approx(30.0) and summary["crashed"] is False, summary
    for key, want in HOVER_30S.items():
        unit = 0.1 if key in ("wingbeat_hz", "mechanical_power_w_per_kg", "induced_power_w_per_kg") else 0.01
        assert abs(summary[key] - want) <= unit, (key, summary[key], want)
    checks = {k: v for k, v in summary.items() if k.startswith("check_")}
    assert len(checks) == 4 and all(checks.values()), checks


@pytest.mark.slow  # two short trainings and a replay: minutes of compiling on a loaded 2-core machine
def test_a_drosophila_run_in_stages_hands_its_centre_on_and_replays(tmp_path, animat_cli):
    """configs/fly_drosophila_hover.toml's shape, tiny: a GA stage, then an OpenAI-ES stage whose genome is
    its distribution's final centre; the run directory replays the last stage's genome."""
    from animat.evolve import loop
    from animat.fly.drosophila.options import DrosophilaTrainConfig
    from animat.fly.evolve import evolution_strategy

    config = tmp_path / "stages.toml"
    config.write_text(
        'preset = "drosophila"\npopulation = 4\nseconds = 0.01\nreplay_seconds = 0.01\ngenerations = 1\n'
        '[[stages]]\nstrategy = "open_es"\nes_result = "centre"\ninit_std = 0.01\n'
    )
    run = tmp_path / "run"
    code, _, err = animat_cli("fly", "train", "--config", str(config), "--out", str(run))
    assert code == 0, err
    last = run / "stages" / "2"
    cfg = DrosophilaTrainConfig.build(
        None, **{k: v for k, v in json.loads((last / "config.json").read_text()).items() if k != "from"}
    )
    strategy = evolution_strategy(cfg)
    centre = strategy.distribution_mean(loop.load(last, strategy)[0].strategy)
    np.testing.assert_array_equal(np.load(run / "best_genome.npz")["genes"], centre)
    code, _, err = animat_cli("fly", "replay", str(run), "--seconds", "0.01", "--out", str(tmp_path / "replay"))
    assert code == 0, err
