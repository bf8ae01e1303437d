"""Search strategies over an immutable state, evosax-style: ``init(key) -> state``,
``ask(state) -> (genomes, state)``, ``tell(state, fitness) -> state`` (see :mod:`.base`).

- :mod:`.paper_ga`: the paper's network GA (flat network weights, JAX operators);
- :mod:`.keyframe_ga`: the slides' GA over keyframe genes (NumPy, the gene layout as a parameter).

Import the one you need: this package imports neither (the keyframe GA must not load JAX).
"""
