"""A humanoid on skis with poles that learns to ski forward by a GA over keyframed joint angles (issue 4)."""
