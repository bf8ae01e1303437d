"""Neuroevolution engine: vectorised MLPs, genomes, the genetic algorithm, checkpoints, evaluation."""
