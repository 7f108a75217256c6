"""retainlint's rules, found by `retainlint.engine.registry`: one module per rule
(`rlNNN_<name>.py`: its detection, documentation, examples and fix), holding its
prefilter from `prefilters/rlNNN.py` (code, trigger tokens and structural scan; never
imports libcst). Installed as `retainlint.rules` (see pyproject.toml). Adding a rule:
see CONTRIBUTING.md, or `python -m retainlint.scaffold RL9xx name`."""
