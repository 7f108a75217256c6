"""The shared definitions of the levels (retainlint/analysis/severity.py): what a rule knows
about a finding's cost decides its severity, the same way for every rule."""

import pytest

from retainlint.analysis.severity import Facts, level
from retainlint.core.finding import Severity


@pytest.mark.parametrize("facts, expected", [
    # heavy or growing, and meant to go away: the defeated release of a model, a cache per request
    (Facts(heavy=True, meant_to_go=True), Severity.ERROR),
    (Facts(heavy=False, grows=True, meant_to_go=True), Severity.ERROR),
    # a cost, but nothing shows the object was meant to go (or the reverse): bounded or unproven
    (Facts(heavy=True), Severity.WARNING),
    (Facts(grows=True), Severity.WARNING),
    (Facts(meant_to_go=True), Severity.WARNING),
    (Facts(), Severity.WARNING),
    # negligible: light and bounded, kept no longer than it lives anyway, or collected in time
    (Facts(heavy=False, grows=False, meant_to_go=True), Severity.INFO),
    (Facts(heavy=True, grows=True, meant_to_go=False), Severity.INFO),
    (Facts(heavy=True, collected=True), Severity.INFO),
    (Facts(heavy=False, meant_to_go=True, collected=True), Severity.INFO),
    # a cycle through a model its owner drops to free it: it waits for a collection, which
    # the bytes it pins do not trigger
    (Facts(heavy=True, meant_to_go=True, collected=True), Severity.WARNING),
])
def test_level_follows_the_consequence(facts, expected):
    assert level(facts) is expected
