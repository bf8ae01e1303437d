"""``animat play SYSTEM SOURCE``: steer a system live from a web page (the shared part; no system imported).

:mod:`animat.play.session` says what a system's live session provides, :mod:`animat.play.protocol` reads the
page's messages, :mod:`animat.play.pacing` keeps simulated time on wall time, :mod:`animat.play.server` serves
the page (``web/``) and its WebSocket on this machine only and writes the run directory when the play ends.
"""
