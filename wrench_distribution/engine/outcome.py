"""What one desired wrench produced: everything the distributor node publishes for it (no ROS).

:meth:`~.distribution.DistributionEngine.step` answers a desired wrench with one
:class:`Outcome`, as tf2's buffer answers a lookup whole: the commands (or none), the drop
with its counter and concern, auto mode's added internal load, and the markers when they
are due. The node converts and publishes; it reads nothing else of the engine.
"""
from dataclasses import dataclass, replace
from typing import Callable, Optional, Sequence

import numpy as np

from .status import ERROR, WARN


@dataclass
class MarkerData:
    """What the RViz markers show (``~/markers``), in the object frame.

    :param positions: (n, 3) contact positions.
    :param wrenches: (n, 6) the commanded wrenches, object axes about each contact.
    :param resultant: (6,) the wrench the effectors apply (the object's weight added).
    :param com: the centre of mass.
    :param names: effector names.
    :param colors: one ``(r, g, b)`` per effector from the friction check, or None.
    :param scale: metres per newton.
    """

    positions: np.ndarray
    wrenches: np.ndarray
    resultant: np.ndarray
    com: Sequence[float]
    names: Sequence[str]
    colors: Optional[list]
    scale: float


@dataclass
class FrictionLoad:
    """Auto mode's added internal load, as the friction topic carries it.

    :param basis: the basis names (the layout's label).
    :param values: the coordinates.
    """

    basis: Sequence[str]
    values: list


@dataclass
class Outcome:
    """What one desired wrench produced.

    :param commands: (n, 6) commands to publish, or None.
    :param cause: None when the input was used as is; else the drop cause (``nan``,
        ``frame``, ``future``, ``no_contacts``, ``internal_load``, ``unrealisable``,
        ``rejected``, ``solver_nan``, ``limit``, ``friction``).
    :param message: what happened, with the figures.
    :param concern: the diagnostics concern.
    :param key: the counter it adds to (by name).
    :param level: its diagnostic level.
    :param friction_load: auto mode's added load with these commands, or None.
    :param markers: the markers when due (``markers_period``), or None.
    """

    commands: Optional[np.ndarray]
    cause: Optional[str] = None
    message: str = ''
    concern: str = 'input'
    key: str = ''
    level: int = ERROR
    friction_load: Optional[FrictionLoad] = None
    markers: Optional[MarkerData] = None

    @property
    def valid(self) -> bool:
        """Tell whether the input was used as is (it resets the watchdog)."""
        return self.cause is None

    @property
    def is_drop(self) -> bool:
        """Tell whether the input was dropped (counted by cause) rather than answered by a fallback."""
        return self.cause is not None and self.cause != 'friction'


@dataclass
class Report:
    """What the diagnostics show of the engine: values, per-concern values, conditions, counters.

    :param values: summary key/values.
    :param per_concern: key/values per concern.
    :param conditions: ``{concern: [(level, message)]}``.
    :param counters: counters by name (the feedback loops').
    """

    values: dict
    per_concern: dict
    conditions: dict
    counters: dict


@dataclass
class Refusal:
    """Why an input other than the desired wrench was refused, as the diagnostics count it.

    :param key: the counter (by name).
    :param message: what happened.
    :param level: its diagnostic level.
    :param concern: the concern that shows it.
    :param report: False when counted by the engine alone (a feedback loop that is off).
    """

    key: str
    message: str
    level: int = WARN
    concern: str = 'input'
    report: bool = True

    def __str__(self) -> str:
        """Return the message."""
        return self.message


@dataclass
class ContactUpdate:
    """What new contact poses did.

    :param rebuilt: whether a new solver was built (the poses moved).
    :param basis: its internal-load basis names, or None when they were not built (nothing
        read them: the feedback off and no measurement, :meth:`.InternalLoadStage.follow`).
    :param refusal: the poses rejected, or the prescription rejected on the new solver.
    """

    rebuilt: bool = False
    basis: Optional[Sequence[str]] = ()
    refusal: Optional[Refusal] = None


class OutputStage:
    """What goes with the commands: auto mode's added load, and the markers when due.

    :param settings: the output settings (``publish_markers``, ``markers_period``, ...).
    """

    def __init__(self, settings) -> None:
        self.settings = settings
        self.last_marker_ns: Optional[int] = None

    def configure(self, settings) -> None:
        """Adopt new output settings (runtime parameters)."""
        self.settings = settings

    def attach(self, outcome: Outcome, friction_load: Optional[FrictionLoad],
               markers: Callable[[], Optional[MarkerData]], mono_ns: int,
               markers_read: bool = True) -> Outcome:
        """Return an outcome with commands, with auto mode's load and, when due, the markers.

        :param outcome: the outcome, with commands.
        :param friction_load: auto mode's added load with these commands, or None.
        :param markers: makes the markers (called only when they are due).
        :param mono_ns: steady time (``markers_period``).
        :param markers_read: whether the markers have a reader (False: none are made).
        :return: the outcome with them.
        """
        s = self.settings
        due = s.markers and markers_read and outcome.valid and (
            self.last_marker_ns is None or mono_ns - self.last_marker_ns >= s.markers_period_ns)
        if due:
            self.last_marker_ns = mono_ns
        if friction_load is None and not due:
            return outcome
        return replace(outcome, friction_load=friction_load, markers=markers() if due else None)

    def markers(self, cache, resultant: np.ndarray, internal_load: Optional[np.ndarray],
                colors: Optional[list]) -> Optional[MarkerData]:
        """Return what the markers show: the commands of a desired wrench with an internal load.

        :param cache: the solver cache (the solver, the contact positions, the names).
        :param resultant: the wrench the effectors apply (the object's weight added).
        :param internal_load: the applied internal load last commanded, or None.
        :param colors: one colour per effector (the friction check), or None.
        :return: the marker data, or None when the solver refuses the wrench.
        """
        from wrench_distribution.core import WrenchDistributionError
        try:
            syn = cache.distributor.synthesize(resultant, internal_load)
        except WrenchDistributionError:
            return None
        s = self.settings
        return MarkerData(cache.positions, syn.wrench_object, resultant, s.object_com, cache.names,
                          colors, s.marker_scale)
