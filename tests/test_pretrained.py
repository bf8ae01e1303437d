"""``pretrained:NAME`` resolution, and each shipped artefact against its PROVENANCE.md: the commands it states
parse with this CLI, the commits it names are commit ids (and this repository's, where its history is here), every
file shipped is accounted for, and the seed and configuration file it names are the artefact's own."""

from __future__ import annotations

import json
import re
import subprocess
import tomllib
from pathlib import Path

import pytest
import typer
from typer.exceptions import TyperException

from animat import cli, pretrained
from animat.errors import CheckpointError
from animat.surrogate.wear import open_garment

REPO = Path(__file__).parents[1]
DIRECTIONS = ("hover", "forward", "back", "left", "right", "up", "down", "goal")


def test_plain_paths_pass_through_and_unknown_names_are_one_line_errors(tmp_path):
    assert pretrained.resolve(tmp_path) == tmp_path
    for bad in ["pretrained:no-such-thing", "pretrained:", "pretrained:../fly", "pretrained:.hidden"]:
        with pytest.raises(CheckpointError, match="no pretrained artefact") as err:
            pretrained.resolve(bad)
        assert "\n" not in str(err.value) and "shipped:" in str(err.value)


def _text(name: str) -> str:
    return (pretrained.resolve(f"pretrained:{name}") / "PROVENANCE.md").read_text()


def commands(text: str) -> list[list[str]]:
    """The ``animat …`` command lines of a PROVENANCE.md (indented code lines and inline code, an inline one
    wrapped over lines joined), as words; the placeholder ``K`` (a seed) becomes 1."""
    found = re.findall(r"^    (animat .+)$", text, re.M) + re.findall(r"`(animat [^`]+)`", text)
    return [["1" if w == "K" else w for w in line.split()] for line in found]


def dry_parse(words: list[str]) -> list[str]:
    """Parse ``animat WORDS`` as the CLI would, without running it: the verb's path (``["animat", "fly", "train"]``).
    Raises the CLI parser's usage error (a :class:`typer.exceptions.TyperException`) for an unknown verb or option,
    a missing argument or a bad value."""
    command, args, path = typer.main.get_command(cli.app), list(words[1:]), ["animat"]
    while hasattr(command, "get_command"):  # a group: parse its own options, then descend to the named verb
        ctx = command.make_context(" ".join(path), args, resilient_parsing=False)
        rest = list(getattr(ctx, "_protected_args", None) or getattr(ctx, "protected_args", [])) + list(ctx.args)
        name, command, args = command.resolve_command(ctx, rest)  # "No such command" for an unknown verb
        path.append(name)
    if args:  # only the verb named (prose such as "`animat fly handovers` of that set"): its existence is the check
        command.make_context(" ".join(path), args, resilient_parsing=False)
    return path


@pytest.mark.parametrize(
    "name", ["walk", "jog", "drosophila-hover", "drosophila", "paper", "cape", "skirt", "locomotion"]
)
def test_every_command_a_provenance_states_parses_with_this_cli(name):
    """Each ``animat …`` line of the PROVENANCE.md names a verb that exists and options it accepts (typos, a
    renamed or dropped option, a prose word inside the command fail); the artefact's own command is among them."""
    assert name in pretrained.available()
    lines = commands(_text(name))
    verbs = {tuple(dry_parse(words)) for words in lines}
    assert len(lines) >= 2 and verbs, lines
    own = {
        "walk": ("animat", "imitate", "train"),
        "jog": ("animat", "imitate", "train"),
        "drosophila-hover": ("animat", "fly", "train"),
        "drosophila": ("animat", "fly", "train"),
        "paper": ("animat", "fly", "train-steering"),
        "cape": ("animat", "surrogate", "train"),
        "skirt": ("animat", "surrogate", "train"),
        "locomotion": ("animat", "imitate", "train"),
    }
    assert own[name] in verbs, verbs


def test_the_dry_parse_refuses_what_the_cli_refuses():
    """The check above can fail: an unknown verb, an unknown option, a mistyped value, a stray word."""
    for bad in (
        "animat fly trian --out x",
        "animat fly train --generation 3",
        "animat imitate evaluate x --episodes many",
        "animat fly train --from pretrained:paper's NAME --out x",
    ):
        with pytest.raises(TyperException) as err:  # the CLI's own usage error: NoSuchOption, BadParameter, UsageError
            dry_parse(bad.split())
        assert type(err.value).__name__ in ("NoSuchOption", "BadParameter", "UsageError"), repr(err.value)
    assert dry_parse("animat fly train --generations 3".split()) == ["animat", "fly", "train"]


def _git_commits_here() -> bool:
    try:
        out = subprocess.run(
            ["git", "-C", str(REPO), "rev-parse", "--is-shallow-repository"], capture_output=True, text=True, timeout=10
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return out.returncode == 0 and out.stdout.strip() == "false"


@pytest.mark.parametrize(
    "name", ["walk", "jog", "drosophila-hover", "drosophila", "paper", "cape", "skirt", "locomotion"]
)
def test_the_commits_a_provenance_names_are_commit_ids_of_this_repository(name):
    """Every ``commit X`` / ``commits X`` with a digit in X names a 7–40 hex id; in a full clone each is a
    commit of this repository (a shallow clone, as CI's checkout, has not the history: there only the form is
    checked)."""
    named = []
    for m in re.finditer(r"\bcommits?\s+((?:(?:at|of)\s+)?\**\w+)", _text(name), re.I):
        word = m.group(1).split()[-1].strip("*")
        if any(ch.isdigit() for ch in word):  # "that commit changed …" is prose; "commit 4156097" names one
            named.append(word)
    assert named, f"{name}: PROVENANCE.md names no commit"
    for c in named:
        assert re.fullmatch(r"[0-9a-f]{7,40}", c), (name, c)
    if _git_commits_here():
        for c in named:
            found = subprocess.run(
                ["git", "-C", str(REPO), "cat-file", "-e", f"{c}^{{commit}}"], capture_output=True, timeout=10
            )
            assert found.returncode == 0, f"{name}: commit {c} is not in this repository"


def _mentioned(text: str) -> str:
    """The text with ``stem.a/.b`` spelled out as ``stem.a stem.b``."""
    return re.sub(r"(\w+)\.(\w+)/\.(\w+)", r"\1.\2 \1.\3", text)


@pytest.mark.parametrize("name", ["walk", "jog", "drosophila-hover", "locomotion"])
def test_a_single_artefact_ships_the_files_it_names_and_its_own_seed_and_config(name):
    """Every file of the folder is named in its PROVENANCE.md; the seed it states (``seed N``) is config.json's;
    the configuration file of its command holds the values config.json holds (the run read that file)."""
    folder = pretrained.resolve(f"pretrained:{name}")
    text = _text(name)
    files = sorted(p.name for p in folder.iterdir() if p.is_file() and p.name != "PROVENANCE.md")
    assert "config.json" in files and len(files) >= 3
    for f in files:
        assert f in _mentioned(text), (name, f)
    config = json.loads((folder / "config.json").read_text())
    stated = re.search(r"\bseed (\d+)\b", text, re.I)
    assert stated and int(stated.group(1)) == config["seed"], (name, stated and stated.group(0), config["seed"])
    (toml_name,) = {w for words in commands(text) for w in words if w.startswith("configs/") and w.endswith(".toml")}
    recipe = tomllib.loads((REPO / toml_name).read_text()) | _overrides(text)
    assert {k: config.get(k, "<missing>") for k in recipe} == recipe, toml_name


def _overrides(text: str) -> dict:
    """The options the training command (the first with a config file: its code block comes first) gives over its
    config file (``--max-minutes 120``), as config keys and TOML values."""
    words = next(w for w in commands(text) if "--config" in w)
    pairs = zip(words, words[1:])
    return {
        a[2:].replace("-", "_"): tomllib.loads(f"v = {b}")["v"]
        for a, b in pairs
        if a.startswith("--") and a not in ("--config", "--out", "--from") and not b.startswith("--")
    }


def test_the_walk_policy_is_the_configs_network():
    """policy.json's network is the one config.json asks for (layers, activation, the target observation's size)."""
    from animat.imitate.policy import load_policy

    folder = pretrained.resolve("pretrained:walk")
    config = json.loads((folder / "config.json").read_text())
    policy = load_policy(folder)
    assert policy.manifest["net_arch"] == config["net_arch"] and policy.manifest["activation"] == config["activation"]
    assert policy.manifest["obs_norm"]["enabled"] == config["normalize_obs"]


@pytest.mark.parametrize("name", ["paper", "drosophila"])
def test_a_steering_set_ships_exactly_the_networks_its_steering_json_names_each_with_its_stated_seed(name):
    """steering.json's networks (switch, goal, alternates) are the folder's subfolders, no more, no fewer; each is a
    run directory reduced to config.json and best_genome.npz/.json, its genome loads with the config's layers, its
    name is the PROVENANCE's (``NAMEC`` stands for forwardC …), and its config's seed is one the PROVENANCE states."""
    from animat.evolve.genome_file import load_genome

    folder = pretrained.resolve(f"pretrained:{name}")
    text = _mentioned(_text(name))
    steering = json.loads((folder / "steering.json").read_text())
    assert steering["preset"] == name
    alternates = {n for names in steering.get("alternates", {}).values() for n in names}
    named = set(steering["switch"].values()) | ({steering["goal"]} if steering["goal"] else set()) | alternates
    subfolders = {p.name for p in folder.iterdir() if p.is_dir()}
    assert named == subfolders, named ^ subfolders
    assert {p.name for p in folder.iterdir() if p.is_file()} == {"PROVENANCE.md", "steering.json"}
    seeds = {int(s) for s in re.findall(r"\bseeds? =? ?(\d+)", text)}
    seeds |= {int(s) for lst in re.findall(r"\bseeds ((?:\d+, )+\d+)", text) for s in lst.split(", ")}
    for net in sorted(subfolders):
        assert {p.name for p in (folder / net).iterdir()} == {"config.json", "best_genome.npz", "best_genome.json"}, net
        base = next((d for d in DIRECTIONS if net.startswith(d)), None)
        assert net in text or (base and f"NAME{net[len(base) :]}" in text), net
        config = json.loads((folder / net / "config.json").read_text())
        assert list(load_genome(folder / net / "best_genome.npz").genome.layers) == config["layers"], net
        assert config["seed"] in seeds, (net, config["seed"], sorted(seeds))


@pytest.mark.parametrize("name", ["cape", "skirt"])
def test_a_garment_ships_its_runtime_files_its_config_and_no_path_of_this_machine(name):
    """pretrained:cape and :skirt: the files the garment runtime loads (named in its PROVENANCE.md), a config.json
    whose training options are its configuration file's ``[train]`` and ``[scene]`` tables and whose seed it states,
    a dataset path relative to the project (the data are not shipped), and a garment that opens."""
    folder = pretrained.resolve(f"pretrained:{name}")
    text = _text(name)
    files = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file() and p.name != "PROVENANCE.md")
    assert files == ["checkpoints/model.json", "checkpoints/model.npz", "config.json", "normals.npz", "pca.npz"]
    assert all(f in text for f in files)
    config = json.loads((folder / "config.json").read_text())
    assert int(re.search(r"\bseed (\d+)\b", text).group(1)) == config["seed"]
    (toml_name,) = {w for words in commands(text) for w in words if w.startswith("configs/") and w.endswith(".toml")}
    recipe = tomllib.loads((REPO / toml_name).read_text())
    assert {k: config.get(k) for k in recipe["train"]} == recipe["train"]
    assert {k: config["scene"].get(k) for k in recipe["scene"]} == recipe["scene"]
    assert not Path(config["data"]).is_absolute() and (config["system"], config["verb"]) == ("surrogate", "train")
    garment = open_garment(f"pretrained:{name}")
    assert garment.scene.name == config["scene"]["name"] == f"{name}-character" and garment.fps == 60
