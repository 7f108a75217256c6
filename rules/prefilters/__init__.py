"""Each rule's prefilter (`rlNNN.py` for the rule `rules/rlNNN_<name>.py`): its trigger
tokens and structural scan, importable without libcst."""
