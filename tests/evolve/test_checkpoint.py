"""Checkpoint files: round trips, checksums, atomic layout, safe loading."""

import hashlib
import io
import json
import pickle

import numpy as np
import pytest

from animat.errors import CheckpointError, CheckpointWarning
from animat.evolve import checkpoint, network
from animat.evolve.genome import Genome

LAYERS = (3, 5, 2)


def _genome(seed=0):
    return Genome(LAYERS, np.random.default_rng(seed).normal(size=network.param_count(LAYERS)).astype(np.float32), ("relu", "tanh"))


def _flip_byte(path, where=0.5):
    data = bytearray(path.read_bytes())
    data[int(len(data) * where)] ^= 0xFF
    path.write_bytes(bytes(data))


def test_genome_round_trip(tmp_path):
    g = _genome()
    npz = checkpoint.save_genome(tmp_path / "best.npz", g, 1.25, extra={"generation": 7, "output_names": ["a", "b"]})
    assert npz.exists() and npz.with_suffix(".json").exists()
    saved = checkpoint.load_genome(tmp_path / "best.npz")
    np.testing.assert_array_equal(saved.genome.genes, g.genes)
    assert saved.genome.layers == LAYERS and saved.genome.activations == ("relu", "tanh")
    assert saved.fitness == 1.25 and saved.extra == {"generation": 7, "output_names": ["a", "b"]}
    # the manifest or a suffix-less path work too
    assert checkpoint.load_genome(tmp_path / "best.json").fitness == 1.25
    assert checkpoint.load_genome(tmp_path / "best").fitness == 1.25
    manifest = json.loads(npz.with_suffix(".json").read_text())
    assert manifest["sha256"] == hashlib.sha256(npz.read_bytes()).hexdigest()


def test_genome_nan_fitness_round_trip(tmp_path):
    checkpoint.save_genome(tmp_path / "x", _genome(), float("nan"))
    assert np.isnan(checkpoint.load_genome(tmp_path / "x").fitness)


@pytest.mark.parametrize("where", [0.1, 0.5, 0.95])
def test_corrupt_npz_raises(tmp_path, where):
    npz = checkpoint.save_genome(tmp_path / "best.npz", _genome(), 1.0)
    _flip_byte(npz, where)
    with pytest.raises(CheckpointError, match="best.npz") as exc:
        checkpoint.load_genome(npz)
    assert "\n" not in str(exc.value)


def test_corrupt_manifest_raises(tmp_path):
    npz = checkpoint.save_genome(tmp_path / "best.npz", _genome(), 1.0)
    npz.with_suffix(".json").write_text("{not json")
    with pytest.raises(CheckpointError, match="best.json"):
        checkpoint.load_genome(npz)


def test_missing_files_raise(tmp_path):
    with pytest.raises(CheckpointError, match="nope.json"):
        checkpoint.load_genome(tmp_path / "nope.npz")
    npz = checkpoint.save_genome(tmp_path / "best.npz", _genome(), 1.0)
    npz.unlink()
    with pytest.raises(CheckpointError, match="best.npz"):
        checkpoint.load_genome(npz)
    with pytest.raises(CheckpointError):
        checkpoint.read_checkpoint(tmp_path / "empty_dir_that_does_not_exist")


def test_shape_mismatch_with_manifest_raises(tmp_path):
    npz = checkpoint.save_genome(tmp_path / "best.npz", _genome(), 1.0)
    mpath = npz.with_suffix(".json")
    manifest = json.loads(mpath.read_text())
    manifest["arrays"]["genes"]["shape"] = [3]
    mpath.write_text(json.dumps(manifest))
    with pytest.raises(CheckpointError, match="genes"):
        checkpoint.load_genome(npz)


def test_object_arrays_never_unpickled(tmp_path):
    buf = io.BytesIO()
    np.savez(buf, genes=np.array([{"evil": 1}], dtype=object))
    data = buf.getvalue()
    (tmp_path / "x.npz").write_bytes(data)
    manifest = {"format": checkpoint.FORMAT, "version": 1, "kind": "genome", "npz": "x.npz", "sha256": hashlib.sha256(data).hexdigest(),
                "arrays": {"genes": {"shape": [1], "dtype": "|O"}}, "meta": {"layers": [1, 1], "activations": ["tanh"]}}
    (tmp_path / "x.json").write_text(json.dumps(manifest))
    with pytest.raises(CheckpointError, match="x.npz"):
        checkpoint.load_genome(tmp_path / "x.npz")
    with pytest.raises(TypeError):
        checkpoint.write_checkpoint(tmp_path / "y.json", {"a": np.array([None], dtype=object)}, "genome", {})


def test_wrong_kind_raises(tmp_path):
    checkpoint.save_genome(tmp_path / "best.npz", _genome(), 1.0)
    with pytest.raises(CheckpointError, match="population"):
        checkpoint.read_checkpoint(tmp_path / "best.json", kind="population")


def test_population_checkpoints_keep_last_three_and_latest(tmp_path):
    for gen in range(1, 7):
        checkpoint.save_checkpoint(tmp_path, gen, {"genes": np.full((2, 3), gen, np.float32)}, {"generation": gen})
    names = sorted(p.name for p in (tmp_path / "checkpoints").iterdir())
    assert names == ["gen-000004.json", "gen-000004.npz", "gen-000005.json", "gen-000005.npz", "gen-000006.json", "gen-000006.npz", "latest.json"]
    arrays, meta = checkpoint.read_checkpoint(tmp_path)
    assert meta["generation"] == 6 and arrays["genes"][0, 0] == 6
    arrays, meta = checkpoint.read_checkpoint(tmp_path / "checkpoints" / "gen-000005.npz")
    assert meta["generation"] == 5
    assert [p.name for p in checkpoint.list_checkpoints(tmp_path)] == ["gen-000004.json", "gen-000005.json", "gen-000006.json"]


def test_a_resumed_lineage_replaces_the_later_checkpoints_of_the_one_it_left(tmp_path):
    """Resumed from generation 2 of a run that reached 6: the new generations 3-5 are kept, the old 6
    is removed (else the pruning kept it and a fallback could load the abandoned run)."""
    for gen in range(1, 7):
        checkpoint.save_checkpoint(tmp_path, gen, {"genes": np.zeros((2, 3), np.float32)}, {"branch": "A"})
    for gen in range(3, 6):
        checkpoint.save_checkpoint(tmp_path, gen, {"genes": np.ones((2, 3), np.float32)}, {"branch": "B"})
    kept = checkpoint.list_checkpoints(tmp_path)
    assert [p.name for p in kept] == ["gen-000003.json", "gen-000004.json", "gen-000005.json"]
    assert all(checkpoint.read_checkpoint(p)[1]["branch"] == "B" for p in kept)


def test_crash_mid_write_leaves_previous_valid(tmp_path):
    checkpoint.save_checkpoint(tmp_path, 1, {"genes": np.ones((2, 3), np.float32)}, {"generation": 1})
    ckpt = tmp_path / "checkpoints"
    # a crash after the next npz but before its manifest / latest.json, plus a leftover temp file
    (ckpt / "gen-000002.npz").write_bytes(b"partial")
    (ckpt / ".latest.json.abc.tmp").write_text("{")
    arrays, meta = checkpoint.read_checkpoint(tmp_path)
    assert meta["generation"] == 1 and arrays["genes"].sum() == 6
    # a corrupt latest pointer gives way to the newest checkpoint that verifies, and is reported
    (ckpt / "latest.json").write_text("garbage")
    with pytest.warns(CheckpointWarning, match="latest.json"):
        assert checkpoint.read_checkpoint(tmp_path)[1]["generation"] == 1
    # ... and named in the error when none does
    _flip_byte(ckpt / "gen-000001.npz", 0.5)
    with pytest.raises(CheckpointError, match="latest.json"):
        checkpoint.read_checkpoint(tmp_path)


def test_damaged_newest_checkpoint_falls_back_to_the_newest_valid_one(tmp_path):
    for gen in range(1, 4):
        checkpoint.save_checkpoint(tmp_path, gen, {"genes": np.full((2, 3), gen, np.float32)}, {"generation": gen})
    ckpt = tmp_path / "checkpoints"
    _flip_byte(ckpt / "gen-000003.npz", 0.5)
    (ckpt / "gen-000002.json").write_text("{")
    # a checkpoint of another kind in the folder is passed over too
    checkpoint.write_checkpoint(ckpt / "other-000009.json", {"x": np.zeros(1)}, "genome", {})
    with pytest.warns(CheckpointWarning, match="gen-000003.npz.*older.*gen-000001.json"):
        arrays, meta = checkpoint.read_checkpoint(tmp_path, kind="population")
    assert meta["generation"] == 1 and arrays["genes"][0, 0] == 1
    # a checkpoint named explicitly is never replaced by another
    with pytest.raises(CheckpointError, match="gen-000003.npz"):
        checkpoint.read_checkpoint(ckpt / "gen-000003.json")


def test_export_pickle_layout(tmp_path):
    g = _genome(3)
    path = checkpoint.export_pickle(g, tmp_path / "best.pkl")
    with open(path, "rb") as fh:
        obj = pickle.load(fh)  # test-only: the package itself never unpickles
    assert obj["layers"] == list(LAYERS) and obj["activations"] == ["relu", "tanh"]
    assert set(obj["params"]) == {"W1", "b1", "W2", "b2"}
    assert obj["params"]["W1"].shape == (5, 3) and obj["params"]["b2"].shape == (2, 1)
    np.testing.assert_array_equal(obj["genes"], g.genes)
    np.testing.assert_array_equal(network.flatten(obj["params"], LAYERS), g.genes)
