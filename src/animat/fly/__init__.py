"""A flapping fly whose wings a neural network drives, evolved to fly."""
