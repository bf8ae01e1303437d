"""Subspace neural physics (Holden et al., SCA 2019): cloth data from MuJoCo, PCA subspace,
alpha/beta damping baseline and a residual network trained through rollouts."""
