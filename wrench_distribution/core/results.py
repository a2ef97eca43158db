"""Result records of synthesis and analysis, and the regime report."""
from dataclasses import dataclass, field, fields
from functools import cached_property
from typing import Callable, Mapping, Optional, Tuple, Union

import numpy as np

#: Human-readable meaning of each regime reason.
REASONS = {
    'com_off_affine_hull': (
        'eq. 64 has no solution: the centre of mass is off the affine hull of the contacts; '
        'virtual masses are those of its projection and the resultant is moved there'
    ),
    'com_outside_hull': (
        "the centre of mass (or its projection) is outside the contacts' convex hull, where eq. 64 "
        "needs negative virtual masses; its offset beyond the contacts' extent was damped and "
        'the masses kept at least MASS_FLOOR, which moves the virtual centre of mass inside'
    ),
    'explicit_masses_off_com': 'the explicit virtual masses do not satisfy eq. 53',
    'full_inertia_unavailable': (
        'mass and inertia are given but eq. 59 has no exact positive solution (in general it '
        'needs at least 10 contacts); eq. 64 was used, or blended continuously with eq. 59 '
        '(the method says how much of each)'
    ),
    'collinear_contacts': (
        'the contacts are (nearly) collinear, so the force inertia of eq. 54 is singular; '
        'the torque about their line is carried by the contact torques'
    ),
    'rank_deficient_grasp': (
        'the grasp matrix G has rank < 6 (point contacts on one line): only resultants in its '
        'range can be produced'
    ),
    'torque_share_without_rigid_contacts': 'torque_share > 0 but no contact is rigid; it was set to 0',
    'contact_weights': (
        'contacts in transition (weights between 0 and 1): the virtual masses are the mixture of '
        'those of the contact subsets, the torque share and the contact torques follow the weights '
        '(docs/theory.md, section 16)'
    ),
    'ill_conditioned_grasp': (
        'the commands are large compared with the resultant (contacts close together, or the '
        'centre of mass far from them): small errors in the resultant become large commands'
    ),
}

#: ``(k, n, 6) applied wrenches -> (invariant_object, invariant_contact, invariant_norm)``.
InvariantSource = Callable[..., Tuple[np.ndarray, np.ndarray, np.ndarray]]


@dataclass(frozen=True)
class Regime:
    """Which formulas applied.

    :param name: ``'paper'`` when Theorem 2 / eq. 81 applies as printed, else ``'extension'``.
    :param reasons: codes of :data:`REASONS` explaining an extension.
    :param message: one readable sentence.
    """

    name: str
    reasons: Tuple[str, ...]
    message: str

    @staticmethod
    def from_reasons(reasons, method: str, details: Optional[Mapping[str, str]] = None) -> 'Regime':
        """Build the report from reason codes.

        :param reasons: iterable of reason codes.
        :param method: how the virtual masses were obtained.
        :param details: figures per reason code, appended to its sentence.
        :return: the regime.
        """
        reasons = tuple(dict.fromkeys(reasons))
        if not reasons:
            return Regime('paper', (), f'Theorem 2, closed form eq. 81 with virtual masses from {method}')
        details = details or {}
        return Regime('extension', reasons, '; '.join(
            REASONS[r] + (f' ({details[r]})' if r in details else '') for r in reasons))


class _Invariant:
    """Mixin: the invariant fields, computed once on first access from ``invariant_source``."""

    invariant_source: Optional[InvariantSource]

    @cached_property
    def _invariant(self) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        applied = self._applied_object()
        single = applied.ndim == 2
        result = self.invariant_source(applied[None] if single else applied)
        return tuple(part[0] for part in result) if single else result

    @property
    def invariant_object(self) -> np.ndarray:
        """Invariant internal load (eq. 78, docs/theory.md 5.3), object axes about each contact."""
        return self._invariant[0]

    @property
    def invariant_contact(self) -> np.ndarray:
        """Invariant internal load in the contact frames."""
        return self._invariant[1]

    @property
    def invariant_norm(self):
        """Magnitude of the invariant load in newtons (same norm as ``internal_load_norm``)."""
        value = self._invariant[2]
        return float(value) if np.ndim(value) == 0 else value


@dataclass(frozen=True)
class Synthesis(_Invariant):
    """Wrench commands for one desired resultant (see docs/core_api.md).

    ``invariant_*`` is the part of the commands no admissible manipulating distribution
    explains; ``along_manipulating_object`` the part of the prescribed internal load that falls
    along ``N_m`` for this resultant (it reads as manipulating, not as internal, eq. 78).
    """

    wrench_contact: np.ndarray
    wrench_object: np.ndarray
    manipulating_object: np.ndarray
    internal_object: np.ndarray
    resultant: np.ndarray
    residual: float
    internal_load: np.ndarray
    regime: Regime
    invariant_source: Optional[InvariantSource] = field(default=None, repr=False, compare=False)

    def _applied_object(self) -> np.ndarray:
        return self.wrench_object

    @property
    def along_manipulating_object(self) -> np.ndarray:
        """Part of the prescribed internal wrench along ``N_m(h_o)`` (n, 6), object axes."""
        return self.internal_object - self.invariant_object


@dataclass(frozen=True)
class BatchSynthesis:
    """Synthesis of k samples: arrays with a leading sample axis."""

    wrench_contact: np.ndarray
    wrench_object: np.ndarray
    resultant: np.ndarray
    residual: np.ndarray
    realisable: np.ndarray


@dataclass(frozen=True)
class _Decomposition(_Invariant):
    """Fields of :class:`Analysis`; :class:`BatchAnalysis` has them with a leading sample axis."""

    resultant: np.ndarray
    manipulating_contact: np.ndarray
    constraint_contact: np.ndarray
    internal_contact: np.ndarray
    manipulating_object: np.ndarray
    constraint_object: np.ndarray
    internal_object: np.ndarray
    internal_load: np.ndarray
    internal_load_norm: Union[float, np.ndarray]
    residual: Union[float, np.ndarray]
    invariant_source: Optional[InvariantSource] = field(default=None, repr=False, compare=False)

    def _applied_object(self) -> np.ndarray:
        return self.manipulating_object + self.internal_object


@dataclass(frozen=True)
class Analysis(_Decomposition):
    """Decomposition of measured contact wrenches (eq. 80) and the internal-load state.

    ``internal_*`` and ``internal_load`` are the linear read-out in the named basis (the wrench
    ``E lambda`` applied by the effectors); ``invariant_*`` the paper's eq. 78 state;
    ``internal_load_norm`` and ``residual`` are floats.
    """


@dataclass(frozen=True)
class BatchAnalysis(_Decomposition):
    """Analysis of k samples: the fields of :class:`Analysis` with a leading sample axis."""

    def sample(self, index: int) -> Analysis:
        """One sample as an :class:`Analysis`.

        :param index: sample index.
        :return: the analysis of that sample.
        """
        values = {f.name: getattr(self, f.name) for f in fields(self) if f.name != 'invariant_source'}
        return Analysis(**{
            name: (float(value[index]) if value.ndim == 1 else value[index]) for name, value in values.items()
        }, invariant_source=self.invariant_source)
