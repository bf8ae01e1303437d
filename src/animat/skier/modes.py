"""The skier's model variants, named where both its options (:mod:`animat.skier.options`) and its MuJoCo
model (:mod:`animat.skier.model`) read them."""

FRICTION_MODES = ("anisotropic", "isotropic")  # of the skis on the plane (animat.skier.model)
HIP_MODES = ("one-axis", "two-axis")  # one tilted hinge (the original) | vertical and forward hinges
TERRAINS = ("flat", "slope", "moguls")  # the ground (animat.skier.terrain)
