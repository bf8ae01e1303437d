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
    second = generate("sheet", 3, 12, 5, tmp_path, scene_options={"size": 5}, on_skipped=progress.append,
                      on_episode=lambda row: progress.append(row["index"]))
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
