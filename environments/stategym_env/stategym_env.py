"""stategym as an installable verifiers environment: ``vf.load_environment("stategym-env")``.

verifiers 0.3 imports the module named after the id (``stategym-env`` -> ``stategym_env``) and
calls its ``load_environment``; this one is stategym's (:mod:`stategym.adapters.verifiers`).
"""

from stategym.adapters.verifiers import load_environment

__all__ = ["load_environment"]
