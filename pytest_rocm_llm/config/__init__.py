"""suite.toml and run settings, read once into frozen objects; no pytest, no HTTP.

suite (model, engine, server profiles, per-target overrides) · workload · evals ·
toml (typed reads whose errors name the file and the dotted key) · settings (command line >
ini > environment > default) · targets (what a node is). Errors are ``ConfigError``.
"""
