"""Markdown that untrusted text cannot break out of.

Reports quote text from traces (ids, tool names, model output in messages), and reports are
posted as pull-request comments. Such text must not add markup, links, HTML, @-mentions or issue
references, nor break a table. ``md_text`` escapes text for a table cell or a heading;
``md_code`` shows a value as inline code.
"""

from __future__ import annotations

import re

TYPE_CHECKING = False  # `typing` costs milliseconds at start-up; only type checkers need it
if TYPE_CHECKING:
    from typing import Final

__all__ = ["md_code", "md_row", "md_text"]

_ZWSP: Final = "&#8203;"  # a zero-width space: invisible, but it breaks mentions and autolinks
_MARK: Final = "\x00"  # stands for _ZWSP while escaping; _flatten removes real NULs first
_NEWLINES: Final = re.compile(r"\r\n|[\r\n\u2028\u2029\x85]")
_CONTROL: Final = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff\u202a-\u202e\u2066-\u2069\ufffe\uffff]"
)
_PUNCTUATION: Final = re.compile(r"([\\`*_\[\]|~])")
_MENTION: Final = re.compile(r"([@#])(?=\w)")
_AUTOLINK: Final = re.compile(r"(?i)(www)(?=\.)|(?<=:)(?=//)")


def _escape_control(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def _flatten(text: str) -> str:
    text = _NEWLINES.sub(" ", text).replace("\t", " ")
    return _CONTROL.sub(_escape_control, text)


def md_text(text: str) -> str:
    """Escape text so it renders literally, on one line, inside a table cell or heading."""
    text = _flatten(text)
    text = _AUTOLINK.sub(lambda m: (m.group(1) or "") + _MARK, text)
    text = _MENTION.sub(lambda m: m.group(1) + _MARK, text)
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _PUNCTUATION.sub(r"\\\1", text).replace(_MARK, _ZWSP)


def md_code(text: str, *, in_table: bool = True) -> str:
    """Show text as inline code; empty text becomes an empty code span.

    In a table cell a ``|`` must be escaped even inside code (GitHub then shows it plainly);
    elsewhere the backslash would show, so ``in_table=False`` leaves it alone.
    """
    text = _flatten(text)
    if in_table:
        text = text.replace("|", "\\|")
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or not text.strip() else ""
    return f"{fence}{pad}{text}{pad}{fence}" if text else "` `"


def md_row(cells: list[str]) -> str:
    """One table row from already-escaped cells."""
    return "| " + " | ".join(cells) + " |"
