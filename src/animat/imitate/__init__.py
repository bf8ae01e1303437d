"""Imitation of motion clips (DeepMimic-style): clips, a humanoid3d character in MuJoCo, rewards."""
