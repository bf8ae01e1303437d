"""Errors a user can cause. The CLI prints them as one line and exits with status 2."""


class AnimatError(Exception):
    """Base class: bad input, a bad file or an impossible request, with a message naming the value."""


class ConfigError(AnimatError):
    """A configuration value, option or file is invalid."""


class CheckpointError(AnimatError):
    """A checkpoint is missing, corrupt or does not match what was asked for."""


class RunDirError(AnimatError):
    """A run directory cannot be created or would overwrite an earlier run."""


class CheckpointWarning(UserWarning):
    """A damaged checkpoint was passed over for the newest older one that verifies (the CLI prints it as one line)."""
