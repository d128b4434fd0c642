"""The trace + outcome reward as pure functions: they live in :mod:`envkernel_kit.scoring` (shared
with ``envkernel serve``, which scores its sessions with them) and are re-exported here
unchanged."""

from envkernel_kit.scoring import (
    REL_TOL,
    call_matches,
    changes_done,
    expected_state_match,
    facts_outcome,
    match_calls,
    observed,
    score,
    state_outcome,
    table_matches,
    tau_at,
    unasked_changes,
    values_equal,
)

__all__ = [
    "REL_TOL",
    "call_matches",
    "changes_done",
    "expected_state_match",
    "facts_outcome",
    "match_calls",
    "observed",
    "score",
    "state_outcome",
    "table_matches",
    "tau_at",
    "unasked_changes",
    "values_equal",
]
