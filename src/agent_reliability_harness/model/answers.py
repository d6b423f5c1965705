"""Expected answers: what a trace's task should have produced, the side file of expectations
keyed by trace id or workflow, and how answers are normalised and compared (TRACE-SPEC.md,
"Expected outcome"; POLICY-SPEC.md, "answers").

Every function here is pure: the answer checks (``rules/answers.py``) call them on the final
answer of a trace and on its expectation.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Final

from agent_reliability_harness._decode import bad, check_keys, json_type, parse_schema_version
from agent_reliability_harness.errors import excerpt, join_pointer
from agent_reliability_harness.model.policy._parse import compile_regex, risky_warnings
from agent_reliability_harness.model.tasks import default_task_key

__all__ = [
    "EXPECTATION_KEYS",
    "NORMALIZATION_KEYS",
    "NUMBER",
    "Expectation",
    "Expectations",
    "Normalization",
    "canonical_number",
    "last_number",
    "normalize",
    "normalize_value",
    "parse_number",
    "structured",
]

EXPECTATION_KEYS: Final = ("answer", "pattern", "must_mention", "must_not_mention")

# A number as written in an answer: an optional sign, digits with optional groups of three after
# commas ("1,000"), an optional fraction; not part of a longer run of letters, digits, dots or
# commas (so "v1.2.3", "1,5" and "A12" hold no number, and "1,234,5" is left as written), nor
# joined by a hyphen to one ("ORD-0012", "2024-01-05" and "3-day" hold none either).
NUMBER: Final = re.compile(
    r"(?<![\w.,])(?<!\w-)[-+]?(?:[0-9]{1,3}(?:,[0-9]{3})+|[0-9]+)(?:\.[0-9]+)?"
    r"(?![\w]|[.,][0-9]|-\w)"
)


def canonical_number(token: str) -> str:
    """A number token (see :data:`NUMBER`) in one form: no ``+``, no grouping commas, no
    trailing zeros of the fraction (nor a bare ``.``), ``0`` for a negative zero; the digits of
    the integer part are kept as written (``007`` stays ``007``: it may be an identifier)."""
    text = token.lstrip("+").replace(",", "")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    if text.startswith("-") and not text.strip("-0."):
        text = text[1:]
    return text


@dataclass(frozen=True, slots=True)
class Normalization:
    """The steps of :func:`normalize`, each on unless the policy turns it off."""

    unicode: bool = True
    case: bool = True
    whitespace: bool = True
    numbers: bool = True


NORMALIZATION_KEYS: Final = ("unicode", "case", "whitespace", "numbers")


def normalize(text: str, how: Normalization = Normalization()) -> str:
    """``text`` normalised, in this order: Unicode NFKC; case folded (``str.casefold``);
    whitespace runs made one space and the ends stripped; every number token in its canonical
    form (:func:`canonical_number`)."""
    if how.unicode:
        text = unicodedata.normalize("NFKC", text)
    if how.case:
        text = text.casefold()
    if how.whitespace:
        text = " ".join(text.split())
    if how.numbers:
        text = NUMBER.sub(lambda m: canonical_number(m.group()), text)
    return text


def normalize_value(value: Any, how: Normalization = Normalization()) -> Any:
    """A JSON value with every string normalised and every number made ``("number", d)`` for
    the :class:`Decimal` ``d`` of its value (so ``1`` and ``1.0`` compare equal, and ``true``
    never equals ``1``)."""
    kind = type(value)
    if kind is str:
        return normalize(value, how)
    if kind is int or kind is float:
        return ("number", Decimal(repr(value)))
    if kind is list:
        return [normalize_value(item, how) for item in value]
    if kind is dict:
        return {normalize(k, how): normalize_value(v, how) for k, v in value.items()}
    return value


def parse_number(text: str) -> Decimal | None:
    """The value of ``text`` when it is one number token (after NFKC and stripping), else
    None."""
    text = unicodedata.normalize("NFKC", text).strip()
    match = NUMBER.fullmatch(text)
    if match is None:
        return None
    return Decimal(canonical_number(match.group()))


def last_number(text: str) -> Decimal | None:
    """The number an answer gives: the whole answer when it is one number, else the last number
    token in it (as grade-school maths benchmarks read "... so the answer is 42."), else None."""
    text = unicodedata.normalize("NFKC", text)
    whole = parse_number(text)
    if whole is not None:
        return whole
    tokens = NUMBER.findall(text)
    return Decimal(canonical_number(tokens[-1])) if tokens else None


_FENCE: Final = re.compile(r"```[A-Za-z0-9_-]*[ \t]*\n(.*?)\n[ \t]*```", re.DOTALL)


def _no_constant(name: str) -> Any:
    raise ValueError(name)


def _loads(text: str) -> tuple[bool, Any]:
    try:
        return True, json.loads(text, parse_constant=_no_constant)
    except (ValueError, RecursionError):
        return False, None


def structured(text: str) -> tuple[bool, Any]:
    """The answer read as JSON: the whole text (stripped), else the first fenced code block
    (```` ```json ... ``` ````); ``(False, None)`` when neither is JSON."""
    ok, value = _loads(text.strip())
    if ok:
        return ok, value
    fence = _FENCE.search(text)
    return _loads(fence.group(1)) if fence else (False, None)


def as_number(value: object) -> Decimal | None:
    """An expected answer as a number: a JSON number, or a string that is one number."""
    if type(value) is int or type(value) is float:
        return Decimal(repr(value))
    return parse_number(value) if type(value) is str else None


def _phrases(data: Mapping[str, Any], key: str, base: str) -> tuple[str, ...]:
    value = data.get(key)
    pointer = join_pointer(base, key)
    if value is None:
        return ()
    if type(value) is not list or not value:
        raise bad(pointer, f"must be a non-empty array of strings, got {json_type(value)}")
    for index, item in enumerate(value):
        if type(item) is not str or not item.strip():
            raise bad(
                join_pointer(pointer, index), f"must be a non-blank string, got {json_type(item)}"
            )
    return tuple(value)


@dataclass(frozen=True, slots=True)
class Expectation:
    """The expected outcome of a trace's task. ``answer`` is any JSON value (``has_answer``
    tells a JSON ``null`` answer from none); ``pattern`` a regular expression the answer must
    contain a match of; the phrases it must and must not mention."""

    has_answer: bool = False
    answer: Any = None
    pattern: re.Pattern[str] | None = None
    must_mention: tuple[str, ...] = ()
    must_not_mention: tuple[str, ...] = ()

    @classmethod
    def parse(cls, raw: object, pointer: str) -> Expectation:
        """Parse an expectation object; raise :class:`InputError` at the bad field's pointer."""
        if type(raw) is not dict:
            raise bad(pointer, f"an expectation must be an object, got {json_type(raw)}")
        check_keys(raw, EXPECTATION_KEYS, pointer)
        if not any(key in raw for key in EXPECTATION_KEYS):
            raise bad(
                pointer, f"expects nothing: give at least one of {', '.join(EXPECTATION_KEYS)}"
            )
        pattern = None
        if raw.get("pattern") is not None:
            where = join_pointer(pointer, "pattern")
            text = raw["pattern"]
            if type(text) is not str or not text:
                raise bad(where, f"must be a non-empty regular expression, got {json_type(text)}")
            pattern = compile_regex(text, 0, where)
            risky_warnings([(where, text, 0)], allow=False)
        return cls(
            "answer" in raw,
            raw.get("answer"),
            pattern,
            _phrases(raw, "must_mention", pointer),
            _phrases(raw, "must_not_mention", pointer),
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.has_answer:
            out["answer"] = self.answer
        if self.pattern is not None:
            out["pattern"] = self.pattern.pattern
        if self.must_mention:
            out["must_mention"] = list(self.must_mention)
        if self.must_not_mention:
            out["must_not_mention"] = list(self.must_not_mention)
        return out


_FILE_KEYS: Final = ("$schema", "schema_version", "expectations")
_KEYED_BY: Final = ("trace_id", "task", "workflow")
_ENTRY_KEYS: Final = (*_KEYED_BY, *EXPECTATION_KEYS)


@dataclass(frozen=True, slots=True)
class Expectations:
    """A side file of expectations (``--expect FILE``): entries keyed by ``trace_id`` (one
    trace), ``task`` (every run of a task, as ``arh stats`` groups them) or ``workflow`` (every
    trace of the workflow). :meth:`for_trace` looks one up in that order."""

    by_trace: Mapping[str, Expectation] = field(default_factory=dict)
    by_workflow: Mapping[str, Expectation] = field(default_factory=dict)
    by_task: Mapping[str, Expectation] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: object) -> Expectations:
        if type(data) is not dict:
            raise bad("", f"an expectations file must be a JSON object, got {json_type(data)}")
        check_keys(data, _FILE_KEYS, "")
        parse_schema_version(data.get("schema_version"), "/schema_version", "expectations file")
        entries = data.get("expectations")
        if type(entries) is not list:
            raise bad(
                "/expectations" if "expectations" in data else "",
                "missing required field 'expectations'"
                if "expectations" not in data
                else f"must be an array, got {json_type(entries)}",
            )
        found: dict[str, dict[str, Expectation]] = {key: {} for key in _KEYED_BY}
        seen: dict[tuple[str, str], int] = {}
        for index, entry in enumerate(entries):
            pointer = f"/expectations/{index}"
            if type(entry) is not dict:
                raise bad(pointer, f"an expectation must be an object, got {json_type(entry)}")
            check_keys(entry, _ENTRY_KEYS, pointer)
            keys = [k for k in _KEYED_BY if k in entry]
            if len(keys) != 1:
                raise bad(pointer, "give exactly one of trace_id, task and workflow")
            key = keys[0]
            name = entry[key]
            if type(name) is not str or (key != "workflow" and not name):
                raise bad(
                    join_pointer(pointer, key), f"must be a non-empty string, got {json_type(name)}"
                )
            if (key, name) in seen:
                raise bad(
                    join_pointer(pointer, key),
                    f"{key} {excerpt(name)} already has an expectation at "
                    f"/expectations/{seen[key, name]}",
                )
            seen[key, name] = index
            body = {k: v for k, v in entry.items() if k != key}
            found[key][name] = Expectation.parse(body, pointer)
        return cls(found["trace_id"], found["workflow"], found["task"])

    def for_trace(
        self, trace_id: str, workflow: str, task: str | None = None
    ) -> Expectation | None:
        """The expectation of a trace: by its id, else by its task (``task``; by default its id
        without a run marker, ``model.tasks.default_task_key``), else by its workflow."""
        if trace_id in self.by_trace:
            return self.by_trace[trace_id]
        if self.by_task:
            by_task = self.by_task.get(default_task_key(trace_id) if task is None else task)
            if by_task is not None:
                return by_task
        return self.by_workflow.get(workflow)
