"""The fly's presets: each a fly of its own (its options class, training, replay and report) over the same engine.

``animat fly train --preset NAME`` (or a config file's or resumed run's ``preset``), ``animat fly replay`` (the
preset its source records) and the fly's report pages read this table; adding a preset is one entry of
:data:`PRESETS`. An entry names its heavy modules by import string (``"module:attribute"``), so reading the table
loads only the options classes and the scene builders (no JAX).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path

from animat import runs
from animat.config import load_toml
from animat.errors import ConfigError
from animat.fly.drosophila.options import DrosophilaTrainConfig
from animat.fly.options import TrainConfig

#: what ``animat fly replay`` prints of a paper fly's flight (then its checks)
PAPER_FLIGHT_KEYS = (
    "seconds",
    "final_height",
    "min_height_change_body_lengths",
    "mean_lateral_drift_body_lengths",
    "stroke_cycles",
    "stroke_cycles_per_3s",
    "crashed",
)
#: the training figures ``animat fly train`` prints first, for either preset
TRAINING_KEYS = ("best_fitness", "generations", "total_crashes", "mean_seconds_per_generation")


@dataclass(frozen=True)
class Preset:
    """One fly. ``name``: ``--preset`` and config.json's ``preset``; ``about``: it in a few words (``--preset``'s
    help); ``config``: its options class (``build(file, **options)``, its runs' config.json), whose ``preset``
    field is ``name``; ``train``: ``"module:function"`` of ``train(cfg, out, *, resume, from_run, on_generation) ->
    summary``; ``load``: of ``load_for_replay(source) -> (params, genome)`` (a run directory or genome file of this
    preset); ``replay``: of ``write_replay(params, genome, seconds, out, *, anim_seconds, title) -> summary``;
    ``report``: ``"module:attribute"`` of its scene builders (:class:`animat.viz.report.SceneBuilder`, recognising
    its runs alone); ``train_keys`` / ``replay_keys``: what ``fly train`` / ``fly replay`` print (then the replay's
    checks); ``refuses``: options of ``fly train``'s command line that it has not, ``refusal``: why, in words."""

    name: str
    about: str
    config: type
    train: str
    load: str
    replay: str
    report: str
    train_keys: tuple[str, ...]
    replay_keys: tuple[str, ...]
    refuses: tuple[str, ...] = ()
    refusal: str = ""

    def trainer(self):
        return _attribute(self.train)

    def load_for_replay(self, source: Path):
        return _attribute(self.load)(source)

    def write_replay(self, *args, **kwargs) -> dict:
        return _attribute(self.replay)(*args, **kwargs)

    @property
    def builders(self) -> tuple:
        return _attribute(self.report)


PRESETS: dict[str, Preset] = {
    "paper": Preset(
        "paper",
        "the paper's fly",
        TrainConfig,
        "animat.fly.train:train",
        "animat.fly.replay:load_for_replay",
        "animat.fly.replay:write_replay",
        "animat.fly.report:BUILDERS",
        (*TRAINING_KEYS, *(f"replay_{k}" for k in PAPER_FLIGHT_KEYS)),
        PAPER_FLIGHT_KEYS,
    ),
    "drosophila": Preset(
        "drosophila",
        "the real-scale fruit fly",
        DrosophilaTrainConfig,
        "animat.fly.drosophila.train:train",
        "animat.fly.drosophila.replay:load_for_replay",
        "animat.fly.drosophila.replay:write_replay",
        "animat.fly.drosophila.report:BUILDERS",
        (
            *TRAINING_KEYS,
            "replay_wingbeat_hz",
            "replay_mechanical_power_w_per_kg",
            "replay_max_height_change_body_lengths",
            "replay_max_horizontal_drift_body_lengths",
            "replay_crashed",
        ),
        (
            "seconds",
            "body_length",
            "wingbeat_hz",
            "mean_stroke_amplitude_deg",
            "mechanical_power_w_per_kg",
            "induced_power_w_per_kg",
            "inertial_power_w_per_kg",
            "sun_tang_2002_power_w_per_kg",
            "max_height_change_body_lengths",
            "max_horizontal_drift_body_lengths",
            "crashed",
        ),
        refuses=("task", "speed", "control_ms", "asymmetric"),
        refusal="the drosophila preset trains its hover, both wings under one network that acts once per wingbeat",
    ),
}
DEFAULT = "paper"  # a run, config file or genome that names no preset is the paper's fly
FLAGS = {"asymmetric": "--asymmetric/--symmetric"}  # a command-line option whose flag is not --NAME


def _attribute(target: str):
    """The object named by a ``"module:attribute"`` string (imports the module)."""
    module, attribute = target.split(":")
    return getattr(importlib.import_module(module), attribute)


def get(name: str | None) -> Preset:
    """The preset called ``name`` (:data:`DEFAULT` for None); ConfigError (one line) naming the known ones else."""
    if name is None:
        return PRESETS[DEFAULT]
    if name not in PRESETS:
        raise ConfigError(f"--preset must be {' or '.join(PRESETS)}, got {name!r}")
    return PRESETS[name]


def select(name: str | None, config: Path | None, resume: Path | None) -> Preset:
    """The preset ``animat fly train`` runs: ``--preset NAME``, else the resumed run's (its config.json's
    ``preset``), else the config file's ``preset`` key, else :data:`DEFAULT` (a preset not in the table is left to
    the paper's options to refuse, as an unknown value of its ``preset`` option)."""
    if name is not None:
        return get(name)
    if resume is not None:
        stored = runs.read_run_config(resume, "a fly training run directory (--resume)")
        return PRESETS.get(stored.get("preset"), PRESETS[DEFAULT])
    if config is not None:
        return PRESETS.get(load_toml(config).get("preset"), PRESETS[DEFAULT])
    return PRESETS[DEFAULT]


def of_source(source: Path) -> Preset:
    """The preset whose flight ``source`` holds: a run directory's config.json ``preset``, a genome file's (its
    manifest's ``preset``), else :data:`DEFAULT` (whose loader refuses, in one line, what is neither)."""
    from animat.evolve.genome_file import load_genome  # loads JAX (its Genome): not at the command line's --help

    source = Path(source)
    if source.is_dir() and (source / "config.json").is_file():
        name = runs.read_run_config(source, "a fly training run directory").get("preset")
    elif source.is_file() and source.suffix in (".npz", ".json"):
        name = load_genome(source).extra.get("preset")
    else:
        name = None
    return PRESETS.get(name, PRESETS[DEFAULT])


def refuse_others(preset: Preset, options: dict) -> None:
    """ConfigError (one line) where the command line ``options`` (option -> value, those given) hold one that
    ``preset`` refuses (its ``refuses``: the default preset's own options)."""
    if given := [FLAGS.get(name, "--" + name.replace("_", "-")) for name in preset.refuses if name in options]:
        raise ConfigError(f"{', '.join(given)}: the {DEFAULT} preset's options; {preset.refusal}")


def help_text() -> str:
    """``--preset``'s help: every preset in a few words, where else a preset is chosen, the default."""
    names = " | ".join(f"{p.name} ({p.about})" for p in PRESETS.values())
    return f"{names[:-1]}; also set by the config file's preset key). \\[default: {DEFAULT}]"


def __getattr__(name: str):
    """``BUILDERS``: the fly system's scene builders (:mod:`animat.systems` names this module for its report), every
    preset's in table order (each recognises its own runs alone); read on first use, so that the command line's help
    imports no report module."""
    if name == "BUILDERS":
        return tuple(b for p in PRESETS.values() for b in p.builders)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
