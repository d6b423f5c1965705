"""The extraction of values from tool outputs (model/_extract.py): a JSON pointer with wildcards,
or a pattern with a named group ``value``; the values with where each came from, and the cut of
an output's texts into the selected part and the rest."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_reliability_harness import InputError
from agent_reliability_harness.errors import join_pointer
from agent_reliability_harness.model._extract import Extract, Found, Piece, cut, output_texts
from agent_reliability_harness.model.policy._context import Context


def parse(raw: dict[str, Any], base: str = "/provenance/fields/0") -> Extract:
    return Extract.parse(raw, base, Context({}, allow_unlisted=True))


def error(raw: dict[str, Any]) -> tuple[str, str]:
    with pytest.raises(InputError) as caught:
        parse(raw)
    return caught.value.pointer or "", str(caught.value)


# --- parsing ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "pointer", "words"),
    [
        ({"pointer": "/a", "pattern": "(?P<value>a)"}, "/provenance/fields/0", "not both"),
        ({}, "/provenance/fields/0", "missing field 'pointer'"),
        ({"pointer": "a/b"}, "/provenance/fields/0/pointer", "must be a JSON pointer"),
        ({"pointer": 3}, "/provenance/fields/0/pointer", "got number"),
        ({"pointer": "/a~2"}, "/provenance/fields/0/pointer", "~"),
        ({"pattern": "recipient: (\\S+)"}, "/provenance/fields/0/pattern", "no group named"),
        ({"pattern": "(?P<key>\\w+): (?P<value>\\S+)"}, "/provenance/fields/0/pattern", "key"),
        ({"pattern": "(?P<value>a"}, "/provenance/fields/0/pattern", "invalid regular"),
        ({"pattern": "(?P<value>a*)"}, "/provenance/fields/0/pattern", "empty string"),
        ({"pattern": "^(?P<value>)"}, "/provenance/fields/0/pattern", "empty string"),
        ({"pattern": ""}, "/provenance/fields/0/pattern", "non-empty regular expression"),
        ({"pattern": ["x"]}, "/provenance/fields/0/pattern", "got array"),
    ],
)
def test_parse_errors_name_the_field(raw: dict[str, Any], pointer: str, words: str) -> None:
    where, message = error(raw)
    assert where == pointer
    assert words in message


def test_parse_and_canonical_form() -> None:
    by_pointer = parse({"pointer": "/transactions/*/recipient", "tool": "ignored"})
    assert by_pointer.pointer is not None
    assert by_pointer.regex is None
    assert by_pointer.to_dict() == {"pointer": "/transactions/*/recipient"}
    assert by_pointer.describe() == "pointer /transactions/*/recipient"
    by_pattern = parse({"pattern": "^recipient: (?P<value>\\S+)$"})
    assert by_pattern.to_dict() == {"pattern": "^recipient: (?P<value>\\S+)$"}
    assert by_pattern.regex is not None
    assert by_pattern.regex.flags & re.MULTILINE
    assert not by_pattern.regex.flags & re.IGNORECASE
    # the pattern is compared, not the compiled regex
    assert by_pattern == parse({"pattern": "^recipient: (?P<value>\\S+)$"})
    assert parse({"pointer": ""}).describe() == "pointer ''"


def test_risky_patterns_are_collected_for_the_backtracking_check() -> None:
    context = Context({}, allow_unlisted=True)
    Extract.parse({"pattern": "(?P<value>(a+)+)b"}, "/x", context)
    assert context.patterns == [("/x/pattern", "(?P<value>(a+)+)b", re.MULTILINE)]


# --- extraction -------------------------------------------------------------------------------

YAML = """- amount: 100.0
  id: 1
  recipient: CH9300762011623852957
  subject: Pizza party
- amount: 50.0
  id: 2
  recipient: GB29NWBK60161331926819
  subject: 'Note
    recipient: XX00ATTACKER0000'
"""
RECIPIENT = "^\\s*(?:- )?recipient: (?P<value>\\S+)$"
STRICT = "^(?:- |  )recipient: (?P<value>\\S+)$"


def test_pattern_on_yaml_like_text_is_line_anchored() -> None:
    strict = parse({"pattern": STRICT})
    found = strict.find(YAML)
    assert [f.value for f in found] == ["CH9300762011623852957", "GB29NWBK60161331926819"]
    start = YAML.index("CH93")
    assert found[0] == Found("CH9300762011623852957", "", (start, start + 21))
    assert found[0].describe() == f"at characters {start}-{start + 21}"
    # The attacker's line continues a quoted subject, so YAML indents it by four. A pattern that
    # allows any indentation takes it as a recipient: a limit of patterns over YAML text, which
    # the field's exact indentation (STRICT) avoids.
    loose = parse({"pattern": RECIPIENT})
    assert [f.value for f in loose.find(YAML)][-1] == "XX00ATTACKER0000'"


def test_pattern_on_structured_output_searches_each_string() -> None:
    extract = parse({"pattern": "id=(?P<value>\\d+)"})
    output = {"a": "x id=12 y id=345", "b": [{"id=9": "id=77"}], "n": 5}
    found = extract.find(output)
    assert found == [
        Found("12", "/a", (5, 7)),
        Found("345", "/a", (13, 16)),
        Found("77", "/b/0/id=9", (3, 5)),
    ]
    assert found[2].describe() == "at /b/0/id=9 characters 3-5"


def test_pattern_on_json_text_sees_the_text_as_returned() -> None:
    extract = parse({"pattern": '"iban": "(?P<value>[^"]+)"'})
    output = json.dumps({"iban": "DE89370400440532013000", "note": "x"})
    assert [f.value for f in extract.find(output)] == ["DE89370400440532013000"]


def test_pointer_with_wildcards() -> None:
    extract = parse({"pointer": "/transactions/*/recipient"})
    data = {
        "transactions": [
            {"recipient": "CH93", "subject": "a"},
            {"subject": "no recipient"},
            {"recipient": 12345, "subject": "b"},
        ]
    }
    expected = [
        Found("CH93", "/transactions/0/recipient"),
        Found(12345, "/transactions/2/recipient"),
    ]
    assert extract.find(data) == expected
    assert extract.find(json.dumps(data)) == expected  # JSON text is read as data
    assert expected[0].describe() == "at /transactions/0/recipient"
    assert parse({"pointer": ""}).find("plain text") == [Found("plain text", "")]
    assert Found("plain text", "").describe() == "in the whole output"
    assert extract.find("not json") == []
    assert extract.find(None) == []


def test_pointer_split_takes_whole_subtrees_and_keys_of_selected_objects() -> None:
    extract = parse({"pointer": "/items/*/payee"})
    data = {"items": [{"payee": {"name": "Ann", "iban": "DE1"}, "memo": "pay XX"}]}
    selected, rest = extract.split(data)
    assert selected == [
        Piece("/items/0/payee/name", 0, "name"),
        Piece("/items/0/payee/iban", 0, "iban"),
        Piece("/items/0/payee/name", 0, "Ann"),
        Piece("/items/0/payee/iban", 0, "DE1"),
    ]
    assert rest == [
        Piece("/items", 0, "items"),
        Piece("/items/0/payee", 0, "payee"),
        Piece("/items/0/memo", 0, "memo"),
        Piece("/items/0/memo", 0, "pay XX"),
    ]


def test_pattern_split_cuts_spans_out() -> None:
    extract = parse({"pattern": "to (?P<value>\\w+)"})
    selected, rest = extract.split("pay to Ann and to Bob.")
    assert selected == [Piece("", 7, "Ann"), Piece("", 18, "Bob")]
    assert rest == [Piece("", 0, "pay to "), Piece("", 10, " and to "), Piece("", 21, ".")]
    # object keys are not searched: they belong to the rest
    selected, rest = extract.split({"to Ann": "to Bob"})
    assert selected == [Piece("/to Ann", 3, "Bob")]
    assert rest == [Piece("/to Ann", 0, "to Ann"), Piece("/to Ann", 0, "to ")]


def test_value_spans_in_lookarounds_never_overlap() -> None:
    extract = parse({"pattern": "a(?=(?P<value>aa))"})
    # matches at 0 and 1 both see a value; the second starts inside the first and is skipped
    assert [f.span for f in extract.find("aaaa")] == [(1, 3)]


def test_a_value_group_that_does_not_take_part_gives_nothing() -> None:
    extract = parse({"pattern": "id(?::(?P<value>\\d+))?;"})
    assert [f.value for f in extract.find("id; id:42;")] == ["42"]


# --- properties -------------------------------------------------------------------------------

PATTERNS = [
    "(?P<value>\\d+)",
    "^ ?(?P<value>[a-c]+)$",
    "k: (?P<value>\\S+)",
    "x(?P<value>y)?z",
    "(?:a|b)(?P<value>[ab]{2})",
]
TEXT = st.text(alphabet="abcxyzk: 0123\n", max_size=40)


@settings(max_examples=300, deadline=None)
@given(pattern=st.sampled_from(PATTERNS), text=TEXT)
def test_selected_and_rest_partition_each_text(pattern: str, text: str) -> None:
    extract = parse({"pattern": pattern})
    selected, rest = extract.split(text)
    pieces = sorted(selected + rest, key=lambda piece: piece.start)
    assert "".join(piece.text for piece in pieces) == text
    assert all(piece.text for piece in pieces)
    position = 0
    for piece in pieces:  # contiguous and disjoint
        assert piece.start == position
        position += len(piece.text)
    # the selected pieces are exactly the values found, and match a naive search of the spans
    assert [(p.text, p.start) for p in selected] == [
        (f.value, f.span[0]) for f in extract.find(text) if f.span is not None
    ]
    naive = [
        m.span("value")
        for m in re.finditer(pattern, text, re.MULTILINE)
        if m.start("value") < m.end("value")
    ]
    assert [(p.start, p.start + len(p.text)) for p in selected] == naive


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.text(alphabet="ab", max_size=3),
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(st.text(alphabet="ab*", max_size=2), children, max_size=3)
    ),
    max_leaves=12,
)
SEGMENTS = st.lists(st.sampled_from(["a", "b", "*", "0", "1", "ab"]), max_size=3)


def naive_locations(value: Any, segments: list[str], path: tuple[str, ...] = ()) -> list[Any]:
    """Every (path, value) whose path matches ``segments``, by a plain recursive walk."""
    if not segments:
        return [(path, value)]
    head, tail = segments[0], segments[1:]
    found: list[Any] = []
    if isinstance(value, dict):
        for key, child in value.items():
            if head in ("*", key):
                found.extend(naive_locations(child, tail, (*path, key)))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            if head in ("*", str(index)):
                found.extend(naive_locations(child, tail, (*path, str(index))))
    return found


def naive_texts(value: Any, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], str, bool]]:
    """(path, text, is_key) of every non-empty string and key, recursively."""
    if isinstance(value, str):
        return [(path, value, False)] if value else []
    out: list[Any] = []
    if isinstance(value, dict):
        out.extend(((*path, key), key, True) for key in value if key)
        for key, child in value.items():
            out.extend(naive_texts(child, (*path, key)))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            out.extend(naive_texts(child, (*path, str(index))))
    return out


@settings(max_examples=300, deadline=None)
@given(value=JSON_VALUES, segments=SEGMENTS, as_text=st.booleans())
def test_pointer_extraction_equals_a_naive_walk(
    value: Any, segments: list[str], as_text: bool
) -> None:
    pointer = join_pointer("", *segments)
    extract = parse({"pointer": pointer})
    output = json.dumps(value) if as_text and isinstance(value, (dict, list)) else value
    expected = naive_locations(value, segments)
    assert [(f.pointer, f.value) for f in extract.find(output)] == [
        (join_pointer("", *path), found) for path, found in expected
    ]
    chosen = {path for path, _ in expected}

    def inside(path: tuple[str, ...], is_key: bool) -> bool:
        # the key naming a member belongs to the object that holds it
        owner = path[:-1] if is_key else path
        return any(owner[: len(c)] == c for c in chosen)

    texts = naive_texts(value)
    selected, rest = extract.split(output)
    by_text = lambda pieces: sorted((p.pointer, p.text) for p in pieces)  # noqa: E731
    assert by_text(selected) == sorted(
        (join_pointer("", *path), text) for path, text, key in texts if inside(path, key)
    )
    assert by_text(rest) == sorted(
        (join_pointer("", *path), text) for path, text, key in texts if not inside(path, key)
    )
    assert sorted((p, t) for p, t, _ in output_texts(output, raw_string=False)) == sorted(
        (join_pointer("", *path), text) for path, text, _ in texts
    )


@settings(max_examples=300, deadline=None)
@given(
    patterns=st.lists(st.sampled_from(PATTERNS), min_size=1, max_size=3),
    text=TEXT,
)
def test_several_patterns_cut_a_text_first_listed_wins(patterns: list[str], text: str) -> None:
    extracts = [parse({"pattern": pattern}) for pattern in patterns]
    pieces = cut(text, extracts)
    assert "".join(piece.text for piece, _ in pieces) == text
    # naive: go through the extractions in order, keep each span that overlaps none kept so far
    kept: list[tuple[int, int, int]] = []
    for index, extract in enumerate(extracts):
        for found in extract.find(text):
            assert found.span is not None
            start, end = found.span
            if all(end <= s or e <= start for s, e, _ in kept):
                kept.append((start, end, index))
    assert sorted(kept) == [
        (piece.start, piece.start + len(piece.text), index) for piece, index in pieces if index >= 0
    ]


@settings(max_examples=300, deadline=None)
@given(value=JSON_VALUES, pointers=st.lists(SEGMENTS, min_size=1, max_size=3))
def test_several_pointers_cut_first_listed_wins(value: Any, pointers: list[list[str]]) -> None:
    extracts = [parse({"pointer": join_pointer("", *segments)}) for segments in pointers]
    chosen = [{path for path, _ in naive_locations(value, segments)} for segments in pointers]

    def owner(path: tuple[str, ...], is_key: bool) -> int:
        at = path[:-1] if is_key else path
        hits = [i for i, paths in enumerate(chosen) if any(at[: len(c)] == c for c in paths)]
        return min(hits, default=-1)

    expected = sorted(
        (join_pointer("", *path), text, owner(path, key)) for path, text, key in naive_texts(value)
    )
    assert sorted((p.pointer, p.text, i) for p, i in cut(value, extracts)) == expected


def test_cut_of_a_pattern_keeps_whole_values() -> None:
    first = parse({"pattern": "id: (?P<value>\\d+)"})
    second = parse({"pattern": "(?P<value>\\d+ \\w+)"})
    pieces = cut("id: 12 ab", [first, second])
    assert pieces == [
        (Piece("", 0, "id: "), -1),
        (Piece("", 4, "12"), 0),
        (Piece("", 6, " ab"), -1),
    ]
    # the other order: the second's value wins, the first's overlapping one is dropped whole
    assert cut("id: 12 ab", [second, first]) == [
        (Piece("", 0, "id: "), -1),
        (Piece("", 4, "12 ab"), 0),
    ]
