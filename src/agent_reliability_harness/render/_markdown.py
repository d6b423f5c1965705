"""Markdown that untrusted text cannot break out of.

Reports quote text from traces (ids, tool names, model output in messages), and reports are
posted as pull-request comments. Such text must not add markup, links, HTML, @-mentions or issue
references, nor break a table. ``md_text`` escapes text for a table cell, a heading or the start of
a list item; ``md_code`` shows a value as inline code. Both shorten a value longer than ``limit``
characters (``VALUE_CHARS`` unless told), so one long value cannot fill a report; the reports
then keep to ``MAX_CHARS`` by leaving out what does not fit, saying so with ``md_left_out``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Final

from agent_reliability_harness.render._text import visible

__all__ = [
    "MAX_CHARS",
    "MESSAGE_CHARS",
    "VALUE_CHARS",
    "MdSection",
    "md_code",
    "md_fit",
    "md_left_out",
    "md_row",
    "md_size",
    "md_text",
]

MAX_CHARS: Final = 60_000  # GitHub refuses comments longer than 65,536 characters
VALUE_CHARS: Final = 300  # a longer quoted value is cut to this many characters, with an ellipsis
MESSAGE_CHARS: Final = 600  # the same for a finding's message, expected and observed values

_ZWSP: Final = "&#8203;"  # a zero-width space: invisible, but it breaks mentions and autolinks
_MARK: Final = "\x00"  # stands for _ZWSP while escaping; _flatten has escaped real NULs first
# "$" too: GitHub renders $...$ and $$...$$ as math.
_PUNCTUATION: Final = re.compile(r"([\\`*_\[\]|~$])")
_MENTION: Final = re.compile(r"([@#])(?=\w)|\b((?i:gh)-)(?=[0-9])")  # GH-26 is #26 too
# Block syntax a line (or a list item) could start with: an ATX heading, a bullet, an ordered list
# marker, a setext underline or thematic break; ``>`` and ``|`` are escaped everywhere already.
_BLOCK_START: Final = re.compile(
    r"\A(?:#{1,6}(?= |\Z)|[-+](?= |\Z)|-+ *\Z|=+ *\Z|[0-9]{1,9}(?=[.)](?: |\Z)))"
)
_AUTOLINK: Final = re.compile(r"(?i)(www)(?=\.)|(?<=:)(?=//)")
# A closing sequence of an ATX heading: "#"s after a space at the end, which a heading drops.
_CLOSING: Final = re.compile(r"(?<= )#+ *\Z")


def _flatten(text: str) -> str:
    """One line, as the console shows it: line breaks and tabs as ``\\n``, ``\\r``, ``\\t``,
    other control, surrogate and format characters (U+200B, bidi controls) as escapes."""
    return visible(text)


def _reference(char: str) -> str:
    return f"&#{ord(char)};"


def _clip(text: str, limit: int | None) -> str:
    if limit is not None and len(text) > limit:
        return text[: limit - 1] + "\u2026"
    return text


def _block_start(match: re.Match[str]) -> str:
    found = match.group()
    if found[0] in "0123456789":  # "1." or "1)": escape the delimiter after the number
        return found + "\\"
    return "\\" + found


def md_text(text: str, *, limit: int | None = VALUE_CHARS) -> str:
    """Escape text so it renders literally, on one line, inside a table cell, a heading or a list
    item (anywhere on a line, also at its start); text longer than ``limit`` is shortened."""
    text = _flatten(_clip(text, limit))
    text = _AUTOLINK.sub(lambda m: (m.group(1) or "") + _MARK, text)
    text = _MENTION.sub(lambda m: (m.group(1) or m.group(2)) + _MARK, text)
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    text = _PUNCTUATION.sub(r"\\\1", text)
    text = _CLOSING.sub(lambda m: "\\" + m.group(), text)  # "x #" is not the heading "x"
    if text[-1:].isspace():  # a heading or a table cell would drop it
        text = text[:-1] + _reference(text[-1])
    if text[:1].isspace():  # leading spaces would let block syntax follow (or indent code)
        text = _reference(text[0]) + text[1:]
    else:
        text = _BLOCK_START.sub(_block_start, text, count=1)
    return text.replace(_MARK, _ZWSP)


def md_code(text: str, *, in_table: bool = True, limit: int | None = VALUE_CHARS) -> str:
    """Show text as inline code; empty text becomes an empty code span, and text longer than
    ``limit`` is shortened.

    In a table cell a ``|`` must be escaped even inside code (GitHub then shows it plainly);
    elsewhere the backslash would show, so ``in_table=False`` leaves it alone.
    """
    text = _flatten(_clip(text, limit))
    if in_table:
        text = text.replace("|", "\\|")
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or not text.strip() else ""
    return f"{fence}{pad}{text}{pad}{fence}" if text else "` `"


def md_row(cells: list[str]) -> str:
    """One table row from already-escaped cells."""
    return "| " + " | ".join(cells) + " |"


def md_left_out(count: int, noun: str, verb: str = "listed") -> str:
    """The line that says ``count`` items (``noun`` in the singular) were left out for size."""
    what = f"{count} more {noun}" + ("" if count == 1 else "s")
    return (
        f"{what} {'is' if count == 1 else 'are'} not {verb} here to keep this report within "
        "GitHub's size limit; see the JSON report."
    )


def md_size(lines: Sequence[str]) -> int:
    """Characters of ``lines`` joined with line breaks (and one after the last)."""
    return sum(len(line) + 1 for line in lines)


class MdSection:
    """Lines of a report that end with a table whose rows are made only when they are needed:
    ``head`` (up to the table's ``|---`` delimiter row, or lines without a table), then
    ``count`` rows, ``row(i)`` making row ``i``. :func:`md_fit` measures and cuts a section of
    thousands of rows making only the rows it shows, and the rows it needs to know that the
    others do not fit; rows once made are kept."""

    __slots__ = ("_made", "_make", "count", "head")

    def __init__(
        self, head: list[str], count: int = 0, row: Callable[[int], str] | None = None
    ) -> None:
        self.head = head
        self.count = count
        self._make = row
        self._made: list[str] = []

    def row(self, index: int) -> str:
        made = self._made
        while len(made) <= index:
            assert self._make is not None  # count is 0 without it
            made.append(self._make(len(made)))
        return made[index]

    def size(self, limit: int) -> int:
        """``md_size`` of the section's lines when it is at most ``limit``, else a number
        greater than ``limit``: the rows after those that pass it are not made."""
        size = md_size(self.head)
        index = 0
        while size <= limit and index < self.count:
            size += len(self.row(index)) + 1
            index += 1
        return size

    def lines(self) -> list[str]:
        return self.head + [self.row(index) for index in range(self.count)]


def _section(item: str | list[str] | MdSection) -> MdSection:
    if isinstance(item, MdSection):
        return item
    return MdSection([item] if isinstance(item, str) else item)


def _cut(section: MdSection, room: int, rows: str, verb: str) -> list[str] | None:
    """``section`` cut to its first rows that fit in ``room`` characters with a line saying how
    many ``rows`` were left out, or None when not even one row fits."""
    kept = list(section.head)
    size = md_size(kept)
    for index in range(section.count):
        row = section.row(index)
        left_out = ["", md_left_out(section.count - index - 1, rows, verb)]
        if size + len(row) + 1 + md_size(left_out) > room:
            break
        kept.append(row)
        size += len(row) + 1
    shown = len(kept) - len(section.head)
    if not shown:
        return None
    if shown < section.count:
        return [*kept, "", md_left_out(section.count - shown, rows, verb)]
    return kept


def md_fit(
    lines: list[str],
    items: Sequence[str] | Iterable[list[str]] | Iterable[MdSection],
    budget: int,
    noun: str,
    *,
    count: int | None = None,
    verb: str = "listed",
    used: int = 0,
    rows: str | None = None,
) -> None:
    """Append ``items`` (lines, or sections of lines) to ``lines`` while ``used`` characters
    plus ``lines`` stay within ``budget``; a line says how many of them were left out. Sections
    may come from a generator, made only while they fit: ``count`` says how many there are.

    With ``rows`` (what a section's table rows are, such as ``"finding"``), an
    :class:`MdSection` too big for the room left is cut to its first rows, with a line saying
    how many more rows it has: it leaves the sections after it the room they need whole, up to
    half the room (all of it if not one row fits otherwise), and they still get what is left.
    Sections are measured only as far as that needs, so the work follows what is shown."""
    total = len(items) if count is None else count  # type: ignore[arg-type]
    size = used + md_size(lines)
    pending: Iterator[str | list[str] | MdSection] = iter(items)
    ahead: list[MdSection] = []  # sections made early, to know the room they need
    shown = 0
    while (item := ahead.pop(0) if ahead else next(pending, None)) is not None:
        section = _section(item)
        item_size = section.size(budget - size)  # exact if it fits
        if size + item_size > budget:
            room = budget - size
            cut = None
            if rows is not None:
                # What the sections ahead need matters only up to half the room.
                need = sum(x.size(room // 2) for x in ahead)
                while need <= room // 2 and shown + 1 + len(ahead) < total:
                    following = next(pending, None)
                    if following is None:
                        break
                    ahead.append(_section(following))
                    need += ahead[-1].size(room // 2)
                cut = _cut(section, room - min(need, room // 2), rows, verb)
                cut = cut or _cut(section, room, rows, verb)
            if cut is None:
                lines += ["", md_left_out(total - shown, noun, verb)]
                return
            lines += cut
            size += md_size(cut)
        else:
            lines += section.lines()
            size += item_size
        shown += 1
