"""The ways in from outside: the GitHub Action and git (changed lines)."""
