"""Running agents on golden tasks (``arh run``): the task model, the tool gateway every call of
the agent goes through, the adapter protocol, the reference agents, datasets and the runs
directory. See docs/running-agents.md."""
