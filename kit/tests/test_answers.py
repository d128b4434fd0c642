"""The answer check: complete (every row with its value), precise (no rows not asked for), right
(numbers, order)."""

from __future__ import annotations

from envkernel_kit.answers import (
    answer_score,
    answer_units,
    facts_in_words,
    mentions,
    raw_dump,
    result_rows,
    stem,
    stuffed_answer,
)
from envkernel_schemas import Outcome

CHANNELS = Outcome(
    mutates=False,
    answer_facts=["general", "active", "random", "archived"],
    answer_rows=[["general", "active"], ["random", "archived"]],
    answer_absent=["Sam Lee"],
)


def test_each_row_is_checked_with_its_value() -> None:
    assert answer_score(CHANNELS, "general: active; random: archived.")[0] == 1.0
    assert answer_score(CHANNELS, "general is active and random is archived")[0] == 1.0
    # the set of distinct values does not answer "the status of each channel"
    assert answer_score(CHANNELS, "active, archived")[0] == 0.0
    # values paired with the wrong rows
    score, reasons = answer_score(CHANNELS, "general is archived, random is active")
    assert score == 0.0 and any("general" in r for r in reasons)
    # an answer that leaves a row out does not score 1
    assert answer_score(CHANNELS, "general: active.")[0] == 0.5


def test_an_answer_stuffed_with_other_rows_scores_0() -> None:
    score, reasons = answer_score(CHANNELS, "general: active; random: archived; owner Sam Lee")
    assert score == 0.0 and any("Sam Lee" in r for r in reasons)
    assert [u.kind for u in answer_units(CHANNELS, "x")][-1] == "precision"


def test_numbers_match_within_a_tolerance_and_never_inside_other_tokens() -> None:
    total = Outcome(mutates=False, answer_facts=["1234.5"])
    assert answer_score(total, "The total is 1,234.50.")[0] == 1.0
    assert answer_score(total, "The total is 1234.51")[0] == 0.0
    assert mentions("12", "account acc_0012 and 112") == -1
    assert mentions("12", "it has 12 items") == 7


def test_order_is_checked_when_asked_for() -> None:
    ranked = Outcome(
        mutates=False,
        answer_facts=["Desk", "3", "Lamp", "1"],
        answer_rows=[["Desk", "3"], ["Lamp", "1"]],
        answer_ordered=True,
    )
    assert answer_score(ranked, "Desk (3), Lamp (1).")[0] == 1.0
    score, reasons = answer_score(ranked, "Lamp (1), Desk (3).")
    assert 0 < score < 1 and any("order" in r for r in reasons)


def test_a_label_inside_a_longer_label_is_not_its_row() -> None:
    rows = Outcome(
        mutates=False,
        answer_facts=["sales", "active", "sales 2", "archived"],
        answer_rows=[["sales", "active"], ["sales 2", "archived"]],
    )
    assert answer_score(rows, "sales 2: archived; sales: active")[0] == 1.0
    assert answer_score(rows, "sales 2: active; sales: archived")[0] == 0.0


def test_a_value_inside_an_expected_one_is_not_said() -> None:
    o = Outcome(
        mutates=False,
        answer_facts=["sales 2"],
        answer_rows=[["sales 2"]],
        answer_absent=["sales", "general"],
    )
    assert answer_score(o, "It is sales 2.")[0] == 1.0
    assert answer_score(o, "It is sales 2, not sales.")[0] == 0.0
    assert answer_score(o, "sales 2 and general")[0] == 0.0


def test_the_rows_of_an_envelope_are_found_whatever_it_is_called() -> None:
    """The shapes besides the real specs' (``tests/test_stuffed_envelopes.py``): a named member wins
    over metadata lists, a lone list of objects is the rows, a row with an id is no envelope."""
    a, b = {"id": 1, "name": "Ann"}, {"id": 2, "name": "Bo"}
    assert result_rows([a, b, 3]) == [a, b]
    assert result_rows({"results": [a, b], "count": 2, "next": None}) == [a, b]
    assert result_rows({"data": [a, b], "errors": [{"code": "x"}]}) == [a, b]
    assert result_rows({"messages": [a, b], "has_more": False}) == [a, b]
    assert result_rows({"data": {"items": [a, b], "cursor": "c2"}}) == [a, b]
    assert (
        result_rows({"id": 7, "lines": [a, b]}) == []
    )  # one order with its lines, not a page of rows
    assert result_rows({"tags": ["x", "y"]}) == [] and result_rows("text") == []
    # a search that echoes its query is still a page; rows named like pages or links, or with a
    # page word in front (lastMessages, pageItems), are still its rows; errors never are
    assert result_rows({"results": [a, b], "query": "shoes"}) == [a, b]
    assert result_rows({"data": [a], "search_term": "x", "has_more": False}) == [a]
    assert result_rows({"pages": [a, b], "next_cursor": None}) == [a, b]
    assert result_rows({"links": [a]}) == [a]
    assert result_rows({"lastMessages": [a, b], "has_more": True}) == [a, b] and result_rows(
        {"pageItems": [a]}
    ) == [a]
    assert result_rows({"errors": [a]}) == [] and result_rows({"handle": "x", "posts": [a]}) == []
    stuffed = stuffed_answer("Bo.", [{"items": [a, b]}, b], absent=[])
    assert stuffed is not None and "Ann" in stuffed
    assert (
        answer_score(Outcome(mutates=False, answer_facts=["Bo"], answer_absent=["Ann"]), stuffed)[0]
        == 0.0
    )


def test_a_lone_number_must_be_the_number_the_answer_states() -> None:
    count = Outcome(mutates=False, answer_facts=["5"])
    assert answer_score(count, "There are 5 of them.")[0] == 1.0
    assert answer_score(count, "'Room 12' and four others: 5 in all.")[0] == 1.0  # quoted names
    # a 5 somewhere is not the count the answer states
    assert answer_score(count, "There are 4 (ids 5, 6, 7, 8).")[0] == 0.0
    assert answer_score(count, "I found nothing.")[0] == 0.0
    total = Outcome(mutates=False, answer_facts=["1234.5"])
    assert answer_score(total, "The total is 1,234.50.")[0] == 1.0


def test_raw_json_dumps_fail_whatever_they_contain() -> None:
    count = Outcome(mutates=False, answer_facts=["2"])
    dump = '[{"id": "h1", "stars": 2}, {"id": "h2", "stars": 4}]'
    assert raw_dump(dump) and raw_dump("Here you go: " + dump)
    assert answer_score(count, "2 " + dump)[0] == 0.0
    assert answer_score(CHANNELS, '{"general": "active", "random": "archived"}')[0] == 0.0
    assert not raw_dump("general: active; random: archived {sic}.")
    assert answer_score(CHANNELS, "general: active; random: archived.")[0] == 1.0


def test_text_facts_match_other_simple_word_forms() -> None:
    spec = Outcome(mutates=False, answer_facts=["dermatology"])
    assert answer_score(spec, "She is a dermatologist.")[0] == 1.0
    assert answer_score(spec, "She is a cardiologist.")[0] == 0.0
    assert stem("dermatology") == stem("dermatologists") and stem("class") == "class"
    assert mentions("pediatrics", "the pediatrician on call") >= 0
    assert facts_in_words(CHANNELS) == "Here is what I found: general: active; random: archived."


def test_a_count_said_in_words_is_the_number_it_says() -> None:
    """ "I count three of them." states 3 (an outside agent lost count tasks for writing it so); a
    pronoun "one" beside a number in digits is not read as 1."""
    from envkernel_kit.answers import find_number, stated_number

    assert stated_number("I count three of them.") == 3
    assert stated_number("There are twenty-one.") == 21
    assert stated_number("The one with the most stars has 5.") == 5
    assert stated_number("Nothing matched.") is None
    assert find_number(3.0, "Three of them are archived.") == 0
    assert find_number(1.0, "Only 2 of them.") == -1
