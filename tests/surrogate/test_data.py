import numpy as np
import pytest

from animat.errors import ConfigError
from animat.surrogate.data import episode_path, generate, load_dataset


def test_generate_is_resumable(tmp_path):
    first = generate("sheet", 2, 12, 5, tmp_path, scene_options={"size": 5})
    assert first["simulated_episodes"] == 2 and first["frames"] == 24 and first["dropped_frames"] == 0
    before = episode_path(tmp_path, 0).stat().st_mtime_ns
    episode_path(tmp_path, 1).write_bytes(b"truncated")  # an interrupted write is redone
    progress = []  # what a progress bar sees: the episodes already there, then each new one
    second = generate(
        "sheet",
        3,
        12,
        5,
        tmp_path,
        scene_options={"size": 5},
        on_skipped=progress.append,
        on_episode=lambda row: progress.append(row["index"]),
    )
    assert progress == [1, 1, 2]
    assert second["skipped_episodes"] == 1 and second["simulated_episodes"] == 2
    assert episode_path(tmp_path, 0).stat().st_mtime_ns == before
    ds = load_dataset(tmp_path, "sheet")
    assert len(ds.X) == 3 and ds.X[2].shape == (12, 25, 3)
    # the episode seed depends only on (seed, index): a fresh folder gives identical data
    fresh = generate("sheet", 3, 12, 5, tmp_path / "fresh", scene_options={"size": 5}, workers=2)
    assert fresh["simulated_episodes"] == 3
    assert all(np.array_equal(a, b) for a, b in zip(ds.X, load_dataset(tmp_path / "fresh").X))


def test_generate_refuses_other_settings_and_bad_input(tmp_path):
    generate("sheet", 1, 5, 0, tmp_path, scene_options={"size": 5})
    with pytest.raises(ConfigError, match="other scene/frames/seed"):
        generate("sheet", 1, 5, 1, tmp_path, scene_options={"size": 5})
    with pytest.raises(ConfigError, match="frames must be > 0"):
        generate("sheet", 1, 0, 0, tmp_path / "x")
    with pytest.raises(ConfigError, match="unknown scene"):
        generate("cloak", 1, 5, 0, tmp_path / "y")
    with pytest.raises(ConfigError, match="holds no dataset.json"):
        load_dataset(tmp_path / "nothing")


_RAY_GENERATE = """
import sys, ray
from animat.surrogate.data import generate
stats = generate("sheet", 3, 12, 5, sys.argv[1], scene_options={"size": 5}, workers=2, backend="ray")
assert stats["simulated_episodes"] == 3, stats
assert not ray.is_initialized(), "generate left running the Ray it started"
print("OK")
"""


def test_generate_on_ray_gives_the_same_data_and_shuts_its_ray_down(tmp_path):
    pytest.importorskip("ray")
    import subprocess
    import sys

    local = generate("sheet", 3, 12, 5, tmp_path / "local", scene_options={"size": 5})
    res = subprocess.run(
        [sys.executable, "-c", _RAY_GENERATE, str(tmp_path / "ray")], capture_output=True, text=True, timeout=300
    )
    assert res.returncode == 0 and "OK" in res.stdout, res.stdout + res.stderr[-3000:]
    assert local["simulated_episodes"] == 3
    for a, b in zip(load_dataset(tmp_path / "local").X, load_dataset(tmp_path / "ray").X, strict=True):
        assert np.array_equal(a, b)
