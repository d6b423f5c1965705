"""Allow ``python -m agent_reliability_harness``."""

from agent_reliability_harness.cli import main

raise SystemExit(main())
