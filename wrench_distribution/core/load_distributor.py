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
from dataclasses import dataclass
from functools import cached_property
import math
from typing import List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np
import scipy.linalg

from .contacts import Contact, ObjectModel
from .errors import InvalidInputError, UnrealisableWrenchError
from .grasp import (
    grasp_matrix, grasp_rank, manipulating_maps, null_projector, pseudo_inverse, reference_length,
    rotation_blocks, virtual_inertia, wrench_scale,
)
from .internal_basis import build_internal_basis, Geometry, handle_vector, named_candidates, rotate_blocks
from .invariant import invariant_part
from .options import DistributionOptions, GAIN_LIMIT, HULL_TOLERANCE, MASS_FLOOR, RESIDUAL_TOLERANCE
from .results import Analysis, BatchAnalysis, BatchSynthesis, Regime, Synthesis
from .validation import check_names, finite_array
from .virtual_masses import blended_masses, reduced_masses

InternalLoad = Union[None, Sequence[float], np.ndarray, Mapping[str, float]]
_COMPONENTS = ('fx', 'fy', 'fz', 'tx', 'ty', 'tz')


@dataclass(frozen=True)
class InternalSpace:
    """The named basis ``E`` of ``N(G)``.

    :param names: element names.
    :param units: ``'N'`` or ``'N*m'`` per element.
    :param basis: ``E`` (6n, m), object axes about each contact.
    :param basis_contact: ``E`` in the contact frames.
    """

    names: Tuple[str, ...]
    units: Tuple[str, ...]
    basis: np.ndarray
    basis_contact: np.ndarray


@dataclass(frozen=True)
class ReadOut:
    """The linear maps built on ``E``.

    :param coordinates: ``C`` (m, 6n) with ``C E = I``: coordinates of an element of ``N(G)``.
    :param gram: ``E^T W0 E`` in the metric ``W0 = diag(I, I / l^2)``.
    :param analysis: (6n, 12 + 24n + m) fused read-out of contact-frame measurements.
    """

    coordinates: np.ndarray
    gram: np.ndarray
    analysis: np.ndarray


@dataclass(frozen=True)
class ManipulatingSet:
    """The admissible manipulating distributions ``h_m,p + K(h_o) sigma``, ``|sigma| <= 1``.

    :param particular: (6n, 6) canonical ``h_m,p`` map (forces only, canonical masses).
    :param maps: (d, 6n, 6) maps ``h_o -> k_a``.
    :param metric: (6n,) the metric ``W = M*^-1`` of the canonical masses.
    """

    particular: np.ndarray
    maps: np.ndarray
    metric: np.ndarray


class LoadDistributor:
    """Wrench synthesis and analysis for one contact configuration.

    :param contacts: the contacts, in effector order.
    :param object_model: centre of mass (and optionally mass and inertia); default: CoM at
        the object-frame origin.
    :param options: distribution options.
    :raises InvalidInputError: on bad contacts or options.
    """

    def __init__(self, contacts: Sequence[Contact], object_model: Optional[ObjectModel] = None,
                 options: Optional[DistributionOptions] = None) -> None:
        contacts = tuple(contacts)
        if not contacts or not all(isinstance(c, Contact) for c in contacts):
            raise InvalidInputError('at least one contact is required, each a Contact')
        check_names([c.name for c in contacts])
        self.contacts = contacts
        self.object_model = object_model if object_model is not None else ObjectModel()
        self.options = options if options is not None else DistributionOptions()
        self.names = [c.name for c in contacts]
        self.n = n = len(contacts)
        self.rigid = np.array([c.type == 'rigid' for c in contacts])
        #: (6n,) mask of the wrench components the contacts can apply.
        self.active_components = np.repeat(np.c_[np.ones((n, 1), bool), self.rigid[:, None]], 3, axis=1).reshape(-1)
        self._rotations = np.array([c.rotation for c in contacts])
        self._positions = np.array([c.position for c in contacts])
        com = np.array(self.object_model.com)
        self._r = self._positions - com
        #: Length of the contact set used by unit-consistent norms (independent of virtual masses).
        self.reference_length = reference_length(self._positions, com)
        self.grasp_matrix = grasp_matrix(self._r, self.rigid)
        self._rotation_blocks = rotation_blocks(self._rotations) * self.active_components[:, None]
        #: Rank of G, decided on the contacts' own geometry (docs/theory.md, 6.1).
        self.rank = grasp_rank(self._positions, self.rigid, self.reference_length)
        reasons, details = self._build_synthesis()
        self._build_checks(reasons, details)

    # -- construction -------------------------------------------------------------------------
    def _build_synthesis(self) -> Tuple[list, dict]:
        masses, method, reasons = self._virtual_masses(self._r, self.options.virtual_masses)
        self.virtual_masses = masses
        self._method = method
        share = self.options.torque_share
        if not self.rigid.any() and share > 0:
            reasons.append('torque_share_without_rigid_contacts')
            share = 0.0
        self._weights = self._torque_weights()
        # W, N_m and h_m,p come from the canonical masses of the paper's particular solution
        # (section VI-E), whatever masses the synthesis uses (docs/theory.md, section 5).
        canonical_masses = masses if isinstance(self.options.virtual_masses, str) else \
            self._virtual_masses(self._r, 'auto')[0]
        spread = float(np.sqrt(np.mean(np.sum(self._r * self._r, axis=1))))
        self._canonical = virtual_inertia(canonical_masses, self._r, self.rigid, spread)
        inertia = self._canonical if canonical_masses is masses else \
            virtual_inertia(masses, self._r, self.rigid, spread)
        self.virtual_com = inertia.com + np.array(self.object_model.com)
        self.characteristic_length = self._canonical.length
        if inertia.collinear and share < 1.0:
            reasons.append('collinear_contacts')
        #: The parametrized pseudo-inverse G_M+ (6n x 6), object-frame axes, about each contact.
        self.pseudo_inverse = pseudo_inverse(inertia, share, self._weights, self.rigid)
        if self.rank == 6:
            # iterative refinement: G G_M+ = I to rounding even where J_f is ill-conditioned
            # (nearly collinear point contacts); a change of the order of that rounding
            for _ in range(2):
                self.pseudo_inverse = self.pseudo_inverse + self.pseudo_inverse @ (
                    np.eye(6) - self.grasp_matrix @ self.pseudo_inverse)
        self._pseudo_inverse_contact = self._rotation_blocks.T @ self.pseudo_inverse
        # for wrench_commands: G_M+ with one zero row appended, whose product is 0 for a finite
        # wrench and NaN for NaN or Inf (0 * Inf = NaN): the input check costs no extra call
        self._fast_object = np.vstack([self.pseudo_inverse, np.zeros((1, 6))])
        self._fast_contact = np.vstack([self._pseudo_inverse_contact, np.zeros((1, 6))])
        return reasons, {}

    def _build_checks(self, reasons: list, details: dict) -> None:
        n, length = self.n, self.reference_length
        if self.rank < 6:
            reasons.append('rank_deficient_grasp')
        #: Dimension of the null space of G: the number of internal-load basis elements.
        self.internal_dimension = int(self.active_components.sum()) - self.rank
        scale_in = wrench_scale(1, length)
        scaled = (wrench_scale(n, length)[:, None] * self.pseudo_inverse) / scale_in[None, :]
        # resultants are checked with the lever of the centre of mass included, so that the
        # rounding of large commands far from it does not read as a missing torque
        self._check_scale = wrench_scale(1, length + float(np.linalg.norm(self._r.mean(axis=0))))
        #: Largest command per unit resultant in the unit-consistent metric (1 for a good grasp).
        self.gain = float(np.linalg.svd(scaled, compute_uv=False)[0])
        if self.gain > GAIN_LIMIT:
            reasons.append('ill_conditioned_grasp')
            details['ill_conditioned_grasp'] = f'command gain {self.gain:.4g} (limit {GAIN_LIMIT:g})'
        scale = self._check_scale
        error = scale[:, None] * (self.grasp_matrix @ self.pseudo_inverse - np.eye(6)) / scale[None, :]
        # G G_M+ = I on every resultant G can produce; where it is not, the check runs per sample
        self._reproduction = error if np.abs(error).max() > 1e-9 else None
        self.regime = Regime.from_reasons(reasons, self._method, details)

    def _virtual_masses(self, r: np.ndarray, choice) -> Tuple[np.ndarray, str, list]:
        n = self.n
        if not isinstance(choice, str):
            if len(choice) != n:
                raise InvalidInputError(f'virtual_masses has {len(choice)} values for {n} contacts')
            masses = np.array(choice) * n / np.sum(choice)
            spread = np.sqrt(np.mean(np.sum((r - r.mean(0)) ** 2, axis=1))) or 1.0
            off = np.linalg.norm(masses @ r / n) > HULL_TOLERANCE * spread
            low = masses.min() < MASS_FLOOR
            return masses, 'explicit virtual masses', (
                ['explicit_masses_off_com'] if off else []) + (['com_outside_hull'] if low else [])
        model = self.object_model
        if choice == 'full' and (model.mass is None or model.inertia is None):
            raise InvalidInputError('virtual_masses=full needs the object mass and inertia')
        reduced, off_affine, outside = reduced_masses(r, np.zeros(3))
        reasons = (['com_off_affine_hull'] if off_affine else []) + (['com_outside_hull'] if outside else [])
        if choice == 'reduced' or model.mass is None or model.inertia is None:
            return reduced, 'eq. 64', reasons
        masses, weight, residual = blended_masses(r, model.mass, model.inertia_matrix, self.options.torque_share,
                                                  reduced)
        if weight == 1.0 and residual <= RESIDUAL_TOLERANCE:
            return masses, 'eq. 59', []
        if choice == 'full' and weight == 0.0:
            raise InvalidInputError(
                'virtual_masses=full: eq. 59 has no positive solution for these contacts '
                '(it needs about 10 contacts around the centre of mass and torque_share < 1); '
                'use reduced or auto')
        if weight == 1.0:
            method = f'eq. 59 (least squares, relative residual {residual:.2g})'
        else:
            method = 'eq. 64' if weight == 0.0 else f'eqs. 59 and 64 blended ({weight:.3g} of eq. 59)'
        return masses, method, reasons + ['full_inertia_unavailable']

    def _torque_weights(self) -> np.ndarray:
        rigid = self.rigid
        weights = np.zeros(self.n)
        if not rigid.any():
            return weights
        given = self.options.torque_weights
        if given is None:
            weights[rigid] = 1.0
        else:
            if len(given) != self.n:
                raise InvalidInputError(f'torque_weights has {len(given)} values for {self.n} contacts')
            weights = np.array(given) * rigid
            if weights.sum() <= 0:
                raise InvalidInputError('torque_weights must give a positive weight to a rigid contact')
        return weights / weights.sum()

    @cached_property
    def _norm_metric(self) -> np.ndarray:
        """``diag(I, I / l^2)`` on the active components (virtual masses play no part)."""
        return wrench_scale(self.n, self.reference_length) ** 2 * self.active_components

    @cached_property
    def _internal(self) -> InternalSpace:
        metric = self._norm_metric
        projector = null_projector(self.grasp_matrix, np.where(metric > 0, metric, 1.0), self.active_components,
                                   self.reference_length, self.rank)
        basis = build_internal_basis(named_candidates(self._geometry), projector, self.active_components,
                                     metric, self.internal_dimension, self._rotations)
        names = tuple(self._contact_names(name) for name in basis.names)
        to_contact = rotate_blocks((basis.matrix * self.active_components[:, None]).T, self._rotations).T
        return InternalSpace(names, basis.units, basis.matrix, to_contact)

    @cached_property
    def _readout(self) -> ReadOut:
        e, metric = self._internal.basis, self._norm_metric
        gram = (e.T * metric) @ e
        if not e.shape[1]:
            return ReadOut(np.zeros((0, 6 * self.n)), gram, self._analysis_matrix(np.zeros((0, 6 * self.n))))
        # C = (E^T W0 E)^-1 E^T W0 through a QR of the scaled basis (no squared condition number)
        root = np.sqrt(metric)
        q, r = np.linalg.qr(e * root[:, None])
        coordinates = scipy.linalg.solve_triangular(r, q.T) * root[None, :]
        return ReadOut(coordinates, gram, self._analysis_matrix(coordinates))

    @cached_property
    def _geometry(self) -> Geometry:
        return Geometry(self._positions, self.rigid, self.names, np.array(self.options.basis_reference_axis),
                        self.reference_length, self._rotations)

    def _contact_names(self, name: str) -> str:
        """``balanced_<c>(3)`` -> ``balanced_<c>(<name of contact 3>)``."""
        if name.startswith('balanced_'):
            head, index = name[:-1].split('(')
            return f'{head}({self.names[int(index)]})'
        return name

    def _analysis_matrix(self, coordinates: np.ndarray) -> np.ndarray:
        """Fused read-out: contact-frame measurements (k, 6n) @ this -> every analysis output."""
        to_object, to_contact = self._rotation_blocks, self._rotation_blocks
        resultant = self.grasp_matrix @ to_object                      # (6, 6n)
        manipulating = self.pseudo_inverse @ resultant                 # h_m (object axes)
        constraint = manipulating - to_object                          # h_c = h_m - h (eq. 80)
        error = (self.grasp_matrix @ self.pseudo_inverse - np.eye(6)) @ resultant  # G h_m - h_o
        return np.hstack([resultant.T, manipulating.T, constraint.T, manipulating.T @ to_contact,
                          constraint.T @ to_contact, -constraint.T @ coordinates.T, error.T])

    @cached_property
    def _manipulating_set(self) -> ManipulatingSet:
        canonical = self._canonical
        metric = np.tile(np.r_[np.ones(3), np.full(3, 1.0 / canonical.length ** 2)], self.n) \
            / np.repeat(canonical.masses, 6) * self.active_components
        projector = null_projector(self.grasp_matrix, np.where(metric > 0, metric, 1.0), self.active_components,
                                   self.reference_length, self.rank)
        particular = pseudo_inverse(canonical, 0.0, self._weights, self.rigid)
        maps = manipulating_maps(canonical, self._weights, self.rigid, projector)
        return ManipulatingSet(particular, maps, metric)

    def prepare(self) -> 'LoadDistributor':
        """Build the internal-load basis, the read-out and ``N_m`` now (else on first use).

        :return: self.
        """
        _ = self._internal, self._readout, self._manipulating_set
        return self

    # -- the basis -----------------------------------------------------------------------------
    @property
    def basis_ready(self) -> bool:
        """Whether the named basis has been built (by an internal load, an analysis or :meth:`prepare`)."""
        return '_internal' in self.__dict__

    @property
    def basis_names(self) -> List[str]:
        """Names of the internal-load basis elements (docs/theory.md, section 6)."""
        return list(self._internal.names)

    @property
    def basis_units(self) -> List[str]:
        """Return the unit of each basis element, ``'N'`` or ``'N*m'``."""
        return list(self._internal.units)

    @property
    def basis_matrix(self) -> np.ndarray:
        """``E`` (6n, m): the applied wrenches of each element, object axes about each contact."""
        return self._internal.basis

    @property
    def basis_condition(self) -> float:
        """Return the condition number of ``E``, each element scaled to unit size.

        The metric is ``diag(I, I / l^2)``: 1 for orthogonal elements, large when elements
        nearly repeat.
        """
        if not self.internal_dimension:
            return 1.0
        gram = self._readout.gram
        scale = 1.0 / np.sqrt(np.diag(gram))
        values = np.linalg.eigvalsh(gram * scale[:, None] * scale[None, :])
        return float(np.sqrt(values.max() / values.min()))

    def manipulating_directions(self, wrench) -> np.ndarray:
        """Columns ``K(h_o)`` spanning ``N_m`` for one resultant, scaled to the admissible ball.

        :param wrench: resultant (6,), object frame about the CoM.
        :return: (6n, d) array.
        """
        wrench = finite_array(wrench, (6,), 'wrench')
        return np.einsum('aij,j->ia', self._manipulating_set.maps, wrench)

    def internal_load_from_handles(self, handles: Mapping[str, float]) -> np.ndarray:
        """Coordinates, in :attr:`basis_names`, of physical internal-load handles.

        Any element of the families works, also one not selected for the basis (e.g.
        ``squeeze(a,c)`` on five feet); the order of the two contacts in a name does not matter.

        :param handles: mapping like ``{'squeeze(left,right)': 20.0}`` (N or N*m).
        :return: internal-load vector (m,).
        :raises InvalidInputError: for an unknown handle or a non-finite value.
        """
        values = np.zeros(len(self.basis_names))
        for key, value in handles.items():
            amount = float(finite_array(value, (), f'internal load {key!r}'))
            values += amount * (self._readout.coordinates @ self._handle_vector(str(key)))
        return values

    def _handle_vector(self, key: str) -> np.ndarray:
        if key in self._internal.names:
            return self._internal.basis[:, self._internal.names.index(key)]
        vector = handle_vector(self._geometry, key)
        if vector is None:
            raise InvalidInputError(f'unknown internal-load handle {key!r}; this grasp accepts e.g. '
                                    + ', '.join(self.basis_names))
        return vector

    def _internal_vector(self, internal_load: InternalLoad, count: int) -> Optional[np.ndarray]:
        """(count, m) coordinates, or None for no internal load (the basis is then not built)."""
        if internal_load is None:
            return None
        if isinstance(internal_load, Mapping):
            return np.broadcast_to(self.internal_load_from_handles(internal_load), (count, self.internal_dimension))
        m = len(self.basis_names)
        try:
            ndim = np.ndim(internal_load)
        except ValueError:
            raise InvalidInputError(f'internal_load must be {m} numbers ({", ".join(self.basis_names)})') from None
        if ndim <= 1:
            values = finite_array(internal_load, (m,), f'internal_load ({m} values: {", ".join(self.basis_names)})')
            return np.broadcast_to(values, (count, m))
        return finite_array(internal_load, (count, m), 'internal_load')

    # -- synthesis -----------------------------------------------------------------------------
    def _kernel(self, wrenches: np.ndarray, lam: Optional[np.ndarray], object_frame: bool) -> np.ndarray:
        """Compute the one synthesis product: ``G_M+ h_o + E lambda`` for (6,) or (k, 6) resultants."""
        stacked = wrenches @ (self.pseudo_inverse if object_frame else self._pseudo_inverse_contact).T
        if lam is not None:
            stacked = stacked + lam @ (self._internal.basis if object_frame else self._internal.basis_contact).T
        return stacked

    def _unreproduced(self, wrenches: np.ndarray) -> np.ndarray:
        """Relative part of each resultant (k, 6) that ``G G_M+`` does not reproduce (k,)."""
        if self._reproduction is None:
            return np.zeros(wrenches.shape[0])
        scaled = wrenches * self._check_scale
        outside = np.linalg.norm(scaled @ self._reproduction.T, axis=1)
        return outside / np.maximum(np.linalg.norm(scaled, axis=1), 1e-300)

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
        realisable = self._unreproduced(wrenches) <= RESIDUAL_TOLERANCE
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
        # ndarray.dot: a third of the overhead of `@` on numpy 2 for a (6n+1, 6) matrix
        product = (self._fast_object if object_frame else self._fast_contact).dot(wrench)
        if check_finite and not math.isfinite(product[-1]):
            finite_array(wrench, (6,), 'wrench')  # raises with the precise message
        if self._reproduction is not None and self._unreproduced(wrench[None])[0] > RESIDUAL_TOLERANCE:
            raise UnrealisableWrenchError(self._unrealisable_message(wrench))
        if internal is not None:
            return (product[:-1] + internal).reshape(self.n, 6)
        return product[:-1].reshape(self.n, 6)

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
        if self._unreproduced(wrench[None])[0] > RESIDUAL_TOLERANCE:
            raise UnrealisableWrenchError(self._unrealisable_message(wrench))
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

    def _unrealisable_message(self, wrench: np.ndarray) -> str:
        scale = self._check_scale
        missing = (self._reproduction @ (wrench * scale)) / scale
        detail = ', '.join(f'{c}={-e:.6g}' for c, e in zip(_COMPONENTS, missing)
                           if abs(e) > 1e-9 * np.abs(wrench).max())
        return (f'the wrench {np.round(wrench, 9).tolist()} cannot be produced by contacts '
                f'{", ".join(self.names)} ({", ".join(c.type for c in self.contacts)}): the part '
                f'they cannot produce is {detail}. Point contacts on one line (to within '
                f'{self.reference_length:.3g} x 1e-6) cannot produce a torque about that line.')

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
        count, size = measured.shape[0], 6 * self.n
        out = measured.reshape(count, size) @ self._readout.analysis
        parts = [out[:, 6 + size * k:6 + size * (k + 1)] for k in range(4)]
        constraint_object, constraint_contact = parts[1], parts[3]
        norm2 = (constraint_object * constraint_object) @ self._norm_metric
        return BatchAnalysis(
            resultant=out[:, :6],
            manipulating_contact=parts[2].reshape(count, self.n, 6),
            constraint_contact=constraint_contact.reshape(count, self.n, 6),
            internal_contact=np.negative(constraint_contact).reshape(count, self.n, 6),
            manipulating_object=parts[0].reshape(count, self.n, 6),
            constraint_object=constraint_object.reshape(count, self.n, 6),
            internal_object=np.negative(constraint_object).reshape(count, self.n, 6),
            internal_load=out[:, 6 + 4 * size:-6],
            internal_load_norm=np.sqrt(0.5 * norm2),
            residual=np.abs(out[:, -6:]).max(axis=1),
            invariant_source=self.invariant_batch,
        )

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
        applied = applied * self.active_components
        space = self._manipulating_set
        resultant = applied @ self.grasp_matrix.T
        invariant = invariant_part(applied, resultant, space.particular, space.maps, space.metric)
        norm = np.sqrt(0.5 * np.einsum('ki,i,ki->k', invariant, self._norm_metric, invariant))
        return invariant.reshape(-1, self.n, 6), self._to_contact_frames(invariant), norm
