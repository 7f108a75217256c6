"""retainlint's rules: one module per rule, found by `retainlint.registry`.

Installed as `retainlint.rules` (see pyproject.toml); adding a rule means adding one
module here (plus fixtures), nothing else."""
