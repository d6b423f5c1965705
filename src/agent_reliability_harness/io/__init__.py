"""Every file arh reads or writes goes through this package: :mod:`.read` reads the inputs
(files, directories, JSON Lines, standard input), :mod:`.load` reads the policy, saved reports
and gate files (and a trace file again, for the line of each step), :mod:`.write` writes the
report files. The commands (:mod:`agent_reliability_harness.app`) and the pipeline
(:mod:`agent_reliability_harness.runner`) read through it; no other module opens a file.
"""

from agent_reliability_harness.io.read import (
    DEFAULT_MAX_INPUT,
    STDIN_NAME,
    Chunk,
    Document,
    Source,
    cannot_read,
    expand_inputs,
    file_source,
    is_jsonl_name,
    is_regular_file,
    jsonl_chunks,
    no_records,
    os_path,
    read_chunk,
    read_documents,
    read_input_file,
    read_json_file,
    read_whole,
    size_text,
    stdin_chunks,
    stream_chunks,
    stream_documents,
    utf8_name,
)
from agent_reliability_harness.io.write import Spool, refuse_directory, write_atomic, write_stdout

__all__ = [
    "DEFAULT_MAX_INPUT",
    "STDIN_NAME",
    "Chunk",
    "Document",
    "Source",
    "Spool",
    "cannot_read",
    "expand_inputs",
    "file_source",
    "is_jsonl_name",
    "is_regular_file",
    "jsonl_chunks",
    "no_records",
    "os_path",
    "read_chunk",
    "read_documents",
    "read_input_file",
    "read_json_file",
    "read_whole",
    "refuse_directory",
    "size_text",
    "stdin_chunks",
    "stream_chunks",
    "stream_documents",
    "utf8_name",
    "write_atomic",
    "write_stdout",
]
