"""retainlint's rules: one module per rule, found by `retainlint.engine.registry`.

Installed as `retainlint.rules` (see pyproject.toml); adding a rule means adding one
module here (plus fixtures), nothing else."""
