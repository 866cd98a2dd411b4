"""The kernel: the environment and what it is made of (world, simulated user, tasks, tools,
provenance, the action protocol, the trajectory log). It knows domains only as
:class:`~stategym.kernel.domain.Domain` objects and imports no domain, no registry and no
LLM library (``docs/architecture.md``)."""
