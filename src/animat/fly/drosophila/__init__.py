"""The real-scale fruit fly (preset ``drosophila``): quasi-steady wing aerodynamics in SI units and a
wingbeat pattern generator the network drives once per beat."""
