"""``pretrained:NAME`` resolution."""

import pytest

from animat import pretrained
from animat.errors import CheckpointError


def test_plain_paths_pass_through_and_unknown_names_are_one_line_errors(tmp_path):
    assert pretrained.resolve(tmp_path) == tmp_path
    for bad in ["pretrained:no-such-thing", "pretrained:", "pretrained:../fly", "pretrained:.hidden"]:
        with pytest.raises(CheckpointError, match="no pretrained artefact") as err:
            pretrained.resolve(bad)
        assert "\n" not in str(err.value) and "shipped:" in str(err.value)


def test_every_shipped_artefact_has_its_provenance():
    for name in pretrained.available():
        folder = pretrained.resolve(f"pretrained:{name}")
        text = (folder / "PROVENANCE.md").read_text()
        for word in ("command", "seed", "commit"):
            assert word in text.lower(), (name, word)
