"""The names of the input formats, for the command line to offer without importing the adapters."""

# The adapters package maps each name to its adapter; a test checks the two agree.
FORMAT_NAMES = ("arh", "openai-chat", "anthropic-messages", "cohere-chat")
