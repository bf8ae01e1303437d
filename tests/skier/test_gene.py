from __future__ import annotations

import json

import numpy as np
import pytest

from animat.errors import AnimatError
from animat.skier import gene as G
from animat.skier.model import JOINTS


def test_interpolation_exact_at_knots_and_linear_between():
    rng = np.random.default_rng(1)
    g = G.random_genes(rng, 1)[0]
    n = g.shape[0]
    t = np.arange(2 * n) * G.TAU  # two full cycles
    assert np.array_equal(G.targets(g, t), np.concatenate([g, g]).astype(float))
    mid = G.targets(g, np.array([2.5 * G.TAU, (n - 0.25) * G.TAU]))
    assert np.allclose(mid[0], (g[2] + g[3]) / 2)
    assert np.allclose(mid[1], g[n - 1] + (g[0] - g[n - 1]) * 0.75)  # wraps to state 0


def test_mirrored_half():
    rng = np.random.default_rng(2)
    g = G.random_genes(rng, 3)
    for gene in g:
        for i in range(5):
            a, b = gene[i], gene[i + 5]
            assert b[JOINTS.index("head")] == a[JOINTS.index("head")]
            assert b[JOINTS.index("torso")] == a[JOINTS.index("torso")]
            for k in ("shoulder", "elbow", "hand", "knee"):
                assert b[JOINTS.index(f"right_{k}")] == a[JOINTS.index(f"left_{k}")]
                assert b[JOINTS.index(f"left_{k}")] == a[JOINTS.index(f"right_{k}")]
            assert b[JOINTS.index("right_hip")] == -a[JOINTS.index("left_hip")]
            assert b[JOINTS.index("left_hip")] == -a[JOINTS.index("right_hip")]
    assert np.array_equal(G.mirror(g), g)  # idempotent


def test_controls_radians_and_shape():
    g = G.random_genes(np.random.default_rng(3), 2)
    c = G.controls(g, 7, 0.25)
    assert c.shape == (2, 7, 12)
    assert np.allclose(c[:, 0], np.radians(g[:, 0]))
    assert np.allclose(c[:, 2], np.radians(g[:, 1]))


@pytest.mark.parametrize(
    "bad, words",
    [
        (np.zeros((9, 12)), "shape"),
        (np.zeros((10, 11)), "shape"),
        ([[0] * 12] * 9 + [[0, 50] + [0] * 10], "torso angle 50"),
        ([[0.5] + [0] * 11] + [[0] * 12] * 9, "not an integer"),
        ("abc", "matrix"),
    ],
)
def test_bad_gene_one_line_error(bad, words):
    with pytest.raises(AnimatError) as exc:
        G.validate_gene(bad)
    msg = str(exc.value)
    assert words in msg and "\n" not in msg


def test_gene_json_round_trip(tmp_path):
    g = G.random_genes(np.random.default_rng(4), 1)[0]
    G.save_gene_json(tmp_path / "g.json", g, 3.5, tau=0.4)
    back, info = G.load_gene_json(tmp_path / "g.json")
    assert np.array_equal(back, g) and info["tau"] == 0.4 and info["fitness"] == 3.5
    (tmp_path / "tau.json").write_text(json.dumps({**json.loads((tmp_path / "g.json").read_text()), "tau_seconds": -1}))
    with pytest.raises(G.GeneError, match="tau_seconds must be a number > 0"):
        G.load_gene_json(tmp_path / "tau.json")
    (tmp_path / "bad.json").write_text('{"states": [[1, 2]]}')
    with pytest.raises(G.GeneError, match="shape"):
        G.load_gene_json(tmp_path / "bad.json")
