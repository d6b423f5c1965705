"""Field-level trust, required sources (ARH-PRV-002) and per-sink minimum lengths in the
provenance section: parsing, the matching of whole token runs, where a value came from in the
findings, and the runtime monitor deciding each value before the call as offline validation does.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_reliability_harness import InputError, Policy, Trace, validate_trace
from agent_reliability_harness.rules._taint import (
    KEYS,
    MARK,
    Corpus,
    GrowingCorpus,
    first_occurrences,
    mark,
)
from test_monitor import equivalence_problems

from conftest import ROOT

FIXTURES = sorted(
    path
    for rule in ("ARH-PRV-001", "ARH-PRV-002")
    for path in (ROOT / "tests" / "rules" / rule).glob("*.json")
)


def _case(name: str) -> dict[str, Any]:
    rule, stem = name.split("/")
    path = ROOT / "tests" / "rules" / rule / f"{stem}.json"
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def _findings(case: dict[str, Any]) -> list[Any]:
    report = validate_trace(Trace.from_dict(case["trace"]), Policy.from_dict(case["policy"]))
    return list(report.findings)


# --- whole token runs ----------------------------------------------------------------------


def bounded(value: str, text: str) -> bool:
    """The definition: ``value`` occurs in ``text`` starting and ending at positions that are
    not inside a run of alphanumeric characters."""

    def cut(at: int) -> bool:
        return at in (0, len(text)) or not (text[at - 1].isalnum() and text[at].isalnum())

    return any(
        text.startswith(value, at) and cut(at) and cut(at + len(value))
        for at in range(len(text) - len(value) + 1)
    )


ALPHABET = "ab1 -.\u00e9\u0661_\n"


@settings(max_examples=500, deadline=None)
@given(
    value=st.text(alphabet=ALPHABET, min_size=1, max_size=4), text=st.text(ALPHABET, max_size=14)
)
def test_marked_search_finds_exactly_the_bounded_occurrences(value: str, text: str) -> None:
    assert (mark(value) in mark(text)) == bounded(value, text)
    # and inside a corpus: NUL between texts, nothing found across them
    corpus = Corpus(mark)
    corpus.add(0, [text, value[::-1]])
    offsets = first_occurrences(corpus.text(), [mark(value)])
    assert (offsets[0] >= 0) == (bounded(value, text) or bounded(value, value[::-1]))


def test_token_matching_examples() -> None:
    token = KEYS["token"]
    assert token("13") not in token("notes from 2013")
    assert token("13") in token("file 13.")
    assert token("CH93 0076") in token("iban: ch93   0076 2011")
    assert token("CH930076") not in token("iban: ch93 0076")
    assert token("-13") in token("x--13")
    assert mark("Q3-Report") not in mark("q3-report (final)")
    # the marker in a text is a space first, so it cannot stand for a cut that is not there
    assert token("a\x01b") == token("a b") == f"{MARK}a{MARK} {MARK}b{MARK}"


@settings(max_examples=200, deadline=None)
@given(
    parts=st.lists(
        st.lists(st.text(alphabet="ab \u00e9", max_size=5), min_size=1, max_size=3),
        min_size=1,
        max_size=4,
    ),
    needle=st.text(alphabet="ab\u00e9", min_size=1, max_size=3),
)
def test_growing_corpus_labels_equal_the_corpus_labels(parts: list[list[str]], needle: str) -> None:
    offline, online = Corpus(), GrowingCorpus()
    for position, texts in enumerate(parts):
        labels = [f"{position}:{i}" for i in range(len(texts))]
        offline.add(position, texts, labels)
        online.add(position, texts, labels)
    offset = first_occurrences(offline.text(), [needle])[0]
    expected = offline.locate(offset) if offset >= 0 else (-1, None)
    assert online.first_located(needle) == expected
    if offset >= 0:  # by hand: the first text (in order) that holds it
        position, label = expected
        assert label is not None
        index = int(label.split(":")[1])
        assert needle in parts[position][index].casefold()


# --- parsing -----------------------------------------------------------------------------------


BASE: dict[str, Any] = {
    "schema_version": "1.1",
    "policy_id": "p",
    "allow_unlisted_tools": True,
    "provenance": {
        "untrusted": {"tools": ["get_transactions"]},
        "sinks": [{"tool": "send_money", "argument": "recipient"}],
    },
}


def _with(**section: Any) -> dict[str, Any]:
    data = copy.deepcopy(BASE)
    data["provenance"].update(section)
    return data


def _sink(**extra: Any) -> dict[str, Any]:
    return _with(sinks=[{"tool": "send_money", "argument": "recipient", **extra}])


FIELD = {"tool": "get_transactions", "pattern": "recipient: (?P<value>\\S+)", "trust": "trusted"}


@pytest.mark.parametrize(
    ("document", "pointer", "words"),
    [
        (_with(fields=[]), "/provenance/fields", "non-empty array"),
        (_with(fields=[{**FIELD, "trust": "maybe"}]), "/provenance/fields/0/trust", "maybe"),
        (
            _with(fields=[{k: v for k, v in FIELD.items() if k != "trust"}]),
            "/provenance/fields/0",
            "'trust'",
        ),
        (
            _with(fields=[{**FIELD, "pattern": "recipient: (\\S+)"}]),
            "/provenance/fields/0/pattern",
            "value",
        ),
        (_with(fields=[{**FIELD, "pointer": "/x"}]), "/provenance/fields/0", "not both"),
        (_with(fields=[{**FIELD, "colour": 1}]), "/provenance/fields/0/colour", "unknown key"),
        (
            _with(
                fields=[FIELD, {"tool": "get_transactions", "pointer": "/x", "trust": "untrusted"}]
            ),
            "/provenance/fields/1",
            "mix pointers and patterns",
        ),
        (_sink(min_value_length=0), "/provenance/sinks/0/min_value_length", ">= 1"),
        (_sink(require={}), "/provenance/sinks/0/require", "'sources'"),
        (_sink(require={"sources": ["web"]}), "/provenance/sinks/0/require/sources/0", "web"),
        (
            _sink(require={"sources": ["user", "user"]}),
            "/provenance/sinks/0/require/sources/1",
            "twice",
        ),
        (_sink(require={"sources": ["policy"]}), "/provenance/sinks/0/require", "'values'"),
        (
            _sink(require={"sources": ["user"], "values": ["x"]}),
            "/provenance/sinks/0/require/sources",
            "'policy'",
        ),
        (
            _sink(require={"sources": ["policy"], "values": [" "]}),
            "/provenance/sinks/0/require/values/0",
            "whitespace",
        ),
        (
            _sink(require={"sources": ["user"], "match": "fuzzy"}),
            "/provenance/sinks/0/require/match",
            "fuzzy",
        ),
    ],
)
def test_invalid_fields_and_sinks_name_the_field(document: Any, pointer: str, words: str) -> None:
    with pytest.raises(InputError) as caught:
        Policy.from_dict(document)
    assert caught.value.pointer == pointer
    assert words in caught.value.message


def test_canonical_form_is_unchanged_without_the_new_keys_and_round_trips_with_them() -> None:
    plain = Policy.from_dict(BASE).to_dict()["provenance"]
    assert "fields" not in plain
    assert set(plain["sinks"][0]) == {"tool", "argument"}
    full = _with(
        fields=[{**FIELD, "description": "the recipient line"}],
        sinks=[
            {
                "tool": "send_money",
                "argument": "recipient",
                "min_value_length": 4,
                "require": {"sources": ["user", "policy"], "values": ["GB33"]},
            }
        ],
    )
    section = Policy.from_dict(full).to_dict()["provenance"]
    assert section["fields"] == [{**FIELD, "description": "the recipient line"}]
    assert section["sinks"][0]["require"] == {
        "sources": ["user", "policy"],
        "values": ["GB33"],
        "match": "token",
    }
    again = Policy.from_dict({**full, "provenance": section})
    assert again.to_dict()["provenance"] == section


# --- behaviour ---------------------------------------------------------------------------------


def test_trusted_field_clears_only_what_it_selects() -> None:
    case = _case("ARH-PRV-001/pass_value_from_trusted_field")
    assert _findings(case) == []
    without = copy.deepcopy(case)
    del without["policy"]["provenance"]["fields"]
    assert [f.rule_id for f in _findings(without)] == ["ARH-PRV-001"]


def test_finding_says_where_in_a_cut_output_the_value_was() -> None:
    (finding,) = _findings(_case("ARH-PRV-001/raise_value_imitating_a_trusted_field"))
    assert finding.message.endswith(
        "first appeared in the untrusted output of step 's1' (get_transactions, #2) outside "
        "the trusted fields; no user message or trusted output before this call contains it"
    )
    assert finding.observed == (
        "\"us133000000121212121212\" from the output of step 's1' (get_transactions, #2) "
        "outside the trusted fields"
    )
    (finding,) = _findings(_case("ARH-PRV-001/raise_untrusted_field_of_a_trusted_tool"))
    assert "(get_payments, #1) at /payments/0/memo;" in finding.message


def test_the_first_listed_field_wins_where_fields_overlap() -> None:
    case = _case("ARH-PRV-001/pass_value_from_trusted_field")
    broad = {
        "tool": "get_transactions",
        "pattern": "(?P<value>[A-Z]{2}\\d{10,})",
        "trust": "untrusted",
    }
    fields = case["policy"]["provenance"]["fields"]
    case["policy"]["provenance"]["trusted_tools"] = ["get_transactions"]
    case["policy"]["provenance"]["untrusted"] = {"tools": ["read_inbox"]}
    case["policy"]["provenance"]["fields"] = [*fields, broad]  # the trusted field first: clean
    assert _findings(case) == []
    case["policy"]["provenance"]["fields"] = [broad, *fields]  # the untrusted one first
    (finding,) = _findings(case)
    assert finding.rule_id == "ARH-PRV-001"
    assert "in a value of the untrusted field" in finding.message


def test_a_value_is_reported_once_and_by_prv_002_when_prv_001_is_off() -> None:
    case = _case("ARH-PRV-002/raise_made_up_or_reformatted_values")
    assert sorted(f.rule_id for f in _findings(case)) == [
        "ARH-PRV-001",
        "ARH-PRV-002",
        "ARH-PRV-002",
    ]
    case["policy"]["rules"] = {"ARH-PRV-001": "off"}
    found = _findings(case)
    assert [f.rule_id for f in found] == ["ARH-PRV-002"] * 3
    assert found[2].observed == (
        "\"fr7630006000011234567890189\": appears only in the untrusted output of step 's1' "
        "(read_inbox, #2)"
    )


def test_the_sinks_minimum_overrides_the_sections() -> None:
    case = _case("ARH-PRV-001/raise_short_value_with_the_sinks_own_minimum")
    assert [(f.rule_id, f.step_id) for f in _findings(case)] == [("ARH-PRV-001", "s2")]
    del case["policy"]["provenance"]["sinks"][0]["min_value_length"]
    assert _findings(case) == []


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_the_monitor_decides_before_the_call_as_offline(path: Path) -> None:
    case = json.loads(path.read_text(encoding="utf-8"))
    fired: set[str] = set()
    problems = equivalence_problems(
        Policy.from_dict(case["policy"]), Trace.from_dict(case["trace"]), fired=fired
    )
    assert problems == []
    assert (path.parent.name in fired) == path.stem.startswith("raise")
