"""Immutable value classes, like ``@dataclass(frozen=True, slots=True)`` but cheap to import.

Importing ``dataclasses`` pulls in ``inspect`` and costs about 15 ms, and each dataclass costs
about half a millisecond more to create; the command line has to start in a few tens of
milliseconds. A :class:`Record` subclass lists its fields as annotations, exactly as a dataclass
does, and gets ``__slots__``, an ``__init__`` in field order (compiled once the class has made
a few instances), equality, hashing, ``repr`` and pickling; instances cannot be changed after
``__init__``. ``field`` sets a default, a default factory, or leaves a field out of
comparisons. Type checkers see the same thing through ``dataclass_transform``.
"""

from __future__ import annotations

TYPE_CHECKING = False  # `typing` costs milliseconds at start-up; only type checkers need it here
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, ClassVar, Final, TypeVar, dataclass_transform, overload

    _T = TypeVar("_T")
    _R = TypeVar("_R", bound="Record")
else:

    def dataclass_transform(**_kwargs):
        return lambda target: target


__all__ = ["Record", "field", "replace"]

_MISSING = object()


class _Field:
    __slots__ = ("compare", "default", "factory")

    def __init__(self, default: Any, factory: Any, compare: bool) -> None:
        self.default = default
        self.factory = factory
        self.compare = compare


if TYPE_CHECKING:

    @overload
    def field(*, default: _T, compare: bool = ...) -> _T: ...
    @overload
    def field(*, default_factory: Callable[[], _T], compare: bool = ...) -> _T: ...
    @overload
    def field(*, compare: bool = ...) -> Any: ...


def field(*, default: Any = _MISSING, default_factory: Any = _MISSING, compare: bool = True) -> Any:
    """Describe a field: its default, or a factory that makes one, and whether it is compared."""
    return _Field(default, default_factory, compare)


def _is_field(annotation: object) -> bool:
    text = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", "")
    return not str(text).startswith(("ClassVar", "typing.ClassVar", "Final", "typing.Final"))


@dataclass_transform(frozen_default=True, field_specifiers=(field,))
class _RecordMeta(type):
    def __new__(mcls, name: str, bases: tuple[type, ...], namespace: dict[str, Any]) -> _RecordMeta:
        specs: list[tuple[str, _Field]] = []
        for key, annotation in namespace.get("__annotations__", {}).items():
            if not _is_field(annotation):
                continue
            value = namespace.pop(key, _MISSING)
            spec = value if isinstance(value, _Field) else _Field(value, _MISSING, True)
            specs.append((key, spec))
        optional = False
        for key, spec in specs:  # as a def of __init__ would (it is compiled later: _first_init)
            if spec.default is not _MISSING or spec.factory is not _MISSING:
                optional = True
            elif optional:
                raise TypeError(f"{name}: field {key!r} without a default follows one with one")
        namespace["__slots__"] = tuple(key for key, _ in specs)
        cls = super().__new__(mcls, name, bases, namespace)
        if specs:
            cls.__init__ = _first_init(cls, specs)  # type: ignore[misc]
        cls._compared = tuple(key for key, spec in specs if spec.compare)  # type: ignore[attr-defined]
        return cls


# A class's ``__init__`` is compiled from source once it has made this many instances; until
# then a generic one binds the arguments. Compiling costs about as much as a few hundred
# generic calls, and most classes make only a few instances in a run, or none: compiling
# them all at import took milliseconds of every start of the command line.
_COMPILE_AFTER: Final = 64


def _first_init(cls: type, specs: list[tuple[str, _Field]]) -> Callable[..., None]:
    """The class's ``__init__`` until it is compiled (see ``_COMPILE_AFTER``): it binds its
    arguments as the compiled one does, and refuses what it refuses."""
    name = f"{cls.__name__}.__init__"
    positions = {key: at for at, (key, _) in enumerate(specs)}
    required = sum(spec.default is _MISSING and spec.factory is _MISSING for _, spec in specs)
    calls = 0

    def first(self: Any, *args: Any, **kwargs: Any) -> None:
        nonlocal calls
        calls += 1
        if calls > _COMPILE_AFTER:
            init = _make_init(cls, specs)
            if cls.__dict__.get("__init__") is first:
                cls.__init__ = init  # type: ignore[misc]
            init(self, *args, **kwargs)
            return
        if len(args) > len(specs):
            takes = f"from {required + 1} to " if required < len(specs) else ""
            raise TypeError(
                f"{name}() takes {takes}{len(specs) + 1} positional arguments but "
                f"{len(args) + 1} were given"
            )
        values = [*args, *[_MISSING] * (len(specs) - len(args))]
        for key, value in kwargs.items():
            at = positions.get(key)
            if at is None:
                raise TypeError(f"{name}() got an unexpected keyword argument {key!r}")
            if at < len(args):
                raise TypeError(f"{name}() got multiple values for argument {key!r}")
            values[at] = value
        missing = [
            repr(key)
            for (key, _), value in zip(specs[:required], values, strict=False)
            if value is _MISSING
        ]
        if missing:
            plural = "s" if len(missing) > 1 else ""
            raise TypeError(
                f"{name}() missing {len(missing)} required positional argument{plural}: "
                + _listed(missing)
            )
        for (key, spec), given in zip(specs, values, strict=True):
            value = given
            if value is _MISSING:
                value = spec.default if spec.factory is _MISSING else spec.factory()
            object.__setattr__(self, key, value)

    first.__name__ = "__init__"
    first.__qualname__ = name
    return first


def _listed(names: list[str]) -> str:
    """``'a'``, ``'a' and 'b'``, ``'a', 'b', and 'c'``: as Python lists missing arguments."""
    if len(names) < 3:
        return " and ".join(names)
    return f"{', '.join(names[:-1])}, and {names[-1]}"


def _make_init(cls: type, specs: list[tuple[str, _Field]]) -> Callable[..., None]:
    """Write ``__init__`` as source, once per class, as dataclasses does. Each field is set
    through its slot's own setter, which skips the attribute lookup of ``object.__setattr__``
    (a third of the time it takes to make a Step)."""
    name = cls.__name__
    scope: dict[str, Any] = {"_MISSING": _MISSING}
    params, body = ["self"], []
    for key, spec in specs:
        scope[f"_set_{key}"] = cls.__dict__[key].__set__
        if spec.factory is not _MISSING:
            scope[f"_factory_{key}"] = spec.factory
            params.append(f"{key}=_MISSING")
            body.append(f"    if {key} is _MISSING: {key} = _factory_{key}()")
        elif spec.default is not _MISSING:
            scope[f"_default_{key}"] = spec.default
            params.append(f"{key}=_default_{key}")
        else:
            params.append(key)
        body.append(f"    _set_{key}(self, {key})")
    source = f"def __init__({', '.join(params)}):\n" + "\n".join(body) + "\n"
    exec(compile(source, f"<record {name}>", "exec"), scope)  # noqa: S102 - generated from field names
    init: Callable[..., None] = scope["__init__"]
    init.__qualname__ = f"{name}.__init__"
    return init


def _names(cls: type[Record]) -> tuple[str, ...]:
    names: tuple[str, ...] = cls.__slots__
    return names


def _rebuild(cls: type[_R], values: tuple[Any, ...]) -> _R:
    record = object.__new__(cls)
    for key, value in zip(_names(cls), values, strict=True):
        object.__setattr__(record, key, value)
    return record


class Record(metaclass=_RecordMeta):
    """Base class of immutable value classes; see the module docstring."""

    __slots__ = ()
    _compared: ClassVar[tuple[str, ...]] = ()

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"cannot assign to field {name!r}: {type(self).__name__} is immutable")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r}: {type(self).__name__} is immutable")

    def _key(self) -> tuple[Any, ...]:
        return tuple(getattr(self, key) for key in self._compared)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        assert isinstance(other, Record)
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        fields = ", ".join(f"{key}={getattr(self, key)!r}" for key in _names(type(self)))
        return f"{type(self).__name__}({fields})"

    def __reduce__(self) -> tuple[Any, ...]:
        values = tuple(getattr(self, key) for key in _names(type(self)))
        return (_rebuild, (type(self), values))


def replace(record: _R, **changes: Any) -> _R:
    """A copy of ``record`` with some fields changed."""
    values = {key: getattr(record, key) for key in _names(type(record))}
    values.update(changes)
    return type(record)(**values)
