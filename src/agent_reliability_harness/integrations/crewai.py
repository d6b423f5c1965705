"""The framework adapter (docs/integrations.md); made in the following commits."""
