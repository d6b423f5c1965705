"""Agents for ``arh run`` beyond the reference agents (docs/integrations.md).

- :mod:`.openai_live`: a live agent over an OpenAI-compatible chat-completions API (standard
  library HTTP, opt-in through environment variables).
- :mod:`.langgraph`, :mod:`.openai_agents`, :mod:`.crewai`: adapters that run an agent built with
  LangGraph, the OpenAI Agents SDK or CrewAI, with the framework's tool calls going through the
  harness's tool gateway. Each needs its extra (``pip install
  'agent-reliability-harness[langgraph]'``, ``[openai-agents]``, ``[crewai]``) and imports its
  framework only when an agent is made, so this package imports without them.

Nothing else in the package imports this one: it is what users name on the command line.
"""
