"""The names of the input formats, for the command line to offer without importing the adapters."""

# The adapters package maps each name to its adapter; a test checks the two agree.
FORMAT_NAMES = (
    "arh",
    "openai-chat",
    "anthropic-messages",
    "cohere-chat",
    "otel-genai",
    "openinference",
    "openai-responses",
    "gemini",
    "bedrock-converse",
)
# The formats read from OpenTelemetry trace exports: one document (or one JSON Lines file) holds
# the spans of any number of traces, grouped by trace id.
SPAN_FORMAT_NAMES = ("otel-genai", "openinference")
