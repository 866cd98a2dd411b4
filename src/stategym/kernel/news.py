"""Whether a message naming an option already done tells the user it is done: news, in
words :func:`~stategym.kernel.proposals.reports` does not list ("I've secured AQ449 for you."
after paying for AQ449), which the user takes note of rather than approving a second time
(:func:`as_news`)."""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping

from stategym.kernel.go_aheads import asks_go_ahead
from stategym.kernel.proposals import Proposal, clauses, names_option, part_of_done, sentences

_UNDONE = re.compile(
    r"\b(?:cancel\w*|refund\w*|fail\w*|pending|declin\w*|revers\w*|void\w*|expir\w*"
    r"|reject\w*|undo\w*|undone|unable|not|never|no\s+longer|\w+n['\u2019]t|errors?|problems?"
    r"|issues?|wait\w*|awaiting|hold|held|processing|bounced?|unconfirmed|releas\w*|unpaid"
    r"|tentative\w*|dropped|roll\w*\s+back|incomplete|partial\w*|queued|retry\w*)\b",
    re.IGNORECASE,
)
"""Words that say an act failed, waits or was undone ("the payment for AQ449 failed",
"AQ449 is still pending", "AQ449 is only on hold", "I've cancelled AQ449"): a sentence
holding one is no news that the act is done."""
_DONE_NEWS = re.compile(
    r"\b(?:secur\w*|lock\w*\s+in|all\s+yours|yours|went\s+through|gone\s+through|all\s+set"
    r"|set|taken\s+care|sorted|done|complete[ds]?|confirmed|booked|paid|purchased|bought|ordered"
    r"|placed|reserved|issued|scheduled|sent|deleted|removed|finali[sz]ed|processed|succe\w*"
    r"|ready|good\s+to\s+go|in\s+place|arranged|handled|made|locked)\b",
    re.IGNORECASE,
)
"""Words that say an act is done ("I've secured AQ449 for you.", "AQ449 is all yours.",
"I've taken care of it: AQ449."): news of an option done needs one (audit 19C F5: read as
news whatever it said, "The charge for AQ449 bounced." was free)."""


def as_news(
    proposal: Proposal,
    text: str,
    done: Collection[str],
    options: Mapping[str, str],
    asks_slot: Callable[[str], bool],
) -> Proposal:
    """``proposal``, unless the option it proposes is one ``done`` holds (or part of one)
    and the message asks nothing of it: then it tells the user what was done, in words
    :func:`~stategym.kernel.proposals.reports` does not list ("I've secured AQ449 for
    you." after paying for AQ449), and the user takes note of it rather than approving
    it a second time. Asking of it is a go-ahead (``CONFIRMING``) or a question naming
    it ("Is AQ449 still what you want?"); a sentence naming it that says the act failed,
    waits or was undone (:data:`_UNDONE`: "Unfortunately the payment for AQ449 failed.")
    is no news of it either, nor one in which no sentence naming it says it is done
    (:data:`_DONE_NEWS`): such a message stays a proposal, charged as one after the
    decision, as before this reading.

    *Why*: the user approved such a report as a proposal ("Yes, AQ449 works for me.
    Please go ahead."), and the metric charged it as one made after the decision, so a
    true report in an unlisted wording cost 0.149 of R (travel seed 0); read as news
    whatever it said, "I've cancelled AQ449 and refunded you." after paying was free
    (audit 19B F3).

    ``options`` are the task's options by key (:func:`~stategym.kernel.proposals.option_keys`)
    and ``asks_slot`` the user's check that a go-ahead's words ask a slot it holds back
    (:func:`~stategym.kernel.go_aheads.asks_go_ahead`)."""
    option = proposal.option
    if option is None or not part_of_done(option, done):
        return proposal
    naming = []
    for sentence in sentences(text):
        if asks_go_ahead(sentence, True, asks_slot):
            return proposal
        if not names_option(sentence, options):
            continue
        if _UNDONE.search(sentence):
            return proposal
        if any("?" in c and names_option(c, options) for c in clauses(sentence)):
            return proposal
        naming.append(sentence)
    # a report beside it says what was done, and the option is its detail ("Booking
    # confirmed! Details: AQ449, $530": audit 20A F2)
    if not (proposal.reported or any(_DONE_NEWS.search(sentence) for sentence in naming)):
        return proposal
    return Proposal(None, False, True, reported=True)


__all__ = ["as_news"]
