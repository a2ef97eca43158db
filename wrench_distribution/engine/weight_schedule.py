"""The contact weights recorded with a bag, followed by the chunked read-out (no ROS).

docs/legs_and_hands.md, "The analyzer follows", and docs/bags.md. The distributor's
``contact_weights/actual`` messages (labelled ``Float64MultiArray``, no header) are taken in
the order of their log time, the recorder's receive time: the one time a bag gives them. The
weights in force at a sample are those of the latest message logged at or before its stamp
(before the first message: every weight 1, as the node before its first message). Each
message goes through :class:`~.contact_states.FollowedWeights`, the node's path: a message
that is unlabelled, names an unknown effector, holds NaN, a value outside ``[0, 1]``, every
weight 0, or raises a contact without a pose is refused and the weights in force stay.

The chunk path (:mod:`.batch`) splits its runs where the weights change (each run one
product at constant weights) and lays each run's internal load out in :attr:`WeightSchedule.columns`,
the union of the bases met so far (NaN where an element is not in the run's solve), with the
weights of each sample beside it (``contact_weight``, (k, n)).
"""
from typing import Sequence

import numpy as np

from wrench_distribution.core.codec import ns_to_seconds
from wrench_distribution.core.contact_weights import check_weights
from wrench_distribution.core.errors import InvalidInputError
from .contact_states import FollowedWeights
from .weights import weights_from_message

#: the key of the per-sample weights in a chunk's values (k, n)
WEIGHT_KEY = 'contact_weight'
#: longest list of changes and refusals kept for the summary
MAX_LISTED = 100


class WeightSchedule:
    """Recorded weights messages, offered to the read-out as the samples reach their times (module docstring).

    :param follow: the weights the engine's read-out follows.
    :param times_ns: (m,) each message's log time.
    :param messages: ``(labels or None, values)`` per message (``parse_internal_load_msg``).
    """

    def __init__(self, follow: FollowedWeights, times_ns: Sequence[int], messages: Sequence[tuple]) -> None:
        order = np.argsort(np.asarray(times_ns, np.int64), kind='stable')
        self.follow = follow
        self.names = list(follow.names)
        self.times = np.asarray(times_ns, np.int64)[order]
        self.messages = [messages[j] for j in order.tolist()]
        self.offered = 0
        #: the changes of the weights in force and the refused messages, in time order
        self.changes: list = []
        self.refused: list = []
        self.change_count = 0
        self.refused_count = 0
        #: the internal-load columns: the union of the bases met, in order of appearance
        self.columns: list = []
        self.units: list = []

    def phases(self, stamps_ns: np.ndarray) -> np.ndarray:
        """Return (k,) how many messages are logged at or before each stamp."""
        return np.searchsorted(self.times, np.asarray(stamps_ns, np.int64), side='right')

    def reach(self, phase: int) -> None:
        """Offer the messages up to ``phase`` (:meth:`phases`) that were not offered yet, in order."""
        while self.offered < phase:
            j = self.offered
            self.offered += 1
            before = self.follow.weights.copy()
            why = self.follow.offer(*self.messages[j])
            stamp = float(ns_to_seconds(int(self.times[j])))
            if why is not None:
                self.refused_count += 1
                if len(self.refused) < MAX_LISTED:
                    self.refused.append({'time_s': stamp, 'reason': why})
            elif not np.array_equal(before, self.follow.weights):
                self.change_count += 1
                if len(self.changes) < MAX_LISTED:
                    self.changes.append(self._change(stamp, before))

    def changes_by(self, phase: int) -> bool:
        """Tell whether the messages not offered yet up to ``phase`` may change the weights in force.

        The messages' own checks (labels, values, range); the contacts' poses are checked when
        they are offered (:meth:`reach`): a message refused then changes nothing.
        """
        weights = self.follow.weights
        for labels, values in self.messages[self.offered:phase]:
            try:
                target = check_weights(weights_from_message(self.names, labels, values, weights), len(weights))
            except (ValueError, InvalidInputError):
                continue
            weights = target if target.any() else weights
        return not np.array_equal(weights, self.follow.weights)

    def _change(self, stamp: float, before: np.ndarray) -> dict:
        """One change for the summary: its time, the weights, who left and who came back."""
        after = self.follow.weights
        return {'time_s': stamp, 'weights': dict(zip(self.names, after.tolist())),
                'released': [n for n, a, b in zip(self.names, after, before) if a == 0.0 and b > 0.0],
                'returned': [n for n, a, b in zip(self.names, after, before) if a > 0.0 and b == 0.0]}

    def finish(self) -> None:
        """Offer the messages logged after the last sample (checked and reported; no sample uses them)."""
        self.reach(len(self.times))

    def widen(self, parts: list, names: list, units: list) -> np.ndarray:
        """Lay the internal load of each run out in the union of the bases (NaN where absent).

        :param parts: (k_r, m_r) internal load of each run.
        :param names: the basis names of each run.
        :param units: the basis units of each run.
        :return: (sum k_r, len(:attr:`columns`)) array.
        """
        for run_names, run_units in zip(names, units):
            for name, unit in zip(run_names, list(run_units) + ['N'] * (len(run_names) - len(run_units))):
                if name not in self.columns:
                    self.columns.append(name)
                    self.units.append(unit)
        index = {name: j for j, name in enumerate(self.columns)}
        out = np.full((sum(len(p) for p in parts), len(self.columns)), np.nan)
        row = 0
        for part, run_names in zip(parts, names):
            out[row:row + len(part), [index[name] for name in run_names]] = part
            row += len(part)
        return out

    def summary(self, topic: str) -> dict:
        """Return what ``summary.json`` says of the weights followed."""
        return {'followed': True, 'topic': topic, 'messages': int(len(self.times)),
                'changes': self.change_count, 'listed_changes': self.changes,
                'refused': self.refused_count, 'listed_refused': self.refused,
                'final_weights': dict(zip(self.names, self.follow.weights.tolist()))}


def not_followed(topic: str, reason: str) -> dict:
    """Return what ``summary.json`` says when no weights are followed (every weight 1)."""
    return {'followed': False, 'topic': topic, 'reason': reason}
