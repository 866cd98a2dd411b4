"""Adapters: stategym inside other frameworks' trainers (each behind its own extra).

- :mod:`stategym.adapters.trl` (extra ``trl``): an ``environment_factory`` class for TRL's
  ``GRPOTrainer`` whose methods are a domain's tools and whose reward is stategym's R.

Adapters only translate (``STYLE.md`` 9): the episode, its rounds and its score are the
kernel's and the metrics'. Nothing here is imported by ``stategym`` itself, so the core
never imports a trainer.
"""
