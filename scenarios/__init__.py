"""scenarios — runnable scenarios: TOML configs, the runner / CLI and report writers.

Imports go one way: ``scenarios`` → ``parties`` → ``mprr``.
"""
