"""One contact configuration at its weights, as the engines use a solver (no ROS).

A :class:`WeightedSolver` holds the core's :class:`~wrench_distribution.core.transitions.WeightedDistributor`
of every effector's contact at its pose and weight (docs/theory.md, section 16) and answers as
a ``LoadDistributor`` of all ``n`` effectors would: every per-contact array has ``n`` rows,
zero at a released contact (weight 0, out of the solve). With every weight 1 it is exactly
the ``LoadDistributor`` of the contacts.

The engines' internal-load coordinates are the load *applied* at these weights (eq. 16.7:
``phi . lambda`` for coordinates, handles scaled by the weights of the contacts they name):
what the analyzer reads back. :meth:`WeightedSolver.applied` turns a prescription into them;
:meth:`~WeightedSolver.internal_wrench` takes them as they are. Friction's auto mode adds its
squeeze through :attr:`~WeightedSolver.friction_view`, whose elements carry the scales
``phi``: an element that touches a leaving contact loads it in proportion to its weight, so
the added squeeze never holds on to a contact that is being released.
"""
from dataclasses import fields, replace
from functools import cached_property
from typing import Optional

import numpy as np

from wrench_distribution.core.contact_weights import element_scales
from wrench_distribution.core.contacts import ContactArrays
from wrench_distribution.core.load_distributor import InternalLoad
from wrench_distribution.core.prescription import InternalLoadPrescription
from wrench_distribution.core.results import BatchSynthesis
from wrench_distribution.core.transitions import WeightedDistributor


class WeightedSolver:
    """Synthesis and analysis over every effector at some contact weights (module docstring).

    :param arrays: the contacts at their poses (all ``n``, effector order).
    :param object_model: the object.
    :param options: the distribution options.
    :param weights: (n,) weights in ``[0, 1]``, not all 0.
    :param weighted: the core's distribution of these arrays and weights, when already built.
    :param contacts: the ``Contact`` objects of these arrays, when already built.
    :raises InvalidInputError: as ``WeightedDistributor``.
    """

    def __init__(self, arrays: ContactArrays, object_model, options, weights,
                 weighted: Optional[WeightedDistributor] = None, contacts: Optional[tuple] = None) -> None:
        #: The core's distribution (``weighted``: one already built for these arrays and weights).
        self.weighted = weighted if weighted is not None else WeightedDistributor(arrays, object_model, options,
                                                                                  weights)
        if contacts is not None:  # built already for these arrays (:attr:`contacts` is then not built again)
            self.__dict__['contacts'] = contacts
        self._arrays = arrays
        self.object_model = object_model
        self.options = options
        self.names = list(arrays.names)
        self.n = len(self.names)
        #: (n,) the weights; (n,) the contacts in the solve.
        self.weights, self.live = self.weighted.weights, self.weighted.live
        #: The ``LoadDistributor`` of the contacts in the solve, with their weights.
        self.distributor = self.weighted.distributor
        self._all = bool(self.live.all())
        self._rows = (6 * np.flatnonzero(self.live)[:, None] + np.arange(6)).ravel()

    def moved(self, arrays: Optional[ContactArrays], weights) -> 'WeightedSolver':
        """Return the solver at new poses or weights, reusing what stays (``WeightedDistributor.moved``).

        :param arrays: the contacts at their new poses, or None: the same poses (the maps of the
            contact subsets and the named basis are kept).
        :param weights: (n,) the new weights.
        :return: the new solver (this one is unchanged).
        """
        same = arrays is None and 'contacts' in self.__dict__  # the same contacts at the same poses
        return WeightedSolver(self._arrays if arrays is None else arrays, self.object_model, self.options, weights,
                              self.weighted.moved(arrays, weights), self.contacts if same else None)

    # -- what the engines read -------------------------------------------------------------
    @cached_property
    def contacts(self) -> tuple:
        """Return every effector's contact (``Contact`` objects, built on first access)."""
        return self._arrays.contacts()

    basis_names = property(lambda self: self.distributor.basis_names,
                           doc='Names of the named basis of the contacts in the solve.')
    basis_units = property(lambda self: self.distributor.basis_units, doc='Units of the basis.')
    internal_dimension = property(lambda self: self.distributor.internal_dimension,
                                  doc='Number of basis elements.')
    reference_length = property(lambda self: self.distributor.reference_length,
                                doc='Reference length of the contacts in the solve.')
    regime = property(lambda self: self.distributor.regime, doc='Which formulas applied.')
    gain = property(lambda self: self.distributor.gain, doc='Largest command per unit resultant.')
    live_names = property(lambda self: self.weighted.live_names, doc='Contacts in the solve.')
    released_names = property(lambda self: self.weighted.released_names, doc='Released contacts.')

    @property
    def element_scales(self) -> np.ndarray:
        """``phi`` (m,) of eq. 16.7: the product of the weights of the contacts each element touches."""
        return self.weighted.element_scales

    @cached_property
    def virtual_masses(self) -> np.ndarray:
        """Return the (n,) virtual masses, 0 at the released contacts."""
        return self._per_contact(self.distributor.virtual_masses)

    def _per_contact(self, live_values: np.ndarray) -> np.ndarray:
        """(..., n_live) -> (..., n), zero at the released contacts."""
        out = np.zeros(live_values.shape[:-1] + (self.n,))
        out[..., self.live] = live_values
        return out

    def _stacked(self, live_rows: np.ndarray) -> np.ndarray:
        """(..., 6 n_live) -> (..., 6 n), zero at the released contacts."""
        if self._all:
            return live_rows
        out = np.zeros(live_rows.shape[:-1] + (6 * self.n,))
        out[..., self._rows] = live_rows
        return out

    def _wrenches(self, live_wrenches: np.ndarray) -> np.ndarray:
        """(..., n_live, 6) -> (..., n, 6), zero rows at the released contacts."""
        shape = live_wrenches.shape[:-2]
        return self._stacked(live_wrenches.reshape(shape + (-1,))).reshape(shape + (self.n, 6))

    # -- internal load -----------------------------------------------------------------------
    def applied(self, prescription: InternalLoadPrescription) -> Optional[np.ndarray]:
        """Coordinates of the load a prescription applies at these weights (eq. 16.7), or None.

        :param prescription: coordinates (scaled by ``phi``) or handles (each scaled by the
            weights of the contacts it names: 0 on a released contact).
        :return: (m,) applied coordinates, or None for no internal load.
        :raises ValueError: when it does not fit the basis (the message names it).
        """
        lam = prescription.resolve(self)
        if lam is None or prescription.kind != 'coords':
            return lam
        return self.element_scales * lam

    def internal_load_from_handles(self, handles) -> np.ndarray:
        """Return the applied coordinates of physical handles at these weights (any contact may be named).

        :param handles: ``{'squeeze(lf,rh)': 20.0, ...}``.
        :return: (m,) coordinates.
        """
        return self.weighted.applied_load(dict(handles))

    @cached_property
    def _basis(self) -> tuple:
        """``E`` (6n, m) in the contact frames and in object axes, zero rows at released contacts."""
        return tuple(self._stacked(self.distributor.internal_basis(frame).T).T for frame in (False, True))

    def internal_basis(self, object_frame: bool = False) -> np.ndarray:
        """``E`` (6n, m): the stacked wrench of each element (applied coordinates).

        :param object_frame: object axes instead of the contact frames.
        :return: the matrix.
        """
        return self._basis[int(object_frame)]

    def internal_wrench(self, applied: InternalLoad, object_frame: bool = False) -> np.ndarray:
        """Stacked (6n,) wrench of applied coordinates (or handles, scaled as :meth:`applied`).

        :param applied: (m,) applied coordinates, or a handle mapping.
        :param object_frame: object axes instead of the contact frames.
        :return: (6n,) array, zero at the released contacts.
        """
        if applied is None:
            return np.zeros(6 * self.n)
        if isinstance(applied, dict):
            applied = self.internal_load_from_handles(applied)
        return self.internal_basis(object_frame) @ np.asarray(applied, float)

    def share_of(self, applied: Optional[np.ndarray], subset: 'WeightedSolver', object_frame: bool) -> np.ndarray:
        """Stacked (6n,) part of an applied load that a contact subset carries in the mixture (16.5).

        ``phi_j`` is the probability that every contact element ``j`` touches is present, so
        ``E (phi . lambda) = sum_S c_S E (m_S . lambda)`` with ``m_S`` the elements inside subset ``S``:
        the subset's share is ``E (m_S . applied / phi)``.

        :param applied: (m,) applied coordinates, or None.
        :param subset: the solver of one contact subset (weights 0 or 1).
        :param object_frame: object axes instead of the contact frames.
        :return: (6n,) array.
        """
        if applied is None or not np.size(applied):
            return np.zeros(6 * self.n)
        inside = element_scales(self.internal_basis(True), subset.weights)
        return self.internal_basis(object_frame) @ (inside * np.asarray(applied, float) / self.element_scales)

    def coordinates(self, stacked_object: np.ndarray) -> np.ndarray:
        """Return the applied coordinates of a self-equilibrated (6n,) wrench in object axes, one per element."""
        return self.distributor.coordinates_of_wrench(stacked_object if self._all else stacked_object[self._rows])

    @cached_property
    def friction_view(self) -> 'ScaledElements':
        """Return this solver as friction's auto mode sees it: elements scaled by ``phi``."""
        return ScaledElements(self)

    # -- synthesis and analysis -------------------------------------------------------------------
    def wrench_commands(self, wrench, internal: Optional[np.ndarray] = None, object_frame: bool = False,
                        check_finite: bool = True) -> np.ndarray:
        """Commands (n, 6) for a desired resultant; exactly 0 at the released contacts.

        :param wrench: (6,) object frame about the centre of mass.
        :param internal: None or (6n,) from :meth:`internal_wrench` in the same frame.
        :param object_frame: object axes instead of the contact frames.
        :param check_finite: as ``LoadDistributor.wrench_commands``.
        :raises UnrealisableWrenchError: when the contacts on the way cannot produce it.
        """
        if self._all:
            return self.distributor.wrench_commands(wrench, internal, object_frame, check_finite)
        return self.weighted.wrench_commands(wrench, internal, object_frame)

    def synthesize(self, wrench, applied: Optional[np.ndarray] = None):
        """Synthesis over all n contacts with an applied internal load (``internal_load`` is it).

        :param wrench: (6,) desired resultant.
        :param applied: (m,) applied coordinates, or None.
        :return: the core's ``Synthesis`` (zero rows at released contacts).
        """
        lam = None if applied is None else np.asarray(applied, float) / self.element_scales
        return self.weighted.synthesize(wrench, lam)

    def synthesize_batch(self, wrenches) -> BatchSynthesis:
        """Commands for k resultants (no internal load), zero rows at the released contacts."""
        batch = self.distributor.synthesize_batch(wrenches)
        return replace(batch, wrench_contact=self._wrenches(batch.wrench_contact),
                       wrench_object=self._wrenches(batch.wrench_object))

    def analyze(self, measured):
        """Analysis of (n, 6) measured wrenches on the contacts in the solve, over all n contacts."""
        return self._padded(self.distributor.analyze(np.asarray(measured, float)[self.live]))

    def analyze_batch(self, measured: np.ndarray):
        """Analysis of (k, n, 6) measured wrenches; the released contacts' rows are not read (0)."""
        return self._padded(self.distributor.analyze_batch(measured if self._all else measured[:, self.live]))

    def _padded(self, result):
        """Return an analysis of the live contacts with every per-contact array over the n contacts."""
        if self._all:
            return result
        live = self.live
        per_contact = {f.name: self._wrenches(getattr(result, f.name)) for f in fields(result)
                       if f.name.endswith(('_contact', '_object'))}
        source = result.invariant_source

        def invariant(applied: np.ndarray) -> tuple:
            return tuple(self._wrenches(part) if part.ndim == 3 else part for part in source(applied[:, live]))
        return replace(result, invariant_source=invariant, **per_contact)


class ScaledElements:
    """A solver's elements scaled by ``phi`` (eq. 16.7): what friction's auto mode adds loads on.

    The friction model reads the contacts, the basis and :meth:`internal_wrench`; coordinates
    here are at full weight, so ``x`` adds the applied load ``phi . x``.

    :param solver: the solver.
    """

    def __init__(self, solver: WeightedSolver) -> None:
        self.solver = solver
        self.names, self.contacts = solver.names, solver.contacts
        self.basis_names, self.basis_units = solver.basis_names, solver.basis_units
        self.reference_length = solver.reference_length
        self.element_scales = solver.element_scales

    def applied(self, coordinates: np.ndarray) -> np.ndarray:
        """Return the applied coordinates ``phi . x`` of full-weight ones."""
        return self.element_scales * coordinates

    def internal_wrench(self, coordinates, object_frame: bool = False) -> np.ndarray:
        """Stacked (6n,) wrench of full-weight coordinates: ``E (phi . x)``."""
        return self.solver.internal_wrench(self.applied(np.asarray(coordinates, float)), object_frame)
