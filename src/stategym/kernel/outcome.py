"""The final-answer view of an episode: whether it reached its goal, and the money it moved.

**Which money is lost.** Every charge names, in its ``reference``, the one record it pays for
or refunds (a booking, an order, a snapshot), and every commitment names, in its own
``reference``, the record whose charges it keeps (:class:`~stategym.kernel.domain.Commitment`).
Money lost is what the user paid, less refunds, less the net of the charges the goal's kept
commitments name. So anything paid under another record (an undone commitment's fee, a wrong
or duplicate commitment, a paid write the kept commitment did not need) is lost. A domain
keeps this true by charging each paid record under its own id: a commitment names one record,
so a commitment that needed two paid records would have to be charged under one.
"""

from __future__ import annotations

from stategym.kernel.domain import Domain
from stategym.kernel.task import Task
from stategym.kernel.trajectory import Outcome
from stategym.kernel.understanding.answers import match_answer, normalise_answer
from stategym.kernel.world import USER_ACCOUNT, World


def judge(domain: Domain, task: Task, world: World, answer: str | None) -> Outcome:
    """The outcome of an episode of ``task`` that left ``world`` and gave ``answer``.

    A domain that judges answers reaches its goal when ``finish``'s answer names a best
    option (or ``"none"`` when there is none); any other domain when exactly one best option
    is committed (or nothing, when there is none). Money lost is what the user paid, less
    refunds, less the net of the charges whose reference a kept commitment names (see the
    module docstring); when the goal is missed no commitment is kept.
    """
    truth = task.truth
    committed = domain.commitments(world)
    options = tuple(c.option for c in committed)
    if not domain.judges_answer(task.knobs):
        goal = (len(options) == 1 and options[0] in truth.best) or (not truth.best and not options)
    else:
        said = normalise_answer(answer or "")
        goal = match_answer(answer, truth.best) is not None or (
            not truth.best and said in ("none", "")
        )
        goal = goal and answer is not None
    spent = sum(c.amount for c in world.charges if c.source == USER_ACCOUNT)
    refunded = sum(c.amount for c in world.charges if c.target == USER_ACCOUNT)
    kept = {c.reference for c in committed if goal and c.option in truth.best}
    kept_net = sum(
        c.amount if c.source == USER_ACCOUNT else -c.amount
        for c in world.charges
        if c.reference in kept and USER_ACCOUNT in (c.source, c.target)
    )
    return Outcome(goal, options, answer, spent, refunded, spent - refunded - kept_net)
