"""Running a check: which files, which rules, linting and fixing each file, positions, suppressions, the process pool and the cache. libcst is imported only where a file is linted."""
