"""Limits more than one part of RL602 shares: how deep it follows chains (bases,
assignments, methods reached), and the release methods that are dunders."""

# Release methods that cannot be called from a fix (they need arguments or run anyway).
_DUNDER_RELEASE = frozenset({"__del__", "__exit__", "__aexit__"})
_MAX_DEPTH = 8
