"""The plain model every layer shares: findings, settings, errors, reading and writing files. No libcst."""
