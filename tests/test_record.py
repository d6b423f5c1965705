"""Record classes: the generic ``__init__`` a class starts with binds and refuses arguments
exactly as the one compiled from source after ``_COMPILE_AFTER`` instances, which is written as
a plain ``def`` and so is Python's own binding."""

from __future__ import annotations

from typing import Any

import pytest

from agent_reliability_harness import _record
from agent_reliability_harness._record import Record, field


def _make_class() -> type[Any]:
    """A fresh class (a class compiles its ``__init__`` once, so each test needs its own)."""

    class Thing(Record):
        a: int
        b: str
        c: int = 3
        d: list[int] = field(default_factory=list)
        e: Any = field(default=None, compare=False)

    return Thing


_CALLS: list[tuple[tuple[Any, ...], dict[str, Any]]] = [
    ((1, "x"), {}),
    ((1, "x", 4, [5], "e"), {}),
    ((), {"a": 1, "b": "x"}),
    ((1,), {"b": "x", "d": [7]}),
    ((), {"e": 0, "b": "y", "a": 2}),
    ((1, "x"), {"d": _record._MISSING}),  # the factory's sentinel, as a def takes it
    # refused
    ((1, "x", 4, [5], "e", "too many"), {}),
    ((1,), {}),
    ((), {}),
    ((), {"c": 1}),
    ((1, "x"), {"f": 1}),
    ((1, "x"), {"a": 2}),
    ((1, "x", 3), {"c": 4}),
]


def _outcome(cls: type[Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> object:
    try:
        made = cls(*args, **kwargs)
    except TypeError as exc:
        return ("TypeError", str(exc))
    return tuple(getattr(made, key) for key in ("a", "b", "c", "d", "e"))


@pytest.mark.parametrize(("args", "kwargs"), _CALLS)
def test_the_generic_init_binds_as_the_compiled_one(
    args: tuple[Any, ...], kwargs: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    generic = _outcome(_make_class(), args, kwargs)
    monkeypatch.setattr(_record, "_COMPILE_AFTER", 0)  # compiled at its first instance
    compiled_class = _make_class()
    compiled = _outcome(compiled_class, args, kwargs)
    assert "<record" in compiled_class.__init__.__code__.co_filename  # it was compiled
    assert generic == compiled


def test_a_class_compiles_its_init_after_some_instances() -> None:
    cls = _make_class()
    generic = cls.__init__
    made = [cls(n, "x") for n in range(_record._COMPILE_AFTER + 1)]
    assert cls.__init__ is not generic
    assert "<record" in cls.__init__.__code__.co_filename
    assert [m.a for m in made] == list(range(_record._COMPILE_AFTER + 1))
    assert made[0].d is not made[1].d  # a new list from the factory for each
    assert made[1] == cls(1, "x", e="ignored")  # e is not compared


def test_a_field_without_a_default_after_one_with_a_default_is_refused() -> None:
    # a def of __init__ would not compile; the class is refused when it is made, not later
    with pytest.raises(TypeError, match="field 'b' without a default follows one with one"):

        class Bad(Record):
            a: int = 1
            b: int
