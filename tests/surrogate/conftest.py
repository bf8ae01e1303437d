"""A tiny sheet dataset (7 x 7 vertices, 4 episodes x 60 frames) shared by the surrogate tests."""

from __future__ import annotations

import pytest

from animat.surrogate.data import generate

TINY = {"size": 7}


@pytest.fixture(scope="session")
def tiny_dataset(tmp_path_factory):
    out = tmp_path_factory.mktemp("sheet7")
    summary = generate("sheet", 4, 60, 0, out, scene_options=TINY)
    return out, summary
