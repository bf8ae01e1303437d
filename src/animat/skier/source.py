"""Another skier run as the start of a new one (``--from``, :func:`animat.evolve.start.plan`'s ``read_source``):
the keyframe GA starts from the source's final population (its last checkpoint: same population size and gene
shape), an evolution strategy centres its first distribution on the source's best skier (``best_gene.json``).
A skier evolved on the flat goes on up a slope or across moguls this way, with any new terrain, fitness and GA
settings. NumPy only."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from animat import runs
from animat.errors import ConfigError
from animat.evolve import loop
from animat.evolve.strategies.keyframe_ga import KeyframeGA
from animat.skier import ga
from animat.skier.gene import load_gene_json
from animat.skier.options import TrainConfig


def _final_population(cfg: TrainConfig, source: Path) -> tuple[np.ndarray, dict]:
    """Genes ``(P, n, m)`` of ``source``'s last checkpoint and the ``from`` record; ConfigError (one line) unless
    they have ``cfg``'s population and gene shape."""
    state, _ = loop.load(source, KeyframeGA)
    genes = np.asarray(state.strategy.genes)
    want = (cfg.population, cfg.n_states, cfg.n_joints)
    if genes.shape != want:
        raise ConfigError(
            f"--from {str(source)!r}: its population is {genes.shape[0]} skiers of {genes.shape[1]} states × "
            f"{genes.shape[2]} joints, this run's {want[0]} of {want[1]} × {want[2]} (give --population "
            f"{genes.shape[0]} and the same states and hip)"
        )
    return genes, {"path": str(source), "generation": int(state.generation)}


def _best_centre(cfg: TrainConfig, source: Path) -> tuple[np.ndarray, dict]:
    """The evolution strategy's first centre ``(n/2 · m,)``: the first half of ``source``'s best gene in the
    strategy's units (:func:`animat.skier.ga.decode` gives the gene back), and the ``from`` record."""
    path = source / "best_gene.json"
    if not path.is_file():
        raise ConfigError(f"--from {str(source)!r} with --strategy {cfg.strategy}: it holds no best_gene.json")
    gene, _ = load_gene_json(path, cfg.n_states, cfg.n_joints)
    summary = runs.read_json(source / "summary.json") if (source / "summary.json").is_file() else {}
    centre = gene[: cfg.n_states // 2].reshape(-1).astype(np.float32) / ga.ES_UNIT_DEG
    return centre, {"path": str(source), "generation": int(summary.get("generations", 0))}


def read_source(cfg: TrainConfig, source: Path) -> tuple[np.ndarray, dict]:
    """What run ``cfg`` starts from in ``--from`` run ``source`` and the ``from`` record; ConfigError (one line)
    for a directory that is not a skier training run or does not fit ``cfg``."""
    source = Path(source)
    stored = runs.read_run_config(source, "a skier training run directory (--from)")
    if stored.get("system", "skier") != "skier" or "friction" not in stored:
        raise ConfigError(f"--from {str(source)!r}: it is not a skier training run")
    return (_final_population if cfg.strategy == "keyframe_ga" else _best_centre)(cfg, source)
