"""Search strategies over an immutable state, evosax-style: ``init(key) -> state``,
``ask(state) -> (genomes, state)``, ``tell(state, fitness) -> state`` (see :mod:`.base`).

- :mod:`.paper_ga`: the paper's network GA (flat network weights, JAX operators);
- :mod:`.keyframe_ga`: the slides' GA over keyframe genes (NumPy, the gene layout as a parameter);
- :mod:`.evosax_es`: evolution strategies of evosax (CMA-ES, SNES, OpenAI-ES) over a flat vector, decoded to genomes.

Import the one you need: this package imports none (the keyframe GA must not load JAX).
"""

#: the ``--strategy`` names of :mod:`.evosax_es` (here, so that a system can check a name without loading JAX)
EVOLUTION_STRATEGIES = ("cma_es", "snes", "open_es")
