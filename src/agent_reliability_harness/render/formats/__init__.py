"""The report formats: one module each, with a module-level ``FORMAT``
(:class:`~agent_reliability_harness.render.outputs.OutputFormat`).

The command line finds every module of this package and makes its ``--<format>-out`` options
from their ``FORMAT``; nothing else lists the formats. A format module is imported to build the
command line, so it imports what its writers need only when they are made (eager, the writers
measured +33 to +60 ms of every ``arh validate``).
"""
