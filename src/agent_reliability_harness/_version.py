"""The one place the harness version is written."""

__version__ = "0.3.0"

# Where the project lives; SARIF rule help links point into its docs/rules.md.
PROJECT_URL = "https://github.com/agent-reliability-harness/agent-reliability-harness"
RULES_DOC_URL = f"{PROJECT_URL}/blob/v{__version__}/docs/rules.md"
