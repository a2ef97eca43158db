"""The load distributor: Theorem 2 of Flight and Gosselin (2026) with its extensions.

For one contact configuration everything is linear in the resultant ``h_o``, so the
constructor builds, once, the closed-form parametrized pseudo-inverse ``G_M+`` (eq. 81,
generalised in docs/theory.md, section 2). The named internal-load basis, the linear
read-out of the analysis and the manipulating set ``N_m`` are built when first needed (or by
:meth:`LoadDistributor.prepare`). Per sample the work is a few small matrix products.

Synthesis is ``h = G_M+ h_o + E lambda`` (eq. 79, ``Z = -E``); analysis reads
``lambda = E^+ (h - G_M+ G h)`` (eq. 80 expressed in the named basis ``E``), a fixed linear
map of the measured wrenches, so that ``analyze(synthesize(h_o, lambda)) = lambda`` for every
element, resultant, torque share and regime (docs/theory.md, section 5).
"""
from functools import cached_property
import math
from typing import Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from .contact_weights import check_weights
from .contacts import Contact, ContactArrays, ObjectModel
from .errors import InvalidInputError
from .grasp import grasp_layout, rotation_blocks
from .internal_space import coordinates_of, decompose, InternalSpaces, invariant_state
from .options import DistributionOptions, RESIDUAL_TOLERANCE
from .results import Analysis, BatchAnalysis, BatchSynthesis, Synthesis
from .synthesis_maps import build_synthesis, ContactSet
from .validation import check_names, finite_array

InternalLoad = Union[None, Sequence[float], np.ndarray, Mapping[str, float]]
#: The default of :meth:`LoadDistributor.moved`'s weights: keep them.
KEEP = object()


def _positive_weights(weights, names: Sequence[str]) -> Optional[np.ndarray]:
    """Return the checked weights in ``(0, 1]`` (None stays None: all 1).

    :raises InvalidInputError: as :func:`.check_weights`, or for a weight 0.
    """
    if weights is None:
        return None
    checked = check_weights(weights, len(names), list(names))
    if not checked.min() > 0.0:
        raise InvalidInputError('a contact of weight 0 is released: leave it out (WeightedDistributor does)')
    return checked


class LoadDistributor(InternalSpaces):
    """Wrench synthesis and analysis for one contact configuration.

    :param contacts: the contacts, in effector order, or their :class:`.ContactArrays` (from
        :meth:`.ContactLayout.arrays`, already checked: no :class:`Contact` is built).
    :param object_model: centre of mass (and optionally mass and inertia); default: CoM at
        the object-frame origin.
    :param options: distribution options.
    :param weights: contact weights in ``(0, 1]`` (docs/theory.md, section 16), one per contact;
        None: all 1. A released contact (weight 0) is left out (:class:`.WeightedDistributor`).
    :raises InvalidInputError: on bad contacts, options or weights.
    """

    def __init__(self, contacts: Union[Sequence[Contact], ContactArrays], object_model: Optional[ObjectModel] = None,
                 options: Optional[DistributionOptions] = None, weights=None) -> None:
        if isinstance(contacts, ContactArrays):  # checked by ContactLayout.arrays: the per-tick path
            arrays = contacts
        else:
            contacts = tuple(contacts)
            if not contacts or not all(isinstance(c, Contact) for c in contacts):
                raise InvalidInputError('at least one contact is required, each a Contact')
            check_names([c.name for c in contacts])
            self.contacts = contacts
            arrays = ContactArrays.of(contacts)
        self._build(arrays, object_model if object_model is not None else ObjectModel(),
                    options if options is not None else DistributionOptions(),
                    _positive_weights(weights, arrays.names), None)

    def moved(self, contacts: Optional[ContactArrays] = None, weights=KEEP, checked: bool = False) -> 'LoadDistributor':
        """Return the distributor of these contacts at other poses or weights, reusing what stays.

        The same as ``LoadDistributor(contacts, self.object_model, self.options, weights)``: the
        same computations, without checking again what was checked (contacts from
        :meth:`.ContactLayout.arrays`) and, at the same poses, with the maps of the contact subsets
        and the named basis kept: a change of weights then only mixes the subsets anew (eq. 16.1).
        At new poses the named basis, when asked for, is the last selection made again where the
        greedy selection would make it (:func:`.internal_basis.reselect`): the same elements, in
        the same order, as a fresh build, without the search.

        :param contacts: the same contacts (names and types) at their new poses, or None: the
            same poses.
        :param weights: the new weights in ``(0, 1]``, one per contact, or None for all 1;
            by default the weights stay.
        :param checked: the weights come from :func:`.check_weights` and are positive (not
            checked again).
        :return: the new distributor (this one is unchanged).
        :raises InvalidInputError: other contacts, bad weights, or options the contacts cannot take.
        """
        if contacts is not None and (not isinstance(contacts, ContactArrays) or contacts.names != self._arrays.names
                                     or contacts.types != self._arrays.types):
            raise InvalidInputError('moved() takes the same contacts (names and types) at new poses, as ContactArrays')
        same = contacts is None or contacts is self._arrays
        moved = LoadDistributor.__new__(LoadDistributor)
        moved._basis_plan = self.basis_plan
        moved._build(self._arrays if same else contacts, self.object_model, self.options,
                     self._weights if weights is KEEP else weights if checked
                     else _positive_weights(weights, self._arrays.names),
                     self if same else None)
        return moved

    def _build(self, arrays: ContactArrays, object_model: ObjectModel, options: DistributionOptions,
               weights: Optional[np.ndarray], previous: Optional['LoadDistributor']) -> None:
        """Set up from checked inputs (``previous``: the same contacts at the same poses and options)."""
        self._arrays, self.object_model, self.options = arrays, object_model, options
        self.names = list(arrays.names)
        self.n = n = len(arrays.names)
        #: (n,) contact weights in (0, 1] (docs/theory.md, section 16).
        self.contact_weights = np.ones(n) if weights is None else weights
        self._weights = weights
        layout = grasp_layout(arrays.types)
        self.rigid = layout.rigid
        #: (6n,) mask of the wrench components the contacts can apply.
        self.active_components = layout.active
        self._rotations, self._positions = arrays.rotations, arrays.positions
        if previous is None:
            #: (n, 3) contact positions relative to the centre of mass (the paper's ``r_i``).
            self.relative_positions = self._positions - object_model.com_array
            self.grasp_matrix = layout.matrix(self.relative_positions)
        else:
            self.relative_positions, self.grasp_matrix = previous.relative_positions, previous.grasp_matrix
            self.keep_spaces(previous)
        maps = build_synthesis(ContactSet(self.relative_positions, self.rigid, self.active_components,
                                          self.grasp_matrix, self._rotations, object_model, options,
                                          weights, layout.any_rigid, layout.active_count),
                               None if previous is None else previous.maps)
        #: The synthesis maps (:class:`.SynthesisMaps`: masses, ``G_M+``, checks, regime).
        self.maps = maps
        #: Rank of G, decided on the contacts' own geometry (docs/theory.md, 6.1).
        self.rank = maps.rank
        #: Length of the contact set used by unit-consistent norms (independent of virtual masses).
        self.reference_length = maps.reference_length
        #: The parametrized pseudo-inverse G_M+ (6n x 6), object-frame axes, about each contact.
        self.pseudo_inverse = maps.pseudo_inverse
        self._pseudo_inverse_contact = maps.pseudo_inverse_contact
        self._command_shape = (n, 6)
        #: Dimension of the null space of G: the number of internal-load basis elements.
        self.internal_dimension = maps.internal_dimension
        self._check_scale, self._reproduction = maps.check_scale, maps.reproduction

    @property
    def virtual_masses(self) -> np.ndarray:
        """Return the (n,) virtual masses (mean 1; with contact weights, summing to their sum)."""
        return self.maps.virtual_masses

    @property
    def virtual_com(self) -> np.ndarray:
        """Return the virtual masses' centre, object frame."""
        return self.maps.virtual_com

    @property
    def gain(self) -> float:
        """Largest command per unit resultant in the unit-consistent metric (1 for a good grasp)."""
        return self.maps.gain

    @property
    def regime(self):
        """Which formulas applied, and why (:class:`.Regime`)."""
        return self.maps.regime

    @property
    def characteristic_length(self) -> float:
        """Length of the canonical virtual inertia (docs/theory.md, section 4.2)."""
        return self.maps.canonical.length

    @cached_property
    def _rotation_blocks(self) -> np.ndarray:
        """(6n, 6n) contact rotations on the active components."""
        return rotation_blocks(self._rotations) * self.active_components[:, None]

    @cached_property
    def contacts(self) -> Tuple[Contact, ...]:
        """Return the contacts as :class:`Contact` objects (built on first access from arrays)."""
        return self._arrays.contacts()

    def _internal_vector(self, internal_load: InternalLoad, count: int) -> Optional[np.ndarray]:
        """(count, m) coordinates, or None for no internal load (the basis is then not built)."""
        if isinstance(internal_load, Mapping):
            return np.broadcast_to(self.internal_load_from_handles(internal_load), (count, self.internal_dimension))
        return None if internal_load is None else coordinates_of(internal_load, count, self.basis_names)

    # -- synthesis -----------------------------------------------------------------------------
    def _kernel(self, wrenches: np.ndarray, lam: Optional[np.ndarray], object_frame: bool) -> np.ndarray:
        """Compute the one synthesis product: ``G_M+ h_o + E lambda`` for (6,) or (k, 6) resultants."""
        stacked = wrenches @ (self.pseudo_inverse if object_frame else self._pseudo_inverse_contact).T
        if lam is not None:
            stacked = stacked + lam @ (self._internal.basis if object_frame else self._internal.basis_contact).T
        return stacked

    def synthesize_batch(self, wrenches, internal_load: InternalLoad = None) -> BatchSynthesis:
        """Wrench commands for k desired resultants (eq. 79 with ``lambda_m = 0``).

        :param wrenches: desired resultants (k, 6), object frame about the centre of mass.
        :param internal_load: None, (m,), (k, m) or a handle mapping; applied as
            ``sum lambda_j e_j`` of the named basis (``-Z lambda_c`` in eq. 79).
        :return: commands and residuals; ``realisable`` is False where ``G h = h_o`` has no
            solution, and those rows are zero.
        """
        wrenches = finite_array(wrenches, (-1, 6), 'wrenches')
        lam = self._internal_vector(internal_load, wrenches.shape[0])
        stacked = self._kernel(wrenches, lam, True)
        realisable = self.maps.unreproduced(wrenches) <= RESIDUAL_TOLERANCE
        stacked[~realisable] = 0.0
        resultant = stacked @ self.grasp_matrix.T
        return BatchSynthesis(
            wrench_contact=self._to_contact_frames(stacked),
            wrench_object=stacked.reshape(-1, self.n, 6),
            resultant=resultant,
            residual=np.where(realisable, np.abs(resultant - wrenches).max(axis=1), np.inf),
            realisable=realisable,
        )

    def wrench_commands(self, wrench, internal: Optional[np.ndarray] = None,
                        object_frame: bool = False, check_finite: bool = True) -> np.ndarray:
        """Fast path for control loops: the (n, 6) commands only.

        Same numbers as ``synthesize(wrench, ...).wrench_contact`` (or ``.wrench_object``);
        the internal load is passed as its precomputed stacked wrench
        (:meth:`internal_wrench`), so a sample costs one (6n x 6) product.

        :param wrench: desired resultant (6,), object frame about the centre of mass.
        :param internal: None or the (6n,) result of :meth:`internal_wrench` for the same frame.
        :param object_frame: commands in object-frame axes instead of the contact frames.
        :param check_finite: reject NaN and Inf (as ``scipy.linalg`` does); pass
            False only when the caller has checked the six values already.
        :return: (n, 6) commands.
        :raises InvalidInputError: for NaN, Inf or a wrong length.
        :raises UnrealisableWrenchError: when no contact wrenches produce ``wrench``.
        """
        if type(wrench) is not np.ndarray or wrench.shape != (6,):
            wrench = finite_array(wrench, (6,), 'wrench')
        # ndarray.dot: a third of `@`'s overhead; NaN or Inf in the wrench makes every entry of
        # the product NaN or Inf (0 * Inf = NaN): one entry read (item: no numpy scalar) first
        product = (self.pseudo_inverse if object_frame else self._pseudo_inverse_contact).dot(wrench)
        if check_finite and not math.isfinite(product.item(0)) and not np.isfinite(wrench).all():
            finite_array(wrench, (6,), 'wrench')  # raises with the precise message
        if self._reproduction is not None:
            self.maps.check_realisable(wrench, self._arrays, self.reference_length)
        if internal is not None:
            product += internal
        product.shape = self._command_shape  # (n, 6): a fresh array, reshaped in place
        return product

    def internal_wrench(self, internal_load: InternalLoad, object_frame: bool = False) -> np.ndarray:
        """Stacked wrench (6n,) of an internal load, for :meth:`wrench_commands`.

        :param internal_load: (m,) coordinates or a handle mapping.
        :param object_frame: in object-frame axes instead of the contact frames.
        :return: (6n,) array.
        """
        lam = self._internal_vector(internal_load, 1)
        if lam is None:
            return np.zeros(6 * self.n)
        return self.internal_basis(object_frame) @ lam[0]

    def internal_basis(self, object_frame: bool = False) -> np.ndarray:
        """``E`` (6n, m), the stacked wrench of each basis element (no input check: fast path).

        :param object_frame: in object-frame axes instead of the contact frames.
        :return: the matrix; ``E @ lam`` is :meth:`internal_wrench` of checked coordinates.
        """
        return self._internal.basis if object_frame else self._internal.basis_contact

    def synthesize(self, wrench, internal_load: InternalLoad = None) -> Synthesis:
        """Wrench commands for one desired resultant.

        :param wrench: ``[fx, fy, fz, tx, ty, tz]``, object frame about the centre of mass.
        :param internal_load: None, (m,) coordinates in :attr:`basis_names`, or handles.
        :return: the commands, with the invariant part of the prescription (computed on access).
        :raises UnrealisableWrenchError: when no contact wrenches produce ``wrench``.
        """
        wrench = finite_array(wrench, (6,), 'wrench')
        lam = self._internal_vector(internal_load, 1)
        self.maps.check_realisable(wrench, self._arrays, self.reference_length)
        manipulating = self._kernel(wrench, None, True)
        stacked = self._kernel(wrench, None if lam is None else lam[0], True)
        if not np.all(np.isfinite(stacked)):
            raise InvalidInputError('the commands overflow: the wrench or the internal load is too large')
        resultant = self.grasp_matrix @ stacked
        return Synthesis(
            wrench_contact=(stacked @ self._rotation_blocks).reshape(self.n, 6),
            wrench_object=stacked.reshape(self.n, 6),
            manipulating_object=manipulating.reshape(self.n, 6),
            internal_object=(stacked - manipulating).reshape(self.n, 6),
            resultant=resultant,
            residual=float(np.abs(resultant - wrench).max()),
            internal_load=np.zeros(self.internal_dimension) if lam is None else lam[0].copy(),
            regime=self.regime,
            invariant_source=self.invariant_batch,
        )

    # -- analysis ------------------------------------------------------------------------------
    def _to_contact_frames(self, stacked: np.ndarray) -> np.ndarray:
        """(k, 6n) object-frame axes -> (k, n, 6) contact frames."""
        return (stacked @ self._rotation_blocks).reshape(-1, self.n, 6)

    def analyze_batch(self, measured) -> BatchAnalysis:
        """Decompose k sets of measured contact wrenches (section VII-B, eq. 80).

        ``h_m = G_M+ G h`` is the configured synthesis of the measured resultant and
        ``h_c = h_m - h``; ``internal_load`` is ``lambda = -C h_c``, the coordinates of the
        measured internal load in the named basis (a linear map of the measurements), and
        ``internal_*`` its wrench ``E lambda = -h_c``, applied by the effectors.
        ``invariant_*`` (the paper's eq. 78 state, section 5.3 of docs/theory.md) are
        computed on first access. Torques reported at point contacts are ignored.

        :param measured: (k, n, 6) wrenches applied to the object, contact frames about the
            contact points.
        :return: the decomposition.
        """
        measured = finite_array(measured, (-1, self.n, 6), 'measured wrenches')
        return decompose(measured, self._readout.analysis, self._norm_metric, self.invariant_batch)

    def analyze(self, measured) -> Analysis:
        """Decompose one set of measured contact wrenches.

        :param measured: (n, 6) wrenches applied to the object, contact frames about the
            contact points.
        :return: the decomposition.
        """
        measured = finite_array(measured, (self.n, 6), 'measured wrenches')
        return self.analyze_batch(measured[None]).sample(0)

    def invariant_batch(self, wrench_object) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Compute the invariant internal-load state of applied wrenches (docs/theory.md, section 5.3).

        :param wrench_object: (k, n, 6) applied wrenches, object axes about each contact.
        :return: ``(invariant_object, invariant_contact, invariant_norm)``, shapes (k, n, 6),
            (k, n, 6), (k,).
        """
        applied = finite_array(wrench_object, (-1, self.n, 6), 'wrenches').reshape(-1, 6 * self.n)
        invariant, norm = invariant_state(applied * self.active_components, self.grasp_matrix,
                                          self._manipulating_set, self._norm_metric)
        return invariant.reshape(-1, self.n, 6), self._to_contact_frames(invariant), norm
