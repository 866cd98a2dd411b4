"""Adapters: stategym inside other frameworks' trainers (each behind its own extra).

- :mod:`stategym.adapters.trl` (extra ``trl``): an ``environment_factory`` class for TRL's
  ``GRPOTrainer`` whose methods are a domain's tools and whose reward is stategym's R.
- :mod:`stategym.adapters.trl_rollout` (extra ``trl``): a ``rollout_func`` in which stategym
  plays whole episodes token-in-token-out, and a ``GRPOTrainer`` subclass whose loss takes
  stategym's per-token advantages (every credit of ``stategym train``);
  :mod:`stategym.adapters.trl_parsing` reads the model's replies for the first.
- :mod:`stategym.adapters.verifiers` (extra ``verifiers``): a verifiers 0.3 ``MultiTurnEnv``
  over any domain (one assistant message is one round, R the reward, the four Q_d metrics);
  ``environments/stategym_env`` makes it ``vf.load_environment("stategym-env")``.
- :mod:`stategym.adapters.openenv` (extra ``openenv``): a domain served over OpenEnv's
  HTTP/WebSocket protocol, with its typed client (:mod:`stategym.adapters.openenv_wire`:
  what the server answers itself, so that no request ends a session or gets a 500).
- :mod:`stategym.adapters.verl` (extra ``verl``, its own environment:
  ``scripts/test-verl.sh``): an agent loop for verl 0.9's rollout (``StategymAgentLoop``,
  registered as ``stategym``) that plays one stategym episode per sample, token-in-token-out,
  with R as the reward.

Adapters only translate (``STYLE.md`` 9): the episode, its rounds and its score are the
kernel's and the metrics'. Nothing here is imported by ``stategym`` itself, so the core
never imports a trainer.
"""
