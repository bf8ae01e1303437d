"""The default of ``animat skier train`` is the V-skate (issue 49); configs/skier_symmetric.toml is the default
before it, value for value; runs that predate an option keep the value they ran with; the toed-out stance."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import numpy as np
import pytest

from animat.errors import ConfigError
from animat.skier.options import TrainConfig

CONFIGS = Path(__file__).parents[2] / "configs"
# TrainConfig's defaults before the V-skate became the default (those of the commit before issue 49's), with the
# [skier] table that configs/skier_symmetric.toml writes out
SYMMETRIC_DEFAULT = {
    "generations": 250,
    "population": 50,
    "seconds": 20.0,
    "seed": 0,
    "strategy": "keyframe_ga",
    "friction": "anisotropic",
    "hip": "one-axis",
    "backend": "local",
    "ray_address": None,
    "n_states": 10,
    "tau": 0.5,
    "elites": 5,
    "parent_probs": [0.4, 0.3, 0.15, 0.1, 0.05],
    "mutation_rate": 0.02,
    "creep_rate": 0.0,  # no creep steps, the slides' mutation (the option is new)
    "creep_deg": 3.0,
    "symmetric": True,
    "frame_dt": 0.02,
    "fall_deg": 80.0,
    "bonus": 5.0,
    "skate_weight": 0.0,
    "skate_min_yaw_deg": 10.0,
    "skate_max_yaw_deg": 180.0,  # no upper bound (a push-off's yaw is at most 180 degrees)
    "nthread": 0,
    "chunk_seconds": 2.0,
    "init_standing": 0.5,
    "init_sigma_deg": 20.0,
    "init_noise": "symmetric",
    "init_spread_deg": 0.0,
    "init_toe_deg": 0.0,  # no toe-out (the option is new)
    "effort_weight": 0.0,  # no effort term (the option is new)
    "effort_free_cot": 0.0,  # all the work charged (the option is new)
    "anim_seconds": 10.0,
    "skier": {"mu_long": 0.05, "mu_lat": 0.6, "mu_iso": 0.2, "mu_pole": 0.6, "timestep": 0.01, "hip_tilt_deg": -45.0},
}
# the V-skate recipe: what differs from SYMMETRIC_DEFAULT (RESULTS.md, "Skier: V-skate")
VSKATE = {
    "hip": "two-axis",
    "tau": 0.15,
    "creep_rate": 0.05,
    "symmetric": False,
    "skate_weight": 3.0,
    "skate_min_yaw_deg": 15.0,
    "skate_max_yaw_deg": 35.0,
    "init_noise": "free",
    "init_spread_deg": 8.0,
    "init_toe_deg": 15.0,
}


def test_the_default_is_the_vskate_recipe_and_its_config_file_says_so():
    default, from_file = TrainConfig.build(None), TrainConfig.build(CONFIGS / "skier_default.toml")
    assert asdict(default) == {**SYMMETRIC_DEFAULT, **VSKATE, "skier": {}}
    assert asdict(from_file) == {**asdict(default), "skier": from_file.skier}
    assert from_file.skier_params() == default.skier_params()


def test_the_symmetric_config_is_the_old_default_value_for_value():
    assert asdict(TrainConfig.build(CONFIGS / "skier_symmetric.toml")) == SYMMETRIC_DEFAULT


def test_a_run_that_predates_the_options_keeps_what_it_ran_with():
    """A config.json without the options whose default changed: the old default's values, but the slides' GA
    (``symmetric``, older still); what the run recorded wins."""
    old = asdict(TrainConfig.from_run({}))
    assert old == {**SYMMETRIC_DEFAULT, "symmetric": False, "skier": {}}
    assert TrainConfig.from_run({"hip": "two-axis", "tau": 0.3}, seed=2).tau == 0.3


# issue 24's V-skate: the recipe without the toe-out and the band, with a third of its skate weight
VSKATE_24 = {
    **VSKATE,
    "tau": 0.2,
    "creep_rate": 0.0,
    "skate_weight": 1.0,
    "skate_min_yaw_deg": 10.0,
    "skate_max_yaw_deg": 180.0,
    "init_toe_deg": 0.0,
}


@pytest.mark.parametrize(
    "name, changed", [("skier_slides.toml", {"symmetric": False}), ("skier_vskate.toml", VSKATE_24)]
)
def test_the_older_configs_keep_their_values(name, changed):
    """The slides' GA, and configs/skier_vskate.toml, as before issue 49."""
    cfg = asdict(TrainConfig.build(CONFIGS / name))
    assert cfg == {**SYMMETRIC_DEFAULT, **changed, "skier": cfg["skier"]}


def test_generation_zero_stands_on_toed_out_spread_skis():
    """The exact standing seed: each ski toed out ``init_toe_deg`` (the vertical hip axis, left positive, the mirror
    negative) on legs spread ``init_spread_deg``; the one-axis hip cannot toe a leg out alone."""
    from animat.skier.gene import GeneError, standing_genes
    from animat.skier.model import joint_names
    from animat.skier.train import first_generation

    cfg = TrainConfig.build(None, population=8, init_toe_deg=12.0, init_sigma_deg=3.0)
    g = first_generation(np.random.default_rng(0), cfg)
    col = {n: i for i, n in enumerate(joint_names(14))}
    assert (g[0, :, col["left_hip"]] == 12).all() and (g[0, :, col["right_hip"]] == -12).all()
    assert (g[0, :, col["left_hip_spread"]] == 8).all() and (g[0, :, col["right_hip_spread"]] == -8).all()
    assert np.count_nonzero(g[0]) == 4 * 10 and np.abs(g[1:4, :, col["left_hip"]] - 12).max() <= 15
    with pytest.raises(ConfigError, match="init_toe_deg .* needs hip"):
        TrainConfig.build(None, hip="one-axis", init_spread_deg=0.0, init_toe_deg=5.0)
    with pytest.raises(GeneError, match="two-axis hip"):
        standing_genes(np.random.default_rng(0), 2, 3.0, toe_deg=5.0)


def test_the_default_stance_stands_for_20_seconds():
    """The default's exact standing seed (legs spread 8 degrees, skis toed out 15) neither falls nor skis: setting
    the stance moves the pelvis by centimetres, not metres."""
    from animat.skier.train import first_generation, make_evaluator

    cfg = TrainConfig.build(None, nthread=1)
    stance = first_generation(np.random.default_rng(0), cfg)[:1]
    with make_evaluator(cfg, cfg.skier_params()) as ev:
        scores = ev(stance)
    assert not scores.fell[0] and abs(scores.net_forward_m[0]) < 0.5
