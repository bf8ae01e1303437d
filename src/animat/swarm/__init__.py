"""Multi-agent swarms: consensus and Van Loan schemes (linear), Olfati-Saber flocking (JAX), metrics, CLI."""
