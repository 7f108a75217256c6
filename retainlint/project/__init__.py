"""The project index (one `ast` pass over every file) and the rules' prefilters' base and facts. Never imports libcst: deciding which files to parse must not load it."""
