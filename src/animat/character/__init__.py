"""The humanoid every system that needs one shares: DeepMimic's humanoid3d skeleton and its MuJoCo model
(:mod:`~animat.character.model`), motion clips in DeepMimic's format — reading, validation and playback at any
time (:mod:`~animat.character.clip`) —, a built-in demo clip (:mod:`~animat.character.demo`) and kinematic
playback of chained clips with blends, heading changes and speeds (:mod:`~animat.character.playback`).
No system owns it; it imports none."""
