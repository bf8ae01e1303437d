"""Steering the fly by command: the commands and random scripts (:mod:`.commands`), the command frame and the
steering tick (:mod:`.tracking`), the steering set's files as dataclasses (:mod:`.steering_set`), loading a set and
its pilot (:mod:`.pilot`), the lookahead among
alternates (:mod:`.lookahead`), the score of a flight (:mod:`.score`), the goal network's distillation
(:mod:`.distill`), the set's training (:mod:`.train`), a steered flight's run directory (:mod:`.run`) and the
interactive loop (:mod:`.live`)."""
