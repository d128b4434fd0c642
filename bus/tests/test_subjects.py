"""Subject names and event ids on the wire (pure functions, no server)."""

from __future__ import annotations

import pytest

from envkernel_bus.subjects import (
    EVENTS_PREFIX,
    SERVICES_PREFIX,
    event_subject,
    kind_filter,
    parse_event_subject,
    sandbox_open_subject,
)


def test_an_event_subject_names_its_run_kind_and_target_plugin() -> None:
    assert event_subject("r1", "task.proposed") == f"{EVENTS_PREFIX}.r1.task.proposed"
    assert event_subject("r1", "task.proposed", "chains").endswith(".task.proposed.chains")
    assert parse_event_subject(event_subject("r1", "rollout.scored", "gate")) == (
        "r1",
        "rollout.scored.gate",
    )


def test_a_filter_spans_every_run_unless_given_one() -> None:
    assert kind_filter("env.synthesized") == f"{EVENTS_PREFIX}.*.env.synthesized"
    assert kind_filter("env.synthesized", run="r9").startswith(f"{EVENTS_PREFIX}.r9.")


@pytest.mark.parametrize(
    "subject", ["", "envk.ev", "envk.ev.r1", "other.ev.r1.kind", "envk.svc.x.y"]
)
def test_a_subject_that_is_not_an_event_subject_is_refused_with_itself_named(subject: str) -> None:
    with pytest.raises(ValueError, match="not an envkernel event subject"):
        parse_event_subject(subject)


def test_services_are_outside_the_event_stream() -> None:
    assert sandbox_open_subject("process").startswith(SERVICES_PREFIX + ".")
    assert not sandbox_open_subject("process").startswith(EVENTS_PREFIX)
