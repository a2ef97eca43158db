"""The analyzer follows the contact weights: the read-out on the loaded contacts, each contact's state (no ROS).

docs/legs_and_hands.md, "The analyzer follows". :class:`FollowedWeights` takes the weights
the distributor applies (its ``contact_weights/actual`` topic, or the same topic in a bag)
and gives them to the analysis engine's solver cache: a released contact (weight 0) is out
of the read-out's solve as it is out of the distributor's, its outputs are zero and the
internal-load basis (the labels of the measured internal load) names the contacts in the
solve only (docs/theory.md, 16.5).

:class:`ContactStates` judges each contact's *measured* state from the size of its contact
force ``|f_i|`` (frame-free), with hysteresis: free -> loaded above :func:`thresholds`'
``loaded``, loaded -> free below ``free``. The thresholds come from the sensor noise
``sigma`` (the largest of the sensor's three force axes): a free contact reads
``|f| = sigma chi_3``, so ``loaded = LOADED_Z sigma`` with ``LOADED_Z`` the ``chi_3``
quantile that gives at most ``FALSE_ALARMS`` false "loaded" over ``DESIGN_SAMPLES`` readings
(the sensor-health design point, docs/theory.md 15.2: 6.83 sigma); ``free = FREE_FRACTION
loaded`` (3.41 sigma: a free contact reads below it at 99.1 % of the samples, and a contact
that carries more than ``free + 6.14 sigma`` = 9.55 sigma never chatters to free at the same
design point). Below ``floor`` (noise not learned yet, or a noiseless simulation) the floor
is the ``loaded`` threshold.

The measured state is compared with the commanded one: weight 1 must be loaded, weight 0
free; a contact in transition (strictly between) is not judged. Diagnostics: ``did not
lift`` (released, loaded, not seen free since its release), ``early touchdown`` (released,
seen free since, loaded again), ``lost contact`` (weight 1, seen loaded since, free now),
``did not touch down`` (weight 1, not seen loaded since).
"""
import math
from typing import Optional, Sequence

import numpy as np
from scipy.stats import chi2

from wrench_distribution.core.codec import format_numbers
from wrench_distribution.core.health import DESIGN_SAMPLES, FALSE_ALARMS
from .status import WARN
from .weights import weights_from_message

#: ``loaded`` threshold over the force noise: the ``chi_3`` quantile of the design point
LOADED_Z = math.sqrt(chi2.isf(FALSE_ALARMS / DESIGN_SAMPLES, 3))
#: ``free`` threshold as a share of ``loaded``: the hysteresis band
FREE_FRACTION = 0.5
#: default smallest ``loaded`` threshold (N): noise not learned yet, or none
DEFAULT_FLOOR = 1.0
#: the commanded states, by weight
RELEASED, CARRYING, MOVING = 'released', 'carrying', 'in transition'


def thresholds(noise, floor: float = DEFAULT_FLOOR) -> tuple:
    """Return the ``loaded`` and ``free`` force thresholds of each contact, (n,) each (N).

    :param noise: (n,) force noise standard deviation per contact (N, the largest force
        axis); NaN: not known (the floor).
    :param floor: the smallest ``loaded`` threshold (N), > 0.
    :return: ``(loaded, free)``, each (n,).
    """
    sigma = np.nan_to_num(np.asarray(noise, float), nan=0.0)
    loaded = np.maximum(LOADED_Z * sigma, floor)
    return loaded, FREE_FRACTION * loaded


def commanded_states(weights) -> list:
    """Return each contact's commanded state: ``released`` (0), ``carrying`` (1), else ``in transition``."""
    return [RELEASED if w == 0.0 else CARRYING if w == 1.0 else MOVING for w in np.asarray(weights, float)]


def recommand(commanded: list, weights, loaded, seen_free, seen_loaded) -> list:
    """Return the commanded states of ``weights``; a contact whose commanded state changes is judged anew.

    :param commanded: the states in force.
    :param loaded: (n,) the measured states, or None before the first sample.
    :param seen_free: (n,) seen free since the commanded state became what it is (updated in place).
    :param seen_loaded: (n,) the same, loaded.
    """
    states = commanded_states(weights)
    for i, (old, new) in enumerate(zip(commanded, states)):
        if old != new:
            known = loaded is not None
            seen_free[i] = known and not loaded[i]
            seen_loaded[i] = known and bool(loaded[i])
    return states


class ContactStates:
    """Each contact's measured state, with hysteresis, against its commanded weight (module docstring).

    :param names: the effectors.
    :param floor: the smallest ``loaded`` threshold (N).
    """

    def __init__(self, names: Sequence[str], floor: float = DEFAULT_FLOOR) -> None:
        self.names = list(names)
        n = len(self.names)
        self.floor = float(floor)
        self._loaded: Optional[list] = None  # per contact: True loaded, False free
        self.commanded = [CARRYING] * n
        # seen free / seen loaded since the commanded state became what it is
        self._seen_free = [False] * n
        self._seen_loaded = [False] * n
        self.limits = thresholds(np.full(n, np.nan), self.floor)
        self._limits = (self.limits[0].tolist(), self.limits[1].tolist())
        #: the current finding per contact (None: as commanded, or not judged)
        self.findings: list = [None] * n
        self.counters = {'contact_state_faults': 0}
        # the findings were judged on the states and the command in force (the seen flags follow)
        self._judged = False

    @property
    def loaded(self) -> Optional[np.ndarray]:
        """(n,) the measured states: True loaded, False free; None before the first sample."""
        return None if self._loaded is None else np.array(self._loaded, bool)

    def command(self, weights) -> None:
        """Take the commanded weights; a contact whose commanded state changes is judged anew."""
        self.commanded = recommand(self.commanded, weights, self._loaded, self._seen_free, self._seen_loaded)
        self._judged = False

    def observe(self, contact: np.ndarray, noise=None) -> list:
        """Update the measured states with one sample; return the findings that begin now.

        Once per analysed sample on the live path: plain Python over the n contacts.

        :param contact: (n, 6) contact wrenches (any frame: only ``|f|`` is read).
        :param noise: (n,) force noise per contact (N), or None: the last given.
        :return: ``[(effector index, finding)]`` of the contacts whose finding starts here.
        """
        if noise is not None:
            self.limits = thresholds(noise, self.floor)
            self._limits = (self.limits[0].tolist(), self.limits[1].tolist())
        loaded_above, free_below = self._limits
        force = [math.sqrt(x * x + y * y + z * z)
                 for x, y, z, _, _, _ in np.asarray(contact, float).tolist()]
        was = self._loaded
        if was is None:
            was = [f >= above for f, above in zip(force, loaded_above)]
        loaded = self._loaded = [not f < below if before else f > above for before, f, above, below
                                 in zip(was, force, loaded_above, free_below)]
        if loaded == was and self._judged:  # the states and the command as judged last: no news
            return []
        self._judged = True
        started = []
        for i, now in enumerate(loaded):
            self._seen_free[i] = self._seen_free[i] or not now
            self._seen_loaded[i] = self._seen_loaded[i] or now
            finding = self._finding(i)
            if finding is not None and finding != self.findings[i]:
                started.append((i, finding))
                self.counters['contact_state_faults'] += 1
            self.findings[i] = finding
        return started

    def _finding(self, i: int) -> Optional[str]:
        """Return how contact ``i``'s measured state differs from the commanded one, or None."""
        loaded, commanded = self._loaded[i], self.commanded[i]
        if commanded == RELEASED and loaded:
            return 'early touchdown' if self._seen_free[i] else 'did not lift'
        if commanded == CARRYING and not loaded:
            return 'lost contact' if self._seen_loaded[i] else 'did not touch down'
        return None

    def message(self, i: int, finding: str) -> str:
        """Say a finding of contact ``i`` in words."""
        expected = 'free (weight 0)' if self.commanded[i] == RELEASED else 'loaded (weight 1)'
        loaded, free = self.limits
        return (f"contact '{self.names[i]}' {finding}: commanded {expected}, measured "
                f"{'loaded' if self._loaded[i] else 'free'} (loaded above {loaded[i]:.3g} N, "
                f'free below {free[i]:.3g} N)')

    def values(self) -> dict:
        """Return the diagnostics key/values: measured and commanded states, the thresholds."""
        measured = ['unknown'] * len(self.names) if self._loaded is None else \
            ['loaded' if x else 'free' for x in self._loaded]
        return {'measured_contact_states': ', '.join(f'{n}: {m}' for n, m in zip(self.names, measured)),
                'commanded_contact_states': ', '.join(f'{n}: {c}' for n, c in zip(self.names, self.commanded)),
                'contact_loaded_above': format_numbers(self.limits[0]),
                'contact_free_below': format_numbers(self.limits[1])}

    def conditions(self) -> list:
        """Return the contacts concern's conditions: one WARN per contact not as commanded."""
        return [(WARN, self.message(i, f)) for i, f in enumerate(self.findings) if f is not None]


class FollowedWeights:
    """The weights the analysis engine's read-out follows (module docstring).

    :param engine: the :class:`~.analysis.AnalysisEngine` (its solver cache is reweighed).
    :param states: the contact states the weights command (:class:`ContactStates`, or a bag's
        :class:`~.weight_schedule.MeasuredStates`), or None.
    """

    def __init__(self, engine, states: Optional[ContactStates] = None) -> None:
        self.engine = engine
        self.names = list(engine.names)
        self.states = states
        self.weights = np.ones(len(self.names))
        #: why the last weights were refused (None after accepted ones)
        self.refused: Optional[str] = None
        self.counters = {'refused_weights': 0}

    def offer(self, labels: Optional[Sequence[str]], values) -> Optional[str]:
        """Follow a labelled weights message (the names it does not give keep theirs).

        :param labels: the layout's labels (effector names), or None.
        :param values: one weight per label.
        :return: None when followed, else why not (counted; the weights in force stay).
        """
        try:
            return self.follow(weights_from_message(self.names, labels, values, self.weights))
        except ValueError as error:
            return self._refuse(f'contact weights not followed: {error}')

    def follow(self, weights) -> Optional[str]:
        """Read out at these weights from now on; None, or why not (the weights in force stay)."""
        try:
            if self.engine.cache.weigh(weights):
                self.engine.rebuilt()
        except ValueError as error:
            return self._refuse(f'contact weights not followed: {error}')
        self.weights = np.array(self.engine.cache.weights, float)
        self.refused = None
        if self.states is not None:
            self.states.command(self.weights)
        return None

    def _refuse(self, message: str) -> str:
        self.counters['refused_weights'] += 1
        self.refused = message
        return message

    def values(self) -> dict:
        """Return the diagnostics key/values: the weights followed, the contacts out of the read-out."""
        out = {'followed_contact_weights': format_numbers(self.weights),
               'released': ', '.join(n for n, w in zip(self.names, self.weights) if w == 0.0) or 'none'}
        if self.refused is not None:
            out['last_refused_weights'] = self.refused
        return out
