"""Findings as text for people and as JSON, GitHub workflow commands and SARIF for machines."""
