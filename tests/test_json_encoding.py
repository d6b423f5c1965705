"""The fast indented encoder writes exactly what ``json.dumps(indent=2, ensure_ascii=...)``
writes, which is the independent reference here."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_reliability_harness._json import dumps_indented

_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text()
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.tuples(inner, inner)
        | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=30,
)


def _reference(value: Any, level: int, *, ensure_ascii: bool = True) -> str:
    text = json.dumps(value, indent=2, ensure_ascii=ensure_ascii)
    return text.replace("\n", "\n" + "  " * level)


@settings(max_examples=400, deadline=None)
@given(_VALUES, st.integers(min_value=0, max_value=5))
def test_same_text_as_json_dumps(value: Any, level: int) -> None:
    assert dumps_indented(value, level) == _reference(value, level)


@settings(max_examples=200, deadline=None)
@given(_VALUES)
def test_same_text_as_json_dumps_with_unicode(value: Any) -> None:
    # what the HTML report shows of a value: characters outside ASCII as they are
    expected = _reference(value, 0, ensure_ascii=False)
    assert dumps_indented(value, ensure_ascii=False) == expected


@pytest.mark.parametrize(
    "value",
    [
        {},
        [],
        {"a": {}, "b": [], "c": [{}]},
        {'\u2028 \ud800 \x00 "q" \\': "\U0001f600 \x7f \n\t"},
        [1.0, -0.0, 1e16, 1e-7, 123456789.125, float("nan"), float("-inf")],
        [True, False, None, 0, -1, 2**70],
    ],
)
def test_edge_values(value: Any) -> None:
    assert dumps_indented(value) == _reference(value, 0)
    assert dumps_indented(value, 3) == _reference(value, 3)
    assert dumps_indented(value, ensure_ascii=False) == _reference(value, 0, ensure_ascii=False)


class _Text(str):
    __slots__ = ()


@pytest.mark.parametrize(
    "value",
    [{1: "int key"}, {None: 1, True: 2, 1.5: 3}, [_Text("a str subclass")], {"k": _Text("v")}],
)
def test_other_values_are_left_to_json_dumps(value: Any) -> None:
    assert dumps_indented(value, 2) == _reference(value, 2)


def test_unencodable_values_fail_as_json_dumps_does() -> None:
    with pytest.raises(TypeError):
        dumps_indented({"a": object()})
