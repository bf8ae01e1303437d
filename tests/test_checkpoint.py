"""The checkpoint format (animat.checkpoint): round trips, checksums, atomic layout, fallback, safe loading."""

import hashlib
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from animat import checkpoint
from animat.errors import CheckpointError, CheckpointWarning

FIXTURE = Path(__file__).parent / "data" / "checkpoint_v1"  # written by the format's first version


def _flip_byte(path, where=0.5):
    data = bytearray(path.read_bytes())
    data[int(len(data) * where)] ^= 0xFF
    path.write_bytes(bytes(data))


def test_round_trip_keeps_arrays_meta_and_checksum(tmp_path):
    arrays = {"a": np.arange(6, dtype=np.float32).reshape(2, 3), "b": np.array([True, False]), "c": np.int64(7)}
    manifest = checkpoint.write_checkpoint(tmp_path / "x.json", arrays, "thing", {"step": 3, "name": "n"})
    got, meta = checkpoint.read_checkpoint(manifest, kind="thing")
    assert sorted(got) == ["a", "b", "c"] and meta == {"step": 3, "name": "n"}
    for k, v in arrays.items():
        np.testing.assert_array_equal(got[k], v)
        assert got[k].dtype == np.asarray(v).dtype and got[k].shape == np.asarray(v).shape
    on_disk = json.loads(manifest.read_text())
    assert on_disk["format"] == "animat-checkpoint" and on_disk["version"] == 1 and on_disk["kind"] == "thing"
    assert on_disk["sha256"] == hashlib.sha256((tmp_path / "x.npz").read_bytes()).hexdigest()
    assert checkpoint.read_checkpoint(tmp_path / "x.npz")[1]["step"] == 3  # the npz names its manifest


@pytest.mark.parametrize("where", [0.1, 0.5, 0.95])
def test_corrupt_data_raises_one_line_naming_the_file(tmp_path, where):
    checkpoint.write_checkpoint(tmp_path / "x.json", {"a": np.ones((4, 4))}, "thing", {})
    _flip_byte(tmp_path / "x.npz", where)
    with pytest.raises(CheckpointError, match="x.npz") as exc:
        checkpoint.read_checkpoint(tmp_path / "x.json")
    assert "\n" not in str(exc.value)


def test_manifest_that_disagrees_with_its_data_raises(tmp_path):
    manifest = checkpoint.write_checkpoint(tmp_path / "x.json", {"a": np.ones(3, np.float32)}, "thing", {})
    spec = json.loads(manifest.read_text())
    spec["arrays"]["a"]["dtype"] = "<f8"
    manifest.write_text(json.dumps(spec))
    with pytest.raises(CheckpointError, match=r"'a'.*<f4\[3\].*<f8"):
        checkpoint.read_checkpoint(manifest)
    spec["arrays"] = {"a": spec["arrays"]["a"], "extra": {"shape": [1], "dtype": "<f4"}}
    manifest.write_text(json.dumps(spec))
    with pytest.raises(CheckpointError, match="manifest lists"):
        checkpoint.read_checkpoint(manifest)
    manifest.write_text(json.dumps({"format": "something-else"}))
    with pytest.raises(CheckpointError, match="not an animat checkpoint manifest"):
        checkpoint.read_checkpoint(manifest)


def test_object_arrays_are_not_written(tmp_path):
    """(Nor read: tests/evolve/test_genome_file.py forges a checkpoint of object arrays.)"""
    with pytest.raises(TypeError, match="dtype object"):
        checkpoint.write_checkpoint(tmp_path / "y.json", {"a": np.array([None], dtype=object)}, "thing", {})
    assert not (tmp_path / "y.npz").exists() and not (tmp_path / "y.json").exists()


def test_wrong_kind_and_missing_files_raise(tmp_path):
    checkpoint.write_checkpoint(tmp_path / "x.json", {"a": np.zeros(1)}, "thing", {})
    with pytest.raises(CheckpointError, match="'thing' checkpoint, expected 'population'"):
        checkpoint.read_checkpoint(tmp_path / "x.json", kind="population")
    with pytest.raises(CheckpointError, match="nope.json"):
        checkpoint.read_checkpoint(tmp_path / "nope.json")
    (tmp_path / "run").mkdir()
    with pytest.raises(CheckpointError, match="no checkpoints/ folder"):
        checkpoint.read_checkpoint(tmp_path / "run")
    (tmp_path / "x.npz").unlink()
    with pytest.raises(CheckpointError, match="x.npz.*missing"):
        checkpoint.read_checkpoint(tmp_path / "x.json")


def test_population_checkpoints_keep_last_three_and_latest(tmp_path):
    for gen in range(1, 7):
        checkpoint.save_checkpoint(tmp_path, gen, {"genes": np.full((2, 3), gen, np.float32)}, {"generation": gen})
    names = sorted(p.name for p in (tmp_path / "checkpoints").iterdir())
    assert names == [
        "gen-000004.json",
        "gen-000004.npz",
        "gen-000005.json",
        "gen-000005.npz",
        "gen-000006.json",
        "gen-000006.npz",
        "latest.json",
    ]
    arrays, meta = checkpoint.read_checkpoint(tmp_path)
    assert meta["generation"] == 6 and arrays["genes"][0, 0] == 6
    arrays, meta = checkpoint.read_checkpoint(tmp_path / "checkpoints" / "gen-000005.npz")
    assert meta["generation"] == 5
    assert [p.name for p in checkpoint.list_checkpoints(tmp_path)] == [
        "gen-000004.json",
        "gen-000005.json",
        "gen-000006.json",
    ]


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


def test_checkpoints_of_the_first_format_still_load_and_fall_back(tmp_path):
    """Files written before the format moved out of animat.evolve (tests/data/checkpoint_v1)."""
    arrays, meta = checkpoint.read_checkpoint(FIXTURE, kind="population")
    assert meta == {"generation": 2, "note": "written by the format of 2026-12-01"}
    np.testing.assert_array_equal(arrays["genes"], np.full((2, 3), 2, np.float32))
    np.testing.assert_array_equal(arrays["fitness"], [2.0, -2.0])
    assert [p.name for p in checkpoint.list_checkpoints(FIXTURE)] == ["gen-000001.json", "gen-000002.json"]
    run = tmp_path / "run"
    shutil.copytree(FIXTURE, run)
    _flip_byte(run / "checkpoints" / "gen-000002.npz")
    with pytest.warns(CheckpointWarning, match="gen-000002.npz.*older.*gen-000001.json"):
        assert checkpoint.read_checkpoint(run, kind="population")[1]["generation"] == 1
