"""Internal-load feedback: a PI correction per basis element, added to the prescription (no ROS).

The distributor commands ``lambda = lambda_ref + u``; the analyzer measures ``lambda_meas``
in the same named basis. Per element ``j`` and per new measurement ``k`` (``dt_k`` the
steady time since the previous one, at most the timeout)::

    e_k = lambda_ref - lambda_meas_k
    I_k = clip(I_{k-1} + ki * e_k * dt_k, +-integral_limit)   (not while saturated outward)
    u_k = clip(kp * e_k + I_k, +-correction_limit)

``u`` is a set of basis coordinates, so its wrench ``E u`` lies in N(G): the resultant is
untouched whatever ``u`` is (docs/theory.md, "Internal-load feedback").

The loop is suspended (the correction held, nothing integrated) while the measurement is
stale, labelled with another basis, or older than the last contact change; the reason is
kept for diagnostics and each suspension is counted. Switching on is bumpless (the integral
starts at ``-kp * e``, so ``u`` starts where it was); switching off ramps ``u`` to zero
over :data:`RELEASE_S` seconds.

A measurement whose health label (:mod:`wrench_distribution.core.doubt`) doubts its sensors
suspends the loop too (counted as ``<prefix>_suspended_sensor``, once per episode): what was
integrated since the doubt's onset is undone (the integral is the one before the first
measurement at or after the onset, from the last :data:`HISTORY` measurements: by their stamps
when the read-outs come with them, as in one process with the analyzer, else by their arrival
on the control clock; and so is the
correction: the internal load's becomes that integral, without the proportional part ``kp *
e``, whose error (after a step of the prescription, the step itself) the doubted sensor no
longer tells; the friction margin keeps all it had, the tighter cones). The correction is then
held (``on_sensor_fault: hold``) or ramps to zero over :data:`RELEASE_S` (``release``). The
next trusted measurement resumes the loop bumplessly.

That machinery (staleness, suspension, counters, bumpless switching, the PI with
conditional integration) is :class:`PILoop`; :class:`InternalLoadFeedback` adds the
internal load's labels and error, and the friction feedback (:mod:`.friction_feedback`)
its own on the same loop.
"""
from collections import deque
from dataclasses import dataclass
from typing import Dict, Optional, Sequence

import numpy as np

from wrench_distribution.core.doubt import ONSET_AGE_RESOLUTION_NS, parse_doubt_label, TRUSTED_LABEL

#: Seconds over which the correction returns to zero after the feedback is switched off.
RELEASE_S = 1.0
#: Measurements whose loop state is kept, to hold the correction at a doubt's onset (4 s at 1 kHz).
HISTORY = 4096


def bounded(values: np.ndarray, low, high) -> np.ndarray:
    """Return ``values`` clipped to ``[low, high]`` (np.clip without its per-call overhead)."""
    return np.minimum(np.maximum(values, low), high)


@dataclass
class FeedbackGains:
    """Gains and limits of the PI law.

    :param kp: proportional gain, one value for all elements or one per element.
    :param ki: integral gain (1/s), one value or one per element.
    :param integral_limit: largest |integral term| (the elements' units).
    :param correction_limit: largest |correction| (the elements' units).
    :param timeout_ns: a measurement older than this (steady clock) is stale.
    :param lowest: smallest correction (None: ``-correction_limit``, a symmetric range).
    :param gain_names: the parameters holding ``kp`` and ``ki`` (for messages).
    :param on_sensor_fault: ``hold`` or ``release`` the correction while a sensor is in doubt.
    """

    kp: Sequence[float]
    ki: Sequence[float]
    integral_limit: float
    correction_limit: float
    timeout_ns: int
    lowest: Optional[float] = None
    gain_names: tuple = ('feedback_kp', 'feedback_ki')
    on_sensor_fault: str = 'hold'

    @property
    def bounds(self) -> tuple:
        """Return ``(lowest, highest)`` correction."""
        low = -self.correction_limit if self.lowest is None else self.lowest
        return low, self.correction_limit

    def per_element(self, m: int) -> tuple:
        """Return ``(kp, ki)`` as (m,) arrays.

        :param m: number of basis elements.
        :return: the two arrays.
        :raises ValueError: when a gain array has neither 1 nor m values.
        """
        out = []
        for name, values in zip(self.gain_names, (self.kp, self.ki)):
            values = np.asarray(values, float).reshape(-1)
            if values.size not in (1, m):
                raise ValueError(f"parameter '{name}' has {values.size} values, the basis has "
                                 f'{m}: give one value for all elements or one per element')
            out.append(np.broadcast_to(values, (m,)).copy())
        return tuple(out)


class LoopHistory:
    """The loop's state before each of its last :data:`HISTORY` updates, by control-clock time.

    Each state also keeps the stamp of the measurement that updated the loop, when it is known
    (a read-out taken in the analyzer's process: :meth:`PILoop.update`): an onset dated on the
    same stamps finds its update exactly, whatever the latencies.
    """

    def __init__(self) -> None:
        self._states: deque = deque(maxlen=HISTORY)

    def record(self, clock_ns: int, correction: np.ndarray, integral: np.ndarray,
               stamp_ns: Optional[int] = None) -> None:
        """Keep the state before an update at ``clock_ns`` (the arrays are replaced, not changed).

        :param stamp_ns: the stamp of the measurement making the update, or None (unknown).
        """
        self._states.append((clock_ns, correction, integral, stamp_ns))

    def clear(self) -> None:
        """Forget every state (the elements changed)."""
        self._states.clear()

    def before(self, clock_ns: int, stamp_ns: Optional[int] = None) -> Optional[tuple]:
        """Return ``(correction, integral)`` before the first update at or after ``clock_ns``.

        One update earlier than that when the updates' last spacing says the measurement taken
        at ``clock_ns`` may have come a little early (one at most: a late last update, its
        process stalled, makes that spacing long); the oldest kept when all are later; None when
        no update came at or after it.

        :param stamp_ns: the onset on the measurements' stamps, or None: when every kept state
            has its stamp, the state before the first update whose measurement was stamped at
            or after it (to the label's ``ONSET_AGE_RESOLUTION_NS``), the control clock unused.
        """
        states = self._states
        if stamp_ns is not None and states and all(state[3] is not None for state in states):
            return self._before_stamp(stamp_ns - ONSET_AGE_RESOLUTION_NS)
        if not states or states[-1][0] < clock_ns:
            return None
        spacing = states[-1][0] - states[-2][0] if len(states) > 1 else 0
        found, earlier = states[0], None
        for state in reversed(states):
            if state[0] < clock_ns:
                earlier = state
                break
            found = state
        if earlier is not None and earlier[0] >= clock_ns - spacing:
            found = earlier
        return found[1], found[2]

    def _before_stamp(self, stamp_ns: int) -> Optional[tuple]:
        """Return the state before the first update whose measurement was stamped at or after ``stamp_ns``."""
        found = None
        for state in reversed(self._states):
            if state[3] < stamp_ns:
                break
            found = state
        return None if found is None else (found[1], found[2])


class PILoop:
    """A PI loop on measurements that may go stale, be refused, or lose their geometry.

    The subclasses say what is measured (:attr:`what`), how it is labelled, and turn a
    message into an error; this class holds the correction ``u`` (``size`` elements) and
    everything around it: staleness, suspension (reason kept, counted under
    ``<prefix>_...`` keys), bumpless switching on and off, anti-windup.

    :param gains: gains and limits.
    :param enabled: whether the loop starts closed.
    """

    #: what the loop measures (diagnostic messages)
    what = 'measurement'
    #: prefix of the counter keys and of the timeout parameter's name
    prefix = 'feedback'
    #: keep ``kp * e + I`` inside the correction's bounds (tracking anti-windup): after a
    #: large error the integral does not hold the correction at a bound for long
    tracking = False
    #: the parameter bounding the correction (messages)
    limit_name = 'feedback_correction_limit'
    #: on a doubt, hold the integral alone (:meth:`doubted`), not ``kp * e + I``
    hold_integral = False

    def __init__(self, gains: FeedbackGains, enabled: bool = False) -> None:
        self.gains = gains
        self.enabled = enabled
        self.names: list = []
        self.size = 0
        self.kp = self.ki = np.zeros(0)
        self.integral = np.zeros(0)
        self.correction = np.zeros(0)
        self.error = np.zeros(0)
        self.at_limit = np.zeros(0, bool)   # elements whose correction sits at its limit
        self.measured: Optional[np.ndarray] = None
        self.counters: Dict[str, int] = {}
        self.suspended: Optional[str] = 'no measurement yet'
        self.gain_error: Optional[str] = None
        self._last_ns: Optional[int] = None   # steady time of the last measurement used
        self._last_clock_ns: Optional[int] = None   # its control-clock time (the PI's dt)
        self._wait_ns: Optional[int] = None   # since when the loop waits for one (absent)
        self._released_ns: Optional[int] = None
        self._released_from = np.zeros(0)
        self._rebumpless = enabled
        self.history = LoopHistory()
        #: the doubt the loop is suspended on (:mod:`wrench_distribution.core.doubt`), or None
        self.doubt = None
        self._doubt_ns = 0  # steady time the suspension began (the release ramp's start)

    # -- configuration ------------------------------------------------------------------
    def set_basis(self, names: Sequence[str], now_ns: int, size: Optional[int] = None) -> None:
        """Adopt the labels of a new solver (the contacts changed).

        The correction is kept when the labels are the same (it is a set of coordinates
        of the same elements), otherwise reset to zero; in both cases the loop waits for a
        measurement taken after ``now_ns``.

        :param names: the labels a measurement must carry.
        :param now_ns: steady time of the change.
        :param size: number of elements of the correction (None: one per label).
        """
        names = list(names)
        if names != self.names:
            m = len(names) if size is None else size
            self.names, self.size = names, m
            self.integral = np.zeros(m)
            self.correction = np.zeros(m)
            self.error = np.zeros(m)
            self.at_limit = np.zeros(m, bool)
            self._released_from = np.zeros(m)
            self.measured = None
            self.history.clear()
            self.set_gains(self.gains)  # per element again
        self._rebumpless = True
        if self._last_ns is not None:
            self._suspend('contacts changed: waiting for a measurement in the new geometry',
                          f'{self.prefix}_suspended_contacts')
        self._last_ns = self._last_clock_ns = None
        self._wait_ns = now_ns

    def set_gains(self, gains: FeedbackGains) -> None:
        """Adopt new gains (bumpless: the integral is re-seeded to keep the correction).

        :param gains: the new gains and limits.
        """
        self.gains = gains
        try:
            self.kp, self.ki = gains.per_element(self.size)
            self.gain_error = None
        except ValueError as error:
            self.kp = self.ki = np.zeros(self.size)
            self.gain_error = str(error)
        limit = gains.integral_limit
        self.integral = np.clip(self.integral, -limit, limit)
        self._rebumpless = True

    def set_enabled(self, enabled: bool, now_ns: int) -> None:
        """Switch the loop on or off at runtime, bumplessly.

        :param enabled: the new state.
        :param now_ns: steady time of the switch.
        """
        if enabled == self.enabled:
            return
        if enabled:
            self.correction = self.current(now_ns).copy()  # what the release ramp left
        self.enabled = enabled
        if enabled:
            self._released_ns = None
            self._rebumpless = True
            self._wait_ns = now_ns
        else:
            self._released_ns = now_ns
            self._released_from = self.correction.copy()
            self.integral = np.zeros(self.size)

    # -- the law --------------------------------------------------------------------------
    def update(self, measured: np.ndarray, error: np.ndarray, now_ns: int,
               saturated: bool = False, clock_ns: int = 0, stamp_ns: Optional[int] = None) -> None:
        """Take one accepted measurement and update the correction.

        :param measured: what was measured (kept for diagnostics).
        :param error: the PI's error, (size,).
        :param now_ns: steady receive time.
        :param saturated: True when the last commands were cut back by a limit (the
            integral then does not grow in the direction that made them so).
        :param clock_ns: the control clock (the node's, sim time under ``use_sim_time``), on
            which the PI integrates; 0 when unknown: the steady time is used.
        :param stamp_ns: the measurement's stamp when known (a doubt's onset is then found on
            the stamps, :class:`LoopHistory`), else None.
        """
        self.measured = np.array(measured, float)
        self.error = np.asarray(error, float)
        clock_ns = clock_ns if clock_ns > 0 else now_ns
        dt = 0.0 if self._last_clock_ns is None else min(
            clock_ns - self._last_clock_ns, self.gains.timeout_ns) * 1e-9
        self._last_ns, self._last_clock_ns = now_ns, clock_ns
        if self.doubt is not None:  # trusted again: on from what the hold or the ramp left
            self.correction = self.current(now_ns).copy()
            self.doubt = None
        self.suspended = None
        if not self.enabled or self.gain_error is not None:
            return
        self.history.record(clock_ns, self.correction, self.integral, stamp_ns)
        self._integrate(max(dt, 0.0), saturated)

    def doubted(self, label: Optional[str], measured: np.ndarray, now_ns: int,
                clock_ns: int = 0, stamp_ns: Optional[int] = None) -> Optional[bool]:
        """Suspend the loop while a measurement's health label doubts its sensors.

        Entering the doubt undoes what was integrated since its onset (the module docstring)
        and counts the suspension; the correction is then held, or ramps to zero
        (``on_sensor_fault``).

        :param label: the measurement's health label (None: none, trusted).
        :param measured: what was measured (shown in the diagnostics).
        :param now_ns: steady receive time.
        :param clock_ns: the control clock (0: unknown, the steady time is used).
        :param stamp_ns: the measurement's stamp when known, else None (:meth:`update`).
        :return: False when trusted (the caller updates the loop), True when the loop is
            suspended on it, None when the label is malformed (refused, counted).
        """
        if label is None or label == TRUSTED_LABEL:
            return False
        try:
            doubt = parse_doubt_label(label)
        except ValueError as error:
            self._refuse(f'{self.what}: {error}', 'rejected_health')
            return None
        clock_ns = clock_ns if clock_ns > 0 else now_ns
        if self.doubt is None and self.enabled:
            self.counters[f'{self.prefix}_suspended_sensor'] = \
                self.counters.get(f'{self.prefix}_suspended_sensor', 0) + 1
            age_ns = int(doubt.onset_age_s * 1e9)
            state = self.history.before(clock_ns - age_ns, None if stamp_ns is None else stamp_ns - age_ns)
            if state is not None:
                self.correction, self.integral = state
            if self.hold_integral:
                self.correction = bounded(self.integral, *self.gains.bounds)
            self._doubt_ns = now_ns
        self.doubt = doubt
        self.measured = np.array(measured, float)
        self._last_ns, self._last_clock_ns = now_ns, clock_ns
        action = (f'held at its {"integral" if self.hold_integral else "value"} at the onset'
                  if self.gains.on_sensor_fault == 'hold' else
                  f'released to zero in {RELEASE_S:g} s')
        self.suspended = f'sensors in doubt: {doubt.describe()}: correction {action}'
        self._rebumpless = True
        return True

    def _integrate(self, dt: float, saturated: bool) -> None:
        """One PI update (the module docstring's law), with anti-windup."""
        g = self.gains
        low, high = g.bounds
        kp_error = self.kp * self.error
        if self._rebumpless:  # bumpless start: u stays where it was
            self.integral = bounded(self.correction - kp_error, -g.integral_limit,
                                    g.integral_limit)
            self._rebumpless = False
            dt = 0.0
        step = self.ki * self.error * dt
        unclipped = kp_error + self.integral
        integral = self.integral + step
        # conditional integration: no growth outward while the output is saturated (the
        # test is skipped in the common case, nothing saturated: nothing is frozen then)
        if saturated or (unclipped >= high).any() or (unclipped <= low).any():
            outward = np.sign(step) == np.sign(unclipped)
            frozen = (((step > 0) & (unclipped >= high)) | ((step < 0) & (unclipped <= low))
                      | (outward & saturated))
            integral = np.where(frozen, self.integral, integral)
        if self.tracking:  # the integral follows the bounds: no memory of a saturated past
            integral = bounded(integral, low - kp_error, high - kp_error)
        self.integral = bounded(integral, -g.integral_limit, g.integral_limit)
        self.correction = bounded(kp_error + self.integral, low, high)
        self.at_limit = np.abs(self.correction) >= g.correction_limit
        if self.at_limit.any():  # the target is out of reach: counted and in the status
            key = f'{self.prefix}_at_limit'
            self.counters[key] = self.counters.get(key, 0) + 1

    def _refuse(self, why: str, key: str) -> str:
        """Refuse a measurement: count it, suspend the loop, return why."""
        key = f'{self.prefix}_{key}'
        self.counters[key] = self.counters.get(key, 0) + 1
        self.suspended = why
        self._rebumpless = True
        return why

    def _suspend(self, why: str, key: str) -> None:
        """Suspend the loop (counted once per suspension); the next use re-seeds bumplessly."""
        if self.suspended is None or self.suspended == 'no measurement yet':
            self.counters[key] = self.counters.get(key, 0) + 1
        self.suspended = why
        self._rebumpless = True

    @property
    def active(self) -> bool:
        """Tell whether a correction may be non-zero (on, or releasing after off)."""
        return self.enabled or self._released_ns is not None

    def current(self, now_ns: int) -> np.ndarray:
        """Return the correction to add now (checks staleness; ramps down when off).

        :param now_ns: steady time.
        :return: (size,) correction.
        """
        if not self.enabled:
            if self._released_ns is None:
                return np.zeros(self.size)
            left = 1.0 - (now_ns - self._released_ns) * 1e-9 / RELEASE_S
            if left <= 0.0:
                self._released_ns = None  # released: nothing more to add
            return self._released_from * max(0.0, left)
        if self.doubt is not None and self.gains.on_sensor_fault == 'release':
            return self.correction * max(0.0, 1.0 - (now_ns - self._doubt_ns) * 1e-9 / RELEASE_S)
        since = self._last_ns if self._last_ns is not None else self._wait_ns
        if since is not None and now_ns - since > self.gains.timeout_ns:
            self._suspend((f'{self.what} stale' if self._last_ns is not None else
                           f'no {self.what}') + f' for > {self.prefix}_timeout '
                          f'{self.gains.timeout_ns * 1e-9:g} s: correction held',
                          f'{self.prefix}_suspended_stale')
            self._last_ns = self._last_clock_ns = self._wait_ns = None
        return self.correction

    def backed_off(self, correction: np.ndarray) -> None:
        """Record the correction actually applied after a limit cut it back.

        :param correction: what was applied instead of :attr:`correction`.
        """
        self.correction = np.asarray(correction, float).copy()
        self._rebumpless = True

    def status(self) -> str:
        """Return one line for diagnostics.

        :return: e.g. ``closed loop``, ``closed loop, correction at feedback_correction_limit
            20 on squeeze(a,b)`` or ``suspended: measured internal load stale``.
        """
        if not self.enabled:
            return 'off'
        if self.gain_error is not None:
            return f'suspended: {self.gain_error}'
        if self.suspended is not None:
            return f'suspended: {self.suspended}'
        if self.at_limit.any():
            where = [name for name, hit in zip(self.names, self.at_limit) if hit] \
                if len(self.names) == self.size else []  # one margin for all effectors
            return (f'closed loop, correction at {self.limit_name} {self.gains.correction_limit:g}'
                    + (f' on {", ".join(where)}' if where else ''))
        return 'closed loop'


class InternalLoadFeedback(PILoop):
    """The PI correction of the internal load, element by element (module docstring).

    :param gains: gains and limits.
    :param enabled: whether the loop starts closed.
    """

    what = 'measured internal load'
    #: the integral is what the loop learned the plant needs; the proportional part answered
    #: the error of the moment (after a step of the prescription, the step itself), which the
    #: doubted sensor no longer tells: held, it would stay in the commands as an offset
    hold_integral = True

    def __init__(self, gains: FeedbackGains, enabled: bool = False) -> None:
        super().__init__(gains, enabled)
        self.reference: Optional[np.ndarray] = None

    def measure(self, names: Optional[Sequence[str]], values: np.ndarray,
                reference: Optional[np.ndarray], now_ns: int,
                saturated: bool = False, clock_ns: int = 0,
                health: Optional[str] = None, stamp_ns: Optional[int] = None) -> Optional[str]:
        """Take one measurement and update the correction.

        :param names: the message's labels (None: unlabelled).
        :param values: the measured coordinates.
        :param reference: the internal load commanded before the correction (None: zero).
        :param now_ns: steady receive time.
        :param saturated: True when the last commands were cut back by a limit.
        :param clock_ns: the control clock (0: unknown, the steady time is used).
        :param health: the measurement's health label (None: none; :meth:`doubted`).
        :param stamp_ns: the measurement's stamp when known (the sample's), else None.
        :return: None, or why the measurement was refused.
        """
        why = self._refusal(names, values)
        if why is not None:
            return why
        m = len(self.names)
        self.reference = np.zeros(m) if reference is None else np.asarray(reference, float)
        values = np.asarray(values, float)
        doubted = self.doubted(health, values, now_ns, clock_ns, stamp_ns)
        if doubted is None:
            return self.suspended
        if not doubted:
            self.update(values, self.reference - values, now_ns, saturated, clock_ns, stamp_ns)
        return None

    def _refusal(self, names, values: np.ndarray) -> Optional[str]:
        """Why a measurement cannot be used (counted), or None."""
        if names is None:
            return self._refuse('measured internal load has no basis labels (layout '
                                f'dim[0].label); expected {";".join(self.names)}',
                                'rejected_basis')
        if list(names) != self.names:
            return self._refuse(f'measured internal load is in another basis '
                                f'({";".join(names)}); expected {";".join(self.names)}',
                                'rejected_basis')
        if values.shape != (len(self.names),) or not np.all(np.isfinite(values)):
            return self._refuse('measured internal load has NaN, Inf or a wrong length',
                                'rejected_values')
        return None
