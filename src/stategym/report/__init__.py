"""The self-contained HTML report of run directories (``stategym report``).

It reads run directories only (trajectories, training metrics, protocol reports) and never
plays an episode: each trajectory is scored offline from its log and its regenerated task.

- :mod:`.runs`: what each kind of run directory holds, read strictly.
- :mod:`.episodes`: the viewer's plain-JSON view of one episode.
- :mod:`.plots`: matplotlib figures as inline SVG (Okabe-Ito palette, markers for print).
- :mod:`.markup`: the only ways text and data enter the page (escaping, JSON data blocks).
- :mod:`.assets`: the inline style sheet and the viewer script.
- :mod:`.page`: :func:`build` and :func:`write`.

Usage and the page's sections: ``docs/report.md``.
"""

from __future__ import annotations

from .page import Options, build, write

__all__ = ["Options", "build", "write"]
