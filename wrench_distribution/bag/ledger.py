"""Every message and sample a bag analysis drops, under its cause, and what ``complete`` means.

``summary.json`` lists under ``dropped`` each cause with its count (and per effector where
it is per message). Reading causes: ``unreadable_messages`` (announced by the bag, never
read: damaged or truncated storage), ``corrupt_messages`` (read, but they do not decode),
``other_publisher_messages`` (a topic's second publisher, :mod:`.publishers`). Analysis
causes, the analyzer node's rules: ``unsynchronised_messages`` (the synchronisation: a
reading replaced or left without partners within ``sync_tolerance``), ``stale_messages``
(``max_age``), ``rejected_nan_messages``, ``future_messages`` (``max_future``),
``wrong_frame_messages`` (``ft_frames``), ``out_of_order_samples`` (stamped at or before the
previous sample: stamps going backwards or repeated), ``samples_without_contact_pose`` and
``samples_without_orientation``.

``complete`` is true when the bag was read whole (every announced message read and decoded,
one publisher per F/T topic) and nothing was dropped for a cause other than the
synchronisation (``unsynchronised_messages``). ``stamps_going_backwards`` counts the F/T
messages stamped before the previous message of their topic (an input figure; what they
cost is under ``dropped``).
"""
from __future__ import annotations

from typing import Iterator, Sequence

import numpy as np

#: the synchronisation's own cause: the only drop a complete analysis may have
SYNCHRONISATION = 'unsynchronised_messages'
#: cause -> text of the printed table
CAUSES = {
    'unreadable_messages': 'unreadable messages (damaged or truncated storage)',
    'corrupt_messages': 'corrupt messages (do not decode)',
    'other_publisher_messages': "messages of a topic's other publishers",
    'unsynchronised_messages': 'unsynchronised messages',
    'stale_messages': 'stale messages (max_age)',
    'rejected_nan_messages': 'messages with NaN or Inf',
    'future_messages': 'messages stamped in the future (max_future)',
    'wrong_frame_messages': 'messages in another frame (ft_frames)',
    'out_of_order_samples': 'samples out of order (stamps going backwards or repeated)',
    'samples_without_contact_pose': 'samples without contact pose',
    'samples_without_orientation': 'samples without orientation',
}
#: reading cause -> (total and per-topic field of the reader's completeness, per-effector name)
_READING = {'unreadable_messages': ('missing_messages', 'missing', 'unreadable'),
            'corrupt_messages': ('corrupt_messages', 'corrupt', 'corrupt'),
            'other_publisher_messages': ('other_publisher_messages', 'other_publishers',
                                         'other_publisher')}


class StampOrder:
    """Counts, per F/T stream, the messages stamped before the previous one of their stream.

    :param n: number of streams.
    """

    def __init__(self, n: int) -> None:
        self.last = np.full(n, np.iinfo(np.int64).min, np.int64)
        self.backwards = np.zeros(n, np.int64)

    def watch(self, chunks: Iterator[tuple]) -> Iterator[tuple]:
        """Pass the chunks of :meth:`BagReader.wrench_chunks` on, counting as they go."""
        for chunk in chunks:
            stream, stamp = chunk[0], chunk[2]
            for i in np.unique(stream).tolist():
                stamps = stamp[stream == i]
                before = np.concatenate([self.last[i:i + 1], stamps[:-1]])
                self.backwards[i] += int(np.count_nonzero(stamps < before))
                self.last[i] = stamps[-1]
            yield chunk


def account(summary: dict, completeness: dict, order: StampOrder,
            effectors: Sequence[str]) -> None:
    """Add the reading causes, the backwards stamps and ``complete`` to a summary (in place)."""
    dropped = summary['dropped']
    per_effector = dropped['per_effector']
    topics = completeness['topics']
    for cause, (total, field, name) in _READING.items():
        dropped[cause] = int(completeness.get(total) or 0)
        for effector in effectors:
            entry = per_effector[effector]
            entry[name] = int(topics.get(entry['topic'], {}).get(field, 0) or 0)
    summary['stamps_going_backwards'] = int(order.backwards.sum())
    for i, effector in enumerate(effectors):
        per_effector[effector]['stamps_going_backwards'] = int(order.backwards[i])
    summary['publishers'] = completeness.get('publishers', {})
    reasons = incomplete_because(summary, completeness)
    summary['complete'] = not reasons
    summary['incomplete_because'] = reasons


def incomplete_because(summary: dict, completeness: dict) -> list:
    """Return why an analysis is not complete, one line per cause (empty when it is)."""
    dropped = summary['dropped']
    reasons = [f'{dropped[cause]} {text}' for cause, text in CAUSES.items()
               if cause != SYNCHRONISATION and dropped.get(cause)]
    if not completeness['complete'] and not any(dropped.get(c) for c in _READING):
        reasons += completeness['problems'][:3] or ['the bag could not be read whole']
    return reasons


def drops_line(dropped: dict) -> str:
    """Return the printed table's line of drops: every cause with a count, or none."""
    shown = [f'{dropped[cause]} {text}' for cause, text in CAUSES.items() if dropped.get(cause)]
    return '; '.join(shown) if shown else 'none'
