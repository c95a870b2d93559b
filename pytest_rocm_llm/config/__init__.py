"""suite.toml and run settings, read once into frozen objects; no pytest, no HTTP.

suite (model, engine, server profiles, per-target overrides) · workload · evals · checks'
tables live with their kinds · toml (pydantic table models; errors name the file and the
dotted key) · fields (shared field types) · settings (command line > ini > environment >
default) · builds (baseline and candidate builds of a paired run) · targets (what a node
is). Errors are ``ConfigError``.
"""
