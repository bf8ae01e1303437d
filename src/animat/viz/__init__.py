"""Plots (PNG) and animations (GIF/MP4) for run directories; matplotlib Agg, no display needed."""

from animat.viz.animate import animate_body, box_faces, ffmpeg_available
from animat.viz.plots import (
    VizError,
    commanded_velocity_plot,
    fitness_plot,
    height_plot,
    path_views_plot,
    series_plot,
    topview_plot,
)

__all__ = [
    "VizError",
    "animate_body",
    "box_faces",
    "commanded_velocity_plot",
    "ffmpeg_available",
    "fitness_plot",
    "height_plot",
    "path_views_plot",
    "series_plot",
    "topview_plot",
]
