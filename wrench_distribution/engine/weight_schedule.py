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
weights of each sample beside it (``contact_weight``, (k, n)). :class:`MeasuredStates` judges
each contact's measured state against the commanded weights with the rules of
:class:`~.contact_states.ContactStates`, vectorised over a run: the findings and their times go
in the bag's summary.
"""
from typing import Sequence

import numpy as np

from wrench_distribution.core.codec import ns_to_seconds
from wrench_distribution.core.contact_weights import check_weights
from wrench_distribution.core.errors import InvalidInputError
from .contact_states import CARRYING, FollowedWeights, recommand, RELEASED, thresholds
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

    def observe(self, stamps_ns: np.ndarray, contact: np.ndarray, health) -> None:
        """Judge the measured contact states of a run analysed at the weights in force (:class:`MeasuredStates`).

        :param stamps_ns: (k,) the run's stamps.
        :param contact: (k, n, 6) its contact wrenches.
        :param health: the engine's sensor health monitor (the force noise it learned), or None.
        """
        states = self.follow.states
        if states is None:
            return
        noise = np.full(len(self.names), np.nan)
        if health is not None:
            noise = np.asarray(health.checks.learner.noise, float)[:, :3].max(axis=1)
        states.observe(stamps_ns, contact, noise)

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
                'final_weights': dict(zip(self.names, self.follow.weights.tolist())),
                'contact_states': None if self.follow.states is None else self.follow.states.summary()}


def not_followed(topic: str, reason: str) -> dict:
    """Return what ``summary.json`` says when no weights are followed (every weight 1)."""
    return {'followed': False, 'topic': topic, 'reason': reason}


#: the findings of :class:`~.contact_states.ContactStates`, by code (0: as commanded)
FINDINGS = (None, 'did not lift', 'early touchdown', 'lost contact', 'did not touch down')


class MeasuredStates:
    """Each contact's measured state over runs of samples, against the commanded weights (module docstring).

    The rules of :class:`~.contact_states.ContactStates` (hysteresis between the ``loaded`` and
    ``free`` thresholds of the force noise the sensor health checks learned so far, the floor
    ``contact_loaded_force``; the findings), over a run at once.

    :param names: the effectors.
    :param floor: the smallest ``loaded`` threshold (N).
    """

    def __init__(self, names: Sequence[str], floor: float) -> None:
        self.names = list(names)
        n = len(self.names)
        self.floor = float(floor)
        self.loaded = None  # (n,) the last sample's states, None before the first
        self.commanded = [CARRYING] * n
        self.seen_free = np.zeros(n, bool)
        self.seen_loaded = np.zeros(n, bool)
        self.code = np.zeros(n, int)  # the finding in force per contact (FINDINGS)
        self.limits = thresholds(np.full(n, np.nan), self.floor)
        self.listed: list = []
        self.count = 0

    def command(self, weights) -> None:
        """Take the commanded weights; a contact whose commanded state changes is judged anew."""
        self.commanded = recommand(self.commanded, weights, self.loaded, self.seen_free, self.seen_loaded)

    def observe(self, stamps_ns: np.ndarray, contact: np.ndarray, noise) -> None:
        """Judge a run of samples at constant weights; list the findings that begin in it.

        :param stamps_ns: (k,) the samples' stamps.
        :param contact: (k, n, 6) their contact wrenches (only ``|f|`` is read).
        :param noise: (n,) force noise per contact (N; NaN: not learned, the floor).
        """
        forces = np.asarray(contact, float)[..., :3]
        force = np.sqrt((forces * forces).sum(axis=-1))  # |f| to the bit of ContactStates
        self.limits = above, below = thresholds(noise, self.floor)
        before = force[0] >= above if self.loaded is None else self.loaded
        decisive = np.where(force > above, 1, np.where(force < below, 0, -1))
        rows = np.arange(len(force))[:, None]
        last = np.maximum.accumulate(np.where(decisive >= 0, rows, -1), axis=0)
        loaded = np.where(last >= 0, np.take_along_axis(decisive, np.maximum(last, 0), axis=0) == 1, before)
        seen_free = np.logical_or.accumulate(~loaded, axis=0) | self.seen_free
        seen_loaded = np.logical_or.accumulate(loaded, axis=0) | self.seen_loaded
        released = np.array([c == RELEASED for c in self.commanded])
        carrying = np.array([c == CARRYING for c in self.commanded])
        code = np.where(released & loaded, np.where(seen_free, 2, 1),
                        np.where(carrying & ~loaded, np.where(seen_loaded, 3, 4), 0))
        previous = np.concatenate([self.code[None], code[:-1]])
        for row, i in zip(*np.nonzero((code != previous) & (code > 0))):
            self.count += 1
            if len(self.listed) < MAX_LISTED:
                self.listed.append({'time_s': float(ns_to_seconds(int(stamps_ns[row]))), 'contact': self.names[i],
                                    'finding': FINDINGS[code[row, i]], 'commanded': self.commanded[i]})
        self.loaded, self.seen_free, self.seen_loaded, self.code = loaded[-1], seen_free[-1], seen_loaded[-1], code[-1]

    def summary(self) -> dict:
        """Return what ``summary.json`` says of the measured states (``contact_states``)."""
        return {'findings': self.count, 'listed': self.listed,
                'loaded_above': self.limits[0].tolist(), 'free_below': self.limits[1].tolist(),
                'final': {n: ('loaded' if x else 'free') for n, x in zip(self.names, self.loaded)}
                if self.loaded is not None else {}}
