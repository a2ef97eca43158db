"""The distribution engine's contact weights: targets, the ramp, the check before a change (no ROS).

docs/theory.md, section 16. Each effector's contact has a weight in ``[0, 1]`` (1 its full
share, 0 released: its command exactly zero). The engine commands with the *actual* weights,
which move toward the *targets* (the parameter ``contact_weights`` or the topic of the same
name) no faster than ``contact_transition_time``: at each desired wrench by at most
``dt / T``, with ``dt`` the time between its stamp and the previous one (at most
:data:`MAX_STEP_NS`: a pause in the stream never becomes a jump). The commands are
multilinear in the weights (16.4), so a ramp of ``N`` ticks moves each command by at most
``L_i / N`` per tick.

A new target is checked when it is requested, from the actual weights to it
(:func:`~wrench_distribution.core.release.check_transition`, 16.6): every contact subset the
ramp passes through must carry the last desired wrench and, when the object's mass is known,
its weight alone (what ``on_timeout: hold_object_weight`` commands); refused, nothing changes and the
reason is reported. While friction's auto mode finds no squeeze, the ramp waits (an ERROR says
why) instead of going on with commands that slip.
"""
from typing import Optional, Sequence

import numpy as np

from wrench_distribution.config.settings import ContactWeightSettings
from wrench_distribution.core.codec import format_numbers
from wrench_distribution.core.contact_weights import check_weights
from wrench_distribution.core.errors import InvalidInputError
from wrench_distribution.core.release import check_transition
from .outcome import Refusal
from .status import ERROR

#: The longest time between two desired wrenches that a ramp counts (100 ms).
MAX_STEP_NS = 100_000_000


def loads_to_carry(carried: Optional[np.ndarray], weight, friction) -> tuple:
    """Return what a change of weights must carry and the cones' margin (:meth:`ContactWeights.check`).

    :param carried: the last wrench the effectors applied (object frame, about the CoM), or None.
    :param weight: the engine's ``ObjectWeight``: its weight alone when the mass is known (what
        ``on_timeout: hold_object_weight`` commands).
    :param friction: the friction settings (the margin counts in auto mode).
    :return: ``(loads (k, 6), margin)``.
    """
    loads = [w for w in (carried, weight.weight_wrench() if weight.mass > 0 else None) if w is not None]
    return np.array(loads or [np.zeros(6)]), friction.margin if friction.mode == 'auto' else 0.0


def weights_from_message(names: Sequence[str], labels: Optional[Sequence[str]], values,
                         current: np.ndarray) -> np.ndarray:
    """Targets from a labelled ``contact_weights`` message; the effectors it does not name keep theirs.

    :param names: the effectors.
    :param labels: the layout's labels (effector names), or None.
    :param values: one value per label.
    :param current: the targets in force (n,).
    :return: the targets asked (a new array, not yet checked against the contacts).
    :raises ValueError: unlabelled, an unknown or repeated name, another count, NaN.
    """
    if not labels:
        raise ValueError('contact_weights message has no layout label: it must name the '
                         f'effectors it sets (of {", ".join(names)}, joined by ";")')
    values = np.asarray(values, float).reshape(-1)
    unknown = [label for label in labels if label not in names]
    if unknown or len(set(labels)) != len(labels) or len(labels) != values.size:
        raise ValueError(f'contact_weights message labels {";".join(labels)} with {values.size} '
                         f'values: each label must be one of {", ".join(names)}, at most once, '
                         'one value each')
    if not np.isfinite(values).all():
        raise ValueError('contact_weights message contains NaN or Inf')
    target = np.array(current, float)
    target[[list(names).index(label) for label in labels]] = values
    return target


class ContactWeights:
    """The contact weights of one distributor and the solver cache they are applied to (module docstring).

    :param settings: the targets at start-up and the transition time.
    :param cache: the engine's solver cache (its contacts' latest poses; rebuilt at new weights).
    """

    def __init__(self, settings: ContactWeightSettings, cache) -> None:
        self.cache = cache
        self.names = list(cache.names)
        #: (n,) the weights asked, and the ones the commands use now.
        self.target = np.array(settings.targets, float)
        self.actual = self.target.copy()
        self.transition_ns = settings.transition_ns
        self.source = 'parameter'
        #: the last request refused, shown as an ERROR until one is accepted
        self.refused: Optional[str] = None
        #: why the ramp waits (friction's auto mode found no squeeze), or None
        self.paused: Optional[str] = None
        self.counters = {'refused_weight_changes': 0}
        self._stamp: Optional[int] = None

    def configure(self, settings: ContactWeightSettings) -> None:
        """Adopt a new transition time (a runtime change; the targets come through :meth:`adopt`)."""
        self.transition_ns = settings.transition_ns

    @property
    def moving(self) -> bool:
        """Tell whether some actual weight is not at its target."""
        return self.actual.tolist() != self.target.tolist()  # on every tick: lists compare fastest

    def check(self, target, loads: np.ndarray, margin: float) -> np.ndarray:
        """Check a target against the contacts, from the actual weights (docs/theory.md, 16.6).

        :param target: (n,) weights asked.
        :param loads: (k, 6) what the contacts must carry (object frame, about the CoM).
        :param margin: the friction margin of the cones.
        :return: the checked target.
        :raises ValueError: why it is refused (the weights stay).
        """
        cache = self.cache
        try:
            target = check_weights(target, len(self.names), self.names)
        except InvalidInputError as error:
            raise ValueError(str(error)) from None
        if not target.any():
            raise ValueError('every weight 0: no contact would carry the object')
        if cache.distributor is None or np.array_equal(target, self.actual):
            return target  # no commands yet, or nothing moves: the poses are checked when they come
        absent = [name for name, w, pose in zip(self.names, target, cache.known) if w > 0 and np.isnan(pose[0])]
        if absent:
            raise ValueError(f'no pose of {", ".join(absent)} yet: a contact returns where it is')
        try:
            verdict = check_transition(cache.layout.arrays(*cache.latest()), cache.object_model, cache.options,
                                       self.actual, target, loads, margin)
        except InvalidInputError as error:
            raise ValueError(str(error)) from None
        if not verdict.allowed:
            raise ValueError(verdict.message.replace('refused: ', '', 1))
        return target

    def planned(self, change, loads: np.ndarray, margin: float) -> Optional[np.ndarray]:
        """Check the targets of a runtime change of ``contact_weights`` (None: it sets none).

        :param change: the configuration's change.
        :raises ValueError: naming the parameter, why it is refused, and that the weights stay.
        """
        if 'contact_weights' not in change.touched:
            return None
        try:
            return self.check(change.config.settings.contact_weights.targets, loads, margin)
        except ValueError as error:
            raise ValueError(f"parameter 'contact_weights': {error}; the weights in force stay") from None

    def offer(self, labels: Optional[Sequence[str]], values, loads: np.ndarray, margin: float) -> Optional[Refusal]:
        """Take targets from a labelled message (:func:`weights_from_message`), checked as :meth:`check`.

        :return: None when adopted, else why they were refused (counted; the weights stay).
        """
        try:
            target = self.check(weights_from_message(self.names, labels, values, self.target), loads, margin)
        except ValueError as error:
            self.refuse(str(error))
            return Refusal('refused_weights', f'contact_weights message refused: {error}', ERROR, 'contacts')
        self.adopt(target, 'topic')
        return None

    def adopt(self, target: np.ndarray, source: str) -> None:
        """Move toward checked targets from now on.

        :param target: (n,) from :meth:`check`.
        :param source: ``parameter`` or ``topic``.
        """
        self.target = np.array(target, float)
        self.source = source
        self.refused = None
        self.paused = None

    def refuse(self, message: str) -> None:
        """Count a refused request and keep its reason for the diagnostics (the weights stay)."""
        self.counters['refused_weight_changes'] += 1
        self.refused = message

    def pause(self, why: Optional[str]) -> None:
        """Hold the ramp where it is (why), or let it go on (None)."""
        self.paused = why if self.moving else None

    def advance(self, stamp_ns: int) -> Optional[bool]:
        """Move the actual weights toward the targets for a desired wrench stamped ``stamp_ns``.

        The cache's solver is rebuilt at the new weights.

        :param stamp_ns: its stamp (the ramp's clock: sim time and replays keep their pace).
        :return: None when no weight moved, else whether a contact left or joined the solve.
        :raises ValueError: when the cache cannot build the solver (the weights then stay).
        """
        last, self._stamp = self._stamp, stamp_ns
        if self.paused is not None or not self.moving:
            return None
        if self.transition_ns <= 0:
            step = 1.0
        elif last is None:
            return None
        else:
            step = min(max(stamp_ns - last, 0), MAX_STEP_NS) / self.transition_ns
        if step <= 0.0:
            return None
        gap = self.target - self.actual
        actual = np.where(np.abs(gap) <= step, self.target, self.actual + np.clip(gap, -step, step))
        if self.cache.distributor is not None:
            self.cache.reweigh(actual)
        live = self.actual > 0.0
        self.actual = actual
        return not np.array_equal(live, actual > 0.0)

    def values(self) -> dict:
        """Return the diagnostics key/values: the actual weights, the targets, who set them."""
        out = {'contact_weights': format_numbers(self.actual), 'contact_weight_targets': format_numbers(self.target),
               'contact_weights_source': self.source,
               'released': ', '.join(n for n, w in zip(self.names, self.actual) if w == 0.0) or 'none',
               'in_transition': ', '.join(n for n, a, t in zip(self.names, self.actual, self.target)
                                          if a != t or 0.0 < a < 1.0) or 'none'}
        if self.refused is not None:
            out['last_refused_weights'] = self.refused
        return out

    def conditions(self) -> list:
        """Return the contacts concern's conditions: a refused request, a paused ramp."""
        out = [(ERROR, f'contact weights refused: {self.refused}')] if self.refused else []
        return out + ([(ERROR, f'contact weights paused: {self.paused}')] if self.paused else [])
