"""suite.toml and run settings, read once into frozen objects; no pytest, no HTTP.

suite (reading suite.toml) and suite_model (the suite as data: model, engine, server
profiles, per-target overrides) · workload · checks (a check's table and declared gate) ·
evals · context_limits (long-context lengths against the profiles' flags) · toml (pydantic
table models; errors name the file and the dotted key) · fields (shared field types) ·
settings (command line > ini > environment > default) · builds (incumbent and candidate
builds of a paired run) · targets (what a node is). Errors are ``ConfigError``.
"""
