"""Genome files: round trips, checksums, safe loading, the pickle export."""

import hashlib
import io
import json
import pickle
from pathlib import Path

import numpy as np
import pytest

from animat import checkpoint
from animat.errors import CheckpointError
from animat.evolve import genome_file, network
from animat.evolve.genome import Genome

LAYERS = (3, 5, 2)


def _genome(seed=0):
    return Genome(
        LAYERS,
        np.random.default_rng(seed).normal(size=network.param_count(LAYERS)).astype(np.float32),
        ("relu", "tanh"),
    )


def _flip_byte(path, where=0.5):
    data = bytearray(path.read_bytes())
    data[int(len(data) * where)] ^= 0xFF
    path.write_bytes(bytes(data))


def test_genome_round_trip(tmp_path):
    g = _genome()
    npz = genome_file.save_genome(tmp_path / "best.npz", g, 1.25, extra={"generation": 7, "output_names": ["a", "b"]})
    assert npz.exists() and npz.with_suffix(".json").exists()
    saved = genome_file.load_genome(tmp_path / "best.npz")
    np.testing.assert_array_equal(saved.genome.genes, g.genes)
    assert saved.genome.layers == LAYERS and saved.genome.activations == ("relu", "tanh")
    assert saved.fitness == 1.25 and saved.extra == {"generation": 7, "output_names": ["a", "b"]}
    # the manifest or a suffix-less path work too
    assert genome_file.load_genome(tmp_path / "best.json").fitness == 1.25
    assert genome_file.load_genome(tmp_path / "best").fitness == 1.25
    manifest = json.loads(npz.with_suffix(".json").read_text())
    assert manifest["sha256"] == hashlib.sha256(npz.read_bytes()).hexdigest()


def test_genome_nan_fitness_round_trip(tmp_path):
    genome_file.save_genome(tmp_path / "x", _genome(), float("nan"))
    assert np.isnan(genome_file.load_genome(tmp_path / "x").fitness)


@pytest.mark.parametrize("where", [0.1, 0.5, 0.95])
def test_corrupt_npz_raises(tmp_path, where):
    npz = genome_file.save_genome(tmp_path / "best.npz", _genome(), 1.0)
    _flip_byte(npz, where)
    with pytest.raises(CheckpointError, match="best.npz") as exc:
        genome_file.load_genome(npz)
    assert "\n" not in str(exc.value)


def test_corrupt_manifest_raises(tmp_path):
    npz = genome_file.save_genome(tmp_path / "best.npz", _genome(), 1.0)
    npz.with_suffix(".json").write_text("{not json")
    with pytest.raises(CheckpointError, match="best.json"):
        genome_file.load_genome(npz)


def test_missing_files_raise(tmp_path):
    with pytest.raises(CheckpointError, match="nope.json"):
        genome_file.load_genome(tmp_path / "nope.npz")
    npz = genome_file.save_genome(tmp_path / "best.npz", _genome(), 1.0)
    npz.unlink()
    with pytest.raises(CheckpointError, match="best.npz"):
        genome_file.load_genome(npz)
    with pytest.raises(CheckpointError):
        checkpoint.read_checkpoint(tmp_path / "empty_dir_that_does_not_exist")


def test_shape_mismatch_with_manifest_raises(tmp_path):
    npz = genome_file.save_genome(tmp_path / "best.npz", _genome(), 1.0)
    mpath = npz.with_suffix(".json")
    manifest = json.loads(mpath.read_text())
    manifest["arrays"]["genes"]["shape"] = [3]
    mpath.write_text(json.dumps(manifest))
    with pytest.raises(CheckpointError, match="genes"):
        genome_file.load_genome(npz)


def test_object_arrays_never_unpickled(tmp_path):
    buf = io.BytesIO()
    np.savez(buf, genes=np.array([{"evil": 1}], dtype=object))
    data = buf.getvalue()
    (tmp_path / "x.npz").write_bytes(data)
    manifest = {
        "format": checkpoint.FORMAT,
        "version": 1,
        "kind": "genome",
        "npz": "x.npz",
        "sha256": hashlib.sha256(data).hexdigest(),
        "arrays": {"genes": {"shape": [1], "dtype": "|O"}},
        "meta": {"layers": [1, 1], "activations": ["tanh"]},
    }
    (tmp_path / "x.json").write_text(json.dumps(manifest))
    with pytest.raises(CheckpointError, match="x.npz"):
        genome_file.load_genome(tmp_path / "x.npz")
    with pytest.raises(CheckpointError, match="x.npz"):
        checkpoint.read_checkpoint(tmp_path / "x.json")
    with pytest.raises(TypeError):
        checkpoint.write_checkpoint(tmp_path / "y.json", {"a": np.array([None], dtype=object)}, "genome", {})


def test_wrong_kind_raises(tmp_path):
    genome_file.save_genome(tmp_path / "best.npz", _genome(), 1.0)
    with pytest.raises(CheckpointError, match="population"):
        checkpoint.read_checkpoint(tmp_path / "best.json", kind="population")


def test_export_pickle_layout(tmp_path):
    g = _genome(3)
    path = genome_file.export_pickle(g, tmp_path / "best.pkl")
    with open(path, "rb") as fh:
        obj = pickle.load(fh)  # test-only: the package itself never unpickles
    assert obj["layers"] == list(LAYERS) and obj["activations"] == ["relu", "tanh"]
    assert set(obj["params"]) == {"W1", "b1", "W2", "b2"}
    assert obj["params"]["W1"].shape == (5, 3) and obj["params"]["b2"].shape == (2, 1)
    np.testing.assert_array_equal(obj["genes"], g.genes)
    np.testing.assert_array_equal(network.flatten(obj["params"], LAYERS), g.genes)


def test_genome_file_of_the_first_format_loads(tmp_path):
    """A genome file written before the checkpoint format moved to animat.checkpoint (tests/data)."""
    saved = genome_file.load_genome(Path(__file__).parents[1] / "data" / "checkpoint_v1" / "best_genome.npz")
    assert saved.genome.layers == (2, 3, 1) and saved.genome.activations == ("tanh", "tanh")
    np.testing.assert_array_equal(saved.genome.genes, np.arange(13, dtype=np.float32) / 10)
    assert saved.fitness == 0.75 and saved.extra == {"generation": 2}
