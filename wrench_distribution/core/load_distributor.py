"""The load distributor: Theorem 2 of Flight and Gosselin (2026) with its extensions.

For one contact configuration everything is linear in the resultant ``h_o``, so the
constructor builds, once, the closed-form parametrized pseudo-inverse ``G_M+`` (eq. 81,
generalised below), the named internal-load basis and the maps that span ``N_m``.
Per sample the work is a few small matrix products. The derivation of every step is in
docs/theory.md; equation numbers refer to the paper.

Generalisation used throughout (docs/theory.md, section 3): with positive virtual masses
``m_i`` and contact inertias ``J_i*``, eq. 81 is the weighted pseudo-inverse
``M* G^T (G M* G^T)^-1``; writing it about the virtual centre of mass ``c~ = sum m_i r_i / n``
(equal to the centre of mass when eq. 53 holds) keeps it block-diagonal, and
``J_i* = w_i (s / (1 - s) (J_f + K) + K)`` with a regulariser ``K`` that is zero unless the
force inertia ``J_f`` is (nearly) singular gives, with ``A = J_f + K`` and ``B = s J_f + K``::

    f_i = m_i / n f_o - (1 - s) m_i S(d_i) A^-1 t~        (eqs. 113-114)
    t_i = w_i B A^-1 t~                                    (eq. 115)

with ``d_i = r_i - c~`` and ``t~ = t_o - c~ x f_o``. It is continuous in ``s`` up to ``s = 1``
and equals eq. 81 whenever the paper's conditions hold.
"""
import math
import re
from functools import cached_property
from typing import List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from .contacts import Contact, ObjectModel
from .errors import InvalidInputError, UnrealisableWrenchError
from .internal_basis import ORDER_ODD, build_internal_basis, named_candidates
from .options import (
    COLLINEAR_RATIO, DIRECTION_TOLERANCE, HULL_TOLERANCE, RESIDUAL_TOLERANCE,
    MASS_FLOOR, TORQUE_REGULARISATION, DistributionOptions,
)
from .results import Analysis, BatchAnalysis, BatchSynthesis, Regime, Synthesis
from .spatial import skew
from .validation import check_names, finite_array
from .virtual_masses import full_masses, reduced_masses

_HANDLE = re.compile(r'^\s*([a-z_]+)\s*\(([^()]*)\)\s*$')

InternalLoad = Union[None, Sequence[float], np.ndarray, Mapping[str, float]]


def _symmetric_pinv(matrix: np.ndarray) -> np.ndarray:
    values, vectors = np.linalg.eigh(matrix)
    largest = np.abs(values).max()
    if largest == 0.0:
        return np.zeros_like(matrix)
    inverse = np.where(np.abs(values) > 1e-12 * largest, 1.0 / np.where(values == 0, 1, values), 0.0)
    return (vectors * inverse) @ vectors.T


def _point_inertia(masses: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """``sum m_i S(d_i) S(d_i)^T`` (eq. 62 summed)."""
    squared = np.einsum('i,ij,ij->', masses, offsets, offsets)
    return squared * np.eye(3) - np.einsum('i,ij,ik->jk', masses, offsets, offsets)


class _InternalSpace:
    """Lazily built: named basis, its coordinates map and the N_m projection tensors."""

    span_count = 0


class _VirtualInertia:
    """Virtual centre of mass, force inertia ``J_f`` (eq. 54) and its regularised inverse."""

    def __init__(self, masses: np.ndarray, r: np.ndarray, rigid: np.ndarray, spread: float) -> None:
        n = masses.size
        self.masses = masses
        self.com = masses @ r / n
        self.offsets = r - self.com
        self.j_force = j_force = _point_inertia(masses, self.offsets)
        k = np.trace(j_force) / 2.0
        self.length = np.sqrt(k / n) if k > 0 else (spread if spread > 0 else 1.0)
        self.regulariser = np.zeros((3, 3))
        self.collinear = False
        if rigid.any():
            # K = k g(J_f / k): a contact-torque inertia only where J_f is (nearly) singular,
            # continuous as a matrix function of J_f (docs/theory.md, section 4).
            # the reference is the larger of k and the unweighted spread: a floored virtual
            # mass must not make the regulariser (and the transition) arbitrarily steep
            spread2 = float(np.sum((r - r.mean(axis=0)) ** 2))
            k_ref = max(k, spread2) if max(k, spread2) > 0 else n * self.length ** 2
            values, vectors = np.linalg.eigh(j_force)
            ramp = TORQUE_REGULARISATION * np.clip(1.0 - values / (k_ref * COLLINEAR_RATIO), 0, None) ** 2
            self.regulariser = k_ref * (vectors * ramp) @ vectors.T
            self.collinear = bool(ramp.max() > 0)
        self.a_pinv = _symmetric_pinv(j_force + self.regulariser)
        # Forces act on rotations through J_f only: drop the directions where J_f vanishes to
        # rounding (exactly collinear contacts), so that A^-1 there cannot amplify round-off.
        f_values, f_vectors = np.linalg.eigh(j_force)
        f_range = (f_vectors * (f_values > 1e-12 * max(k, 1e-300))) @ f_vectors.T
        self.force_pinv = f_range @ self.a_pinv @ f_range


class LoadDistributor:
    """Wrench synthesis and analysis for one contact configuration.

    :param contacts: the contacts, in effector order.
    :param object_model: centre of mass (and optionally mass and inertia); default: CoM at
        the object-frame origin.
    :param options: distribution options.
    :raises InvalidInputError: on bad contacts or options.
    """

    def __init__(
        self,
        contacts: Sequence[Contact],
        object_model: Optional[ObjectModel] = None,
        options: Optional[DistributionOptions] = None,
    ) -> None:
        contacts = tuple(contacts)
        if not contacts or not all(isinstance(c, Contact) for c in contacts):
            raise InvalidInputError('at least one contact is required, each a Contact')
        check_names([c.name for c in contacts])
        self.contacts = contacts
        self.object_model = object_model if object_model is not None else ObjectModel()
        self.options = options if options is not None else DistributionOptions()
        self.names = [c.name for c in contacts]
        self.n = n = len(contacts)
        self._rotations = np.array([c.rotation for c in contacts])
        positions = np.array([c.position for c in contacts])
        rigid = np.array([c.type == 'rigid' for c in contacts])
        self._rigid = rigid
        active = np.ones((n, 6), bool)
        active[:, 3:] = rigid[:, None]
        self._active = active.reshape(-1)
        r = positions - np.array(self.object_model.com)

        masses, method, reasons = self._virtual_masses(r, self.options.virtual_masses)
        self.virtual_masses = masses
        share = self.options.torque_share
        if not rigid.any() and share > 0:
            reasons.append('torque_share_without_rigid_contacts')
            share = 0.0
        weights = self._torque_weights(rigid)
        # The analysis metric W and N_m come from the canonical masses of the paper's
        # particular solution h_m,p (section VI-E), whatever masses the synthesis uses, so
        # that the internal-load state does not depend on that choice.
        canonical_masses = masses if isinstance(self.options.virtual_masses, str) else \
            self._virtual_masses(r, 'auto')[0]
        spread = np.sqrt(np.mean(np.sum(r * r, axis=1)))
        canonical = _VirtualInertia(canonical_masses, r, rigid, spread)
        inertia = canonical if canonical_masses is masses else _VirtualInertia(masses, r, rigid, spread)
        self.virtual_com = inertia.com + np.array(self.object_model.com)
        self.characteristic_length = length = canonical.length
        c_virtual, d, j_force = inertia.com, inertia.offsets, inertia.j_force
        regulariser, a_pinv, force_pinv = inertia.regulariser, inertia.a_pinv, inertia.force_pinv
        if inertia.collinear and share < 1.0:
            reasons.append('collinear_contacts')
        b_mat = share * j_force + regulariser

        grasp = np.zeros((6, 6 * n))
        for i in range(n):
            grasp[:3, 6 * i:6 * i + 3] = np.eye(3)
            grasp[3:, 6 * i:6 * i + 3] = skew(r[i])
            if rigid[i]:
                grasp[3:, 6 * i + 3:6 * i + 6] = np.eye(3)
        self.grasp_matrix = grasp
        scaled = grasp.copy()
        scaled[3:, :] /= length
        scaled[:, np.tile(np.r_[np.zeros(3, bool), np.ones(3, bool)], n)] *= length
        singular = np.linalg.svd(scaled, compute_uv=False)
        rank = int(np.sum(singular > 1e-9 * singular.max()))
        if rank < 6:
            reasons.append('rank_deficient_grasp')

        to_virtual = np.eye(6)
        to_virtual[3:, :3] = -skew(c_virtual)
        core = np.zeros((6 * n, 6))
        for i in range(n):
            core[6 * i:6 * i + 3, :3] = masses[i] / n * np.eye(3)
            core[6 * i:6 * i + 3, 3:] = -(1.0 - share) * masses[i] * skew(d[i]) @ force_pinv
            if rigid[i]:
                core[6 * i + 3:6 * i + 6, 3:] = weights[i] * b_mat @ a_pinv
        #: The parametrized pseudo-inverse G_M+ (6n x 6), object-frame axes, about each contact.
        self.pseudo_inverse = core @ to_virtual
        rotation_blocks = np.zeros((6 * n, 6 * n))
        for i, rotation in enumerate(self._rotations):
            rotation_blocks[6 * i:6 * i + 3, 6 * i:6 * i + 3] = rotation
            rotation_blocks[6 * i + 3:6 * i + 6, 6 * i + 3:6 * i + 6] = rotation
        self._rotation_blocks = rotation_blocks * self._active[:, None]  # contact -> object
        self._pseudo_inverse_contact = rotation_blocks.T @ self.pseudo_inverse
        # Resultants G cannot produce: the complement of its range, in the scaled metric
        # (empty whenever G has full rank, i.e. always with a rigid contact).
        u_range = np.linalg.svd(scaled)[0]
        self._unreachable = u_range[:, rank:] @ u_range[:, rank:].T if rank < 6 else None

        metric = np.tile(np.r_[np.ones(3), np.full(3, 1.0 / length ** 2)], n) / np.repeat(canonical_masses, 6)
        self._metric = metric * self._active
        # Everything the internal-load basis and the analysis need, built on first use
        # (a control loop that only synthesizes never pays for it).
        self._lazy = (positions, canonical, weights, int(self._active.sum()) - rank, rotation_blocks)
        self.regime = Regime.from_reasons(reasons, method)

    @cached_property
    def _internal(self) -> '_InternalSpace':
        positions, canonical, weights, dimension, rotation_blocks = self._lazy
        axis = np.array(self.options.basis_reference_axis)
        length = self.characteristic_length
        space = _InternalSpace()
        space.null_projector = self._weighted_null_projector(self.grasp_matrix, self._metric)
        candidates = named_candidates(positions, self._rigid, self.names, axis, length, self._rotations)
        basis = build_internal_basis(candidates, space.null_projector, self._active, length, dimension)
        space.basis, space.names, space.units = basis.matrix, list(basis.names), list(basis.units)
        # balanced_* fallbacks are named by contact index; give them the contact's name
        space.names = [re.sub(r'\((\d+)\)$', lambda m: f'({self.names[int(m.group(1))]})', name)
                       for name in space.names]
        space.candidates = {name: vector for name, _, vector in candidates}
        weighted = space.basis.T * self._metric
        space.coordinates = (np.linalg.solve(weighted @ space.basis, weighted) if space.basis.shape[1]
                             else np.zeros((0, 6 * self.n)))
        space.basis_contact = rotation_blocks.T @ space.basis
        space.maps = self._span_maps(canonical, weights, self._rigid, length, space.null_projector)
        space.metric = self._metric
        self._prepare_analysis(space)
        return space

    @property
    def basis_names(self) -> List[str]:
        """Names of the internal-load basis elements (docs/theory.md, section 6)."""
        return self._internal.names

    @property
    def basis_units(self) -> List[str]:
        """Unit of each basis element, ``'N'`` or ``'N*m'``."""
        return self._internal.units

    # -- construction helpers -------------------------------------------------------------
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
        reasons = []
        model = self.object_model
        if choice in ('auto', 'full') and model.mass is not None and model.inertia is not None:
            masses = full_masses(r, np.zeros(3), model.mass, model.inertia_matrix,
                                 self.options.torque_share)
            if masses is not None:
                return masses, 'eq. 59', []
            if choice == 'full':
                raise InvalidInputError(
                    'virtual_masses=full: eq. 59 has no positive solution for these contacts '
                    '(it needs at least 10 contacts around the centre of mass and torque_share < 1); '
                    'use reduced or auto')
            reasons.append('full_inertia_unavailable')
        elif choice == 'full':
            raise InvalidInputError('virtual_masses=full needs the object mass and inertia')
        masses, off_affine, outside = reduced_masses(r, np.zeros(3))
        if off_affine:
            reasons.append('com_off_affine_hull')
        if outside:
            reasons.append('com_outside_hull')
        return masses, 'eq. 64', reasons

    def _torque_weights(self, rigid: np.ndarray) -> np.ndarray:
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

    def _weighted_null_projector(self, grasp: np.ndarray, metric: np.ndarray) -> np.ndarray:
        """W-orthogonal projector on the null space of ``G`` over the active components."""
        active = self._active
        g = grasp[:, active]
        inverse_metric = 1.0 / metric[active]
        gram = (g * inverse_metric) @ g.T
        projector = np.eye(active.sum()) - (inverse_metric[:, None] * g.T) @ np.linalg.pinv(gram) @ g
        full = np.zeros((active.size, active.size))
        full[np.ix_(active, active)] = projector
        return full

    def _span_maps(self, inertia: '_VirtualInertia', weights, rigid, length, null_projector) -> np.ndarray:
        """Linear maps ``h_o -> k_j`` whose images span ``N_m`` (eqs. 72-73).

        Columns: one torque-share direction per rigid contact (moving torque between that
        contact and the force field, the freedom of eq. 65), and one direction per virtual
        mass redistribution that keeps eqs. 51 and 53 (the null space of R in eq. 64).
        """
        n = self.n
        masses, d, a_pinv, regulariser = inertia.masses, inertia.offsets, inertia.a_pinv, inertia.regulariser
        a_mat = inertia.j_force + regulariser
        to_virtual = np.eye(6)
        to_virtual[3:, :3] = -skew(inertia.com)
        maps = []
        for i in np.flatnonzero(rigid):
            core = np.zeros((6 * n, 6))
            for j in range(n):
                core[6 * j:6 * j + 3, 3:] = masses[j] * skew(d[j]) @ a_pinv
                if rigid[j]:
                    core[6 * j + 3:6 * j + 6, 3:] -= weights[j] * regulariser @ a_pinv
            core[6 * i + 3:6 * i + 6, 3:] += a_mat @ a_pinv
            maps.append(core)
        # Mass directions are taken at the paper's particular solution h_m,p (forces only,
        # s = 0, section VI-E), so that N_m does not depend on the configured torque share.
        constraints = np.vstack([np.ones(n) / np.sqrt(n), d.T / length])
        _, singular, vt = np.linalg.svd(constraints)
        rank = int(np.sum(singular > 1e-9 * singular.max()))
        for delta in vt[rank:]:
            d_inertia = _point_inertia(delta, d)
            d_alpha = -a_pinv @ d_inertia @ a_pinv
            core = np.zeros((6 * n, 6))
            for j in range(n):
                core[6 * j:6 * j + 3, :3] = delta[j] / n * np.eye(3)
                core[6 * j:6 * j + 3, 3:] = -delta[j] * skew(d[j]) @ a_pinv - masses[j] * skew(d[j]) @ d_alpha
                if rigid[j]:
                    core[6 * j + 3:6 * j + 6, 3:] = weights[j] * regulariser @ d_alpha
            maps.append(core)
        if not maps:
            return np.zeros((0, 6 * n, 6))
        return null_projector @ np.array(maps) @ to_virtual

    # -- conversions ------------------------------------------------------------------------
    def _to_contact_frames(self, stacked: np.ndarray) -> np.ndarray:
        """(k, 6n) object-frame axes -> (k, n, 6) contact frames."""
        return (stacked @ self._rotation_blocks).reshape(-1, self.n, 6)

    def _scaled_norm(self, stacked: np.ndarray) -> np.ndarray:
        """Unit-consistent norm ``sqrt(|f|^2 + |t / l|^2)`` over the last axis (6 or 6n)."""
        scale = np.tile(np.r_[np.ones(3), np.full(3, 1.0 / self.characteristic_length)],
                        stacked.shape[-1] // 6)
        return np.sqrt(np.sum((stacked * scale) ** 2, axis=-1))

    def _unreachable_part(self, wrenches: np.ndarray) -> np.ndarray:
        """Relative size of the part of each resultant outside the range of ``G`` (k,)."""
        if self._unreachable is None:
            return np.zeros(wrenches.shape[0])
        scaled = wrenches * np.r_[np.ones(3), np.full(3, 1.0 / self.characteristic_length)]
        outside = np.linalg.norm(scaled @ self._unreachable.T, axis=1)
        return outside / np.maximum(np.linalg.norm(scaled, axis=1), 1e-300)

    def internal_load_from_handles(self, handles: Mapping[str, float]) -> np.ndarray:
        """Coordinates, in :attr:`basis_names`, of physical internal-load handles.

        Any element of the candidate families works, also one not selected for the basis
        (e.g. ``squeeze(a,c)`` on five feet); the order of the two contacts in a name does
        not matter.

        :param handles: mapping like ``{'squeeze(left,right)': 20.0}`` (N or N*m).
        :return: internal-load vector (m,).
        :raises InvalidInputError: for an unknown handle or a non-finite value.
        """
        values = np.zeros(len(self.basis_names))
        for key, value in handles.items():
            amount = float(finite_array(value, (), f'internal load {key!r}'))
            vector = self._handle_vector(str(key))
            values += amount * (self._internal.coordinates @ vector)
        return values

    def _handle_vector(self, key: str) -> np.ndarray:
        match = _HANDLE.match(key)
        if match:
            kind = match.group(1)
            members = [m.strip() for m in match.group(2).split(',')]
            name = f'{kind}({",".join(members)})'
            candidates = self._internal.candidates
            if name in candidates:
                return candidates[name]
            if len(members) == 2:
                swapped = f'{kind}({members[1]},{members[0]})'
                if swapped in candidates:
                    sign = -1.0 if kind in ORDER_ODD else 1.0
                    return sign * candidates[swapped]
        raise InvalidInputError(
            f'unknown internal-load handle {key!r}; this grasp accepts e.g. '
            + ', '.join(self.basis_names)
        )

    def _internal_vector(self, internal_load: InternalLoad, count: int) -> np.ndarray:
        m = len(self.basis_names)
        if internal_load is None:
            return np.zeros((count, m))
        if isinstance(internal_load, Mapping):
            return np.broadcast_to(self.internal_load_from_handles(internal_load), (count, m))
        values = np.asarray(internal_load, dtype=float)
        if values.ndim == 1:
            values = finite_array(values, (m,), f'internal_load ({m} values: {", ".join(self.basis_names)})')
            return np.broadcast_to(values, (count, m))
        return finite_array(values, (count, m), 'internal_load')

    # -- synthesis ---------------------------------------------------------------------------
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
        stacked = wrenches @ self.pseudo_inverse.T + lam @ self._internal.basis.T
        realisable = self._unreachable_part(wrenches) <= RESIDUAL_TOLERANCE
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
        :param check_finite: reject NaN and Inf (as ``scipy.linalg`` does); pass False only
            when the caller has checked the six values already.
        :return: (n, 6) commands.
        :raises InvalidInputError: for NaN, Inf or a wrong length.
        :raises UnrealisableWrenchError: when no contact wrenches produce ``wrench``.
        """
        if type(wrench) is not np.ndarray or wrench.shape != (6,):
            wrench = finite_array(wrench, (6,), 'wrench')
        stacked = (self.pseudo_inverse if object_frame else self._pseudo_inverse_contact) @ wrench
        if check_finite and not math.isfinite(stacked.sum()):
            finite_array(wrench, (6,), 'wrench')  # raises with the precise message
        if self._unreachable is not None and self._unreachable_part(wrench[None])[0] > RESIDUAL_TOLERANCE:
            raise UnrealisableWrenchError(self._unrealisable_message(wrench))
        if internal is not None:
            stacked = stacked + internal
        return stacked.reshape(self.n, 6)

    def internal_wrench(self, internal_load: InternalLoad, object_frame: bool = False) -> np.ndarray:
        """Stacked wrench (6n,) of an internal load, for :meth:`wrench_commands`.

        :param internal_load: (m,) coordinates or a handle mapping.
        :param object_frame: in object-frame axes instead of the contact frames.
        :return: (6n,) array.
        """
        basis = self._internal.basis if object_frame else self._internal.basis_contact
        return basis @ self._internal_vector(internal_load, 1)[0]

    def synthesize(self, wrench, internal_load: InternalLoad = None) -> Synthesis:
        """Wrench commands for one desired resultant.

        :param wrench: ``[fx, fy, fz, tx, ty, tz]``, object frame about the centre of mass.
        :param internal_load: None, (m,) coordinates in :attr:`basis_names`, or handles.
        :return: the commands.
        :raises UnrealisableWrenchError: when no contact wrenches produce ``wrench``.
        """
        wrench = finite_array(wrench, (6,), 'wrench')
        lam = self._internal_vector(internal_load, 1)
        if self._unreachable_part(wrench[None])[0] > RESIDUAL_TOLERANCE:
            raise UnrealisableWrenchError(self._unrealisable_message(wrench))
        manipulating = self.pseudo_inverse @ wrench
        internal = self._internal.basis @ lam[0]
        stacked = manipulating + internal
        resultant = self.grasp_matrix @ stacked
        return Synthesis(
            wrench_contact=(stacked @ self._rotation_blocks).reshape(self.n, 6),
            wrench_object=stacked.reshape(self.n, 6),
            manipulating_object=manipulating.reshape(self.n, 6),
            internal_object=internal.reshape(self.n, 6),
            resultant=resultant,
            residual=float(np.abs(resultant - wrench).max()),
            internal_load=lam[0].copy(),
            regime=self.regime,
        )

    def _unrealisable_message(self, wrench: np.ndarray) -> str:
        scale = np.r_[np.ones(3), np.full(3, 1.0 / self.characteristic_length)]
        missing = (self._unreachable @ (wrench * scale)) / scale
        detail = ', '.join(f'{c}={e:.6g}' for c, e in zip(('fx', 'fy', 'fz', 'tx', 'ty', 'tz'), missing)
                           if abs(e) > 1e-9 * np.abs(wrench).max())
        return (f'the wrench {np.round(wrench, 9).tolist()} cannot be produced by contacts '
                f'{", ".join(self.names)} ({", ".join(c.type for c in self.contacts)}): the part '
                f'they cannot produce is {detail}. Point contacts on one line cannot produce a '
                f'torque about that line.')

    # -- analysis ----------------------------------------------------------------------------
    @staticmethod
    def _prepare_analysis(space: '_InternalSpace') -> None:
        """Precompute the tensors of the N_m projection (5.2) so that a batch is matmuls."""
        maps = space.maps  # (d, 6n, 6): h_o -> k_a
        d, size = maps.shape[0], maps.shape[1]
        space.span_count = d
        if d == 0:
            return
        weighted = maps * space.metric[None, :, None]
        # k_a^T W h_c = h_o^T (maps_a^T W) h_c
        space.span_dual = np.transpose(weighted, (0, 2, 1)).reshape(d * 6, size)
        # Gram_ab = h_o^T (maps_a^T W maps_b) h_o
        gram = space.span_dual @ np.transpose(maps, (1, 0, 2)).reshape(size, d * 6)  # (a i, b j)
        space.span_gram = gram.reshape(d, 6, d, 6).transpose(0, 2, 1, 3).reshape(d * d * 6, 6)
        # sum_a z_a maps_a h_o = (z (x) h_o) @ this
        space.span_flat = np.transpose(maps, (0, 2, 1)).reshape(d * 6, size)
        space.chunk = max(256, int(2 ** 22 // max(d * d * 6 + 4 * size, 1)))

    def analyze_batch(self, measured) -> BatchAnalysis:
        """Decompose k sets of measured contact wrenches (section VII-B, eq. 80).

        ``h_m`` is the configured synthesis of the measured resultant, ``h_c = h_m - h``; the
        internal-load wrench is the part of ``h_c`` W-orthogonal to ``N_m`` (the same for
        every admissible ``h_m``), and ``lambda_c`` its coordinates in the named basis,
        positive when the effectors apply the named load (a squeeze presses together).
        Torques reported at point contacts are ignored.

        :param measured: (k, n, 6) wrenches applied to the object, contact frames about the
            contact points.
        :return: the decomposition.
        """
        measured = finite_array(measured, (-1, self.n, 6), 'measured wrenches')
        count = measured.shape[0]
        applied = measured.reshape(count, -1) @ self._rotation_blocks.T
        resultant = applied @ self.grasp_matrix.T
        manipulating = resultant @ self.pseudo_inverse.T
        constraint = manipulating - applied
        space = self._internal
        internal = constraint if space.span_count == 0 else self._remove_manipulating_span(
            space, resultant, manipulating, constraint)
        error = manipulating @ self.grasp_matrix.T - resultant
        return BatchAnalysis(
            resultant=resultant,
            manipulating_contact=self._to_contact_frames(manipulating),
            constraint_contact=self._to_contact_frames(constraint),
            internal_contact=self._to_contact_frames(internal),
            manipulating_object=manipulating.reshape(count, self.n, 6),
            constraint_object=constraint.reshape(count, self.n, 6),
            internal_object=internal.reshape(count, self.n, 6),
            internal_load=-(internal @ space.coordinates.T),
            internal_load_norm=np.sqrt(0.5 * np.einsum('ki,i,ki->k', internal, self._metric, internal)),
            residual=np.abs(error).max(axis=1),
        )

    def analyze(self, measured) -> Analysis:
        """Decompose one set of measured contact wrenches.

        :param measured: (n, 6) wrenches applied to the object, contact frames about the
            contact points.
        :return: the decomposition.
        """
        measured = finite_array(measured, (self.n, 6), 'measured wrenches')
        return self.analyze_batch(measured[None]).sample(0)

    def _remove_manipulating_span(self, space, resultant, manipulating, constraint) -> np.ndarray:
        """Project ``h_c`` W-orthogonally off ``N_m(h_o)`` (5.2), in memory-bounded chunks."""
        out = np.empty_like(constraint)
        d = space.span_count
        step = space.chunk
        for start in range(0, resultant.shape[0], step):
            h_o = resultant[start:start + step]
            k = h_o.shape[0]
            dual = np.einsum('kai,ki->ka', (constraint[start:start + step] @ space.span_dual.T).reshape(k, d, 6), h_o)
            gram = np.einsum('kabi,ki->kab', (h_o @ space.span_gram.T).reshape(k, d, d, 6), h_o)
            # Tikhonov-damped projection: directions whose size falls below DIRECTION_TOLERANCE
            # of |h_m|_W (t_o -> 0) fade out continuously instead of dividing by ~0.
            scale = np.einsum('ki,i,ki->k', manipulating[start:start + step], self._metric,
                              manipulating[start:start + step])
            trace = np.trace(gram, axis1=1, axis2=2)
            # the 1e-12 trace term keeps exactly dependent directions (coincident contacts) solvable
            gram[:, np.arange(d), np.arange(d)] += ((DIRECTION_TOLERANCE ** 2) * scale + 1e-12 * trace)[:, None] + 1e-300
            z = np.linalg.solve(gram, dual[:, :, None])[:, :, 0]
            correction = (z[:, :, None] * h_o[:, None, :]).reshape(k, d * 6) @ space.span_flat
            out[start:start + step] = constraint[start:start + step] - correction
        return out
