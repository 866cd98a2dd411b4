"""The domains: one folder each (``travel``, ``meetings``, ``cloud``, ``lookup``, ``shop``,
``bank``, and ``synthetic`` for the ``synth:<spec>`` family), each with a ``DOMAIN``.

Which domains exist is the registry's business (:mod:`stategym.registry`); importing this
package imports no domain.
"""
