"""§3.4: at the hard cap every failure degrades to truncation; below it the turn just fails."""

from engine.policy.fallback import fallback


def test_the_hard_cap_truncates_and_below_it_the_turn_fails() -> None:
    assert fallback(at_hard_cap=True) == "truncate"
    assert fallback(at_hard_cap=False) == "fail"
