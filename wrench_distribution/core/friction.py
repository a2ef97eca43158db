"""Contacts that can slip or lift: friction check and friction-aware internal loads.

A contact with a Coulomb coefficient ``mu`` and a normal ``n`` (contact frame, the direction
in which the effector pushes on the object) holds while its force ``f`` stays in the cone
``|f - (n.f) n| <= mu n.f``. A point contact without ``mu`` is only unilateral
(``n.f >= 0``); a rigid contact without ``mu`` is unconstrained.

:class:`FrictionModel` checks commands and measurements (normal force, utilisation
``|f_t| / (mu f_n)``, a status per contact) and, in ``auto`` mode, adds the internal load
``lambda`` in the named basis that minimises the sum of the constrained contacts' normal
forces subject to every utilisation ``<= 1 - margin`` and every point contact pressing. That
load lies in ``N(G)``, so the resultant is unchanged (docs/theory.md, last section). The
second-order cone program is small (``m <= 6n - 6`` variables, one 3-cone per contact); it
is solved with clarabel, its constraint matrix built once per geometry and only the
right-hand side updated per sample (benchmarks/bench_friction.py).

Only the public API of :class:`LoadDistributor` is used.
"""
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Dict, List, Mapping, Optional, Tuple

import numpy as np

from .errors import InvalidInputError, WrenchDistributionError
from .load_distributor import InternalLoad, LoadDistributor
from .validation import check_keys, finite_array

FRICTION_MODES = ('auto', 'check', 'off')
#: Status of a contact, in the order of its numeric code (the analyzer's topic).
STATUSES = ('ok', 'near_limit', 'slipping', 'pulling', 'unloaded', 'unconstrained')
#: Lowest utilisation auto mode may aim at when the friction feedback tightens its margin
#: (``friction_margin + friction_feedback_limit <= 1 - UTILISATION_FLOOR``).
UTILISATION_FLOOR = 0.05
#: Label of the second dimension of the analyzer's friction topic: the fields of a row.
FRICTION_FIELDS = 'utilisation;normal_force;status(' + ','.join(STATUSES) + ')'
#: Size, relative to the largest contact force, below which a contact counts as unloaded
#: (the solver's absolute accuracy makes the utilisation of such a contact meaningless).
FORCE_TOLERANCE = 1e-7
#: Slack on the utilisation limits before a status changes (solver accuracy).
UTILISATION_TOLERANCE = 1e-6


class FrictionInfeasibleError(WrenchDistributionError):
    """No internal load keeps every contact inside its cone (or pressing)."""


@dataclass(frozen=True)
class FrictionOptions:
    """What to do with friction cones.

    :param mode: ``'off'`` (nothing), ``'check'`` (report) or ``'auto'`` (report and add the
        internal load that keeps every contact inside its cone).
    :param margin: utilisation limit is ``1 - margin`` in auto mode; also the WARN band
        (``utilisation > 1 - margin`` is ``near_limit``), in [0, 1).
    """

    mode: str = 'check'
    margin: float = 0.1

    def __post_init__(self) -> None:
        if self.mode not in FRICTION_MODES:
            raise InvalidInputError(
                f'friction mode must be one of {", ".join(FRICTION_MODES)}, got {self.mode!r}')
        margin = float(finite_array(self.margin, (), 'friction margin'))
        if not 0.0 <= margin < 1.0:
            raise InvalidInputError(f'friction margin must be in [0, 1), got {margin}')
        object.__setattr__(self, 'margin', margin)

    @staticmethod
    def from_mapping(doc: Any) -> 'FrictionOptions':
        """Options from a problem file's ``options.friction`` mapping.

        :param doc: None or ``{mode: ..., margin: ...}``.
        :return: the options.
        :raises InvalidInputError: on unknown keys or values.
        """
        if doc is None:
            return FrictionOptions()
        if not isinstance(doc, Mapping):
            raise InvalidInputError('options.friction must be a mapping with keys mode, margin')
        check_keys(doc, ('mode', 'margin'), 'options.friction')
        return FrictionOptions(**dict(doc))


@dataclass(frozen=True)
class FrictionCheck:
    """Per-contact friction state of one set of contact wrenches.

    :ivar normal_force: ``n.f`` per contact (N), positive when pushing.
    :ivar tangential_force: ``|f_t|`` per contact (N).
    :ivar utilisation: ``|f_t| / (mu n.f)`` per contact; NaN where undefined (no ``mu``,
        pulling, or a tangential force with no normal force), see ``status``.
    :ivar status: one of :data:`STATUSES` per contact.
    """

    normal_force: np.ndarray
    tangential_force: np.ndarray
    utilisation: np.ndarray
    status: Tuple[str, ...]

    @property
    def codes(self) -> np.ndarray:
        """Return the status code of each contact, its index in :data:`STATUSES`."""
        return np.array([STATUSES.index(s) for s in self.status], dtype=float)

    @property
    def worst(self) -> str:
        """Return the most severe status over the contacts (pulling > slipping > near_limit > ok)."""
        for status in ('pulling', 'slipping', 'near_limit'):
            if status in self.status:
                return status
        return 'ok'


@dataclass(frozen=True)
class FrictionResult:
    """Commands after the friction step.

    :ivar commands: (n, 6) wrench commands, contact frames (or object axes if requested).
    :ivar internal_load: total internal load (prescribed + added), basis coordinates.
    :ivar added: the added internal load, basis coordinates (zeros unless ``auto``).
    :ivar check: friction state of the commands.
    """

    commands: np.ndarray
    internal_load: np.ndarray
    added: np.ndarray
    check: FrictionCheck


class FrictionModel:
    """Friction cones of one grasp, over a :class:`LoadDistributor` (public API only).

    :param distributor: the grasp; its contacts carry ``friction`` and ``normal``.
    :param options: mode and margin.
    """

    def __init__(self, distributor: LoadDistributor, options: Optional[FrictionOptions] = None) -> None:
        self.distributor = distributor
        self.options = options if options is not None else FrictionOptions()
        contacts = distributor.contacts
        self.n = len(contacts)
        self.mu = np.array([np.nan if c.friction is None else c.friction for c in contacts])
        self.normals = np.array([c.normal for c in contacts])
        self.has_cone = ~np.isnan(self.mu)
        self.unilateral = self.has_cone | np.array([c.type == 'point' for c in contacts])
        self.m = len(distributor.basis_names)

    # The check needs neither of these (the distributor checks every command it sends, on a
    # model built per solver): built on the first use of auto mode's program.
    @cached_property
    def tangents(self) -> np.ndarray:
        """Return each contact's tangent plane basis, (n, 3, 2)."""
        return np.array([_tangent_basis(n) for n in self.normals])

    @cached_property
    def basis_contact(self) -> np.ndarray:
        """Return the basis columns in the contact frames, (n, 6, m): ``E[:, j] = internal_wrench(unit_j)``."""
        columns = np.eye(self.m)
        return np.array([self.distributor.internal_wrench(columns[j])
                         for j in range(self.m)]).T.reshape(self.n, 6, self.m)

    @cached_property
    def program(self) -> Optional['ConeProgram']:
        """Return auto mode's :class:`ConeProgram`, or None when no contact is unilateral or ``m`` is 0."""
        return ConeProgram(self) if self.unilateral.any() and self.m else None

    @property
    def active(self) -> bool:
        """Tell whether some contact has a cone or is unilateral and the mode is not ``off``."""
        return self.options.mode != 'off' and bool(self.unilateral.any())

    def check(self, wrenches) -> FrictionCheck:
        """Check the normal force, utilisation and status of each contact.

        :param wrenches: (n, 6) wrenches applied to the object, contact frames.
        :return: the check.
        """
        wrenches = finite_array(wrenches, (self.n, 6), 'contact wrenches')
        return check_forces(wrenches[:, :3], self.normals, self.mu, self.unilateral,
                            self.options.margin)

    def required_load(self, commands, margin: Optional[float] = None) -> np.ndarray:
        """Compute the internal load to add to ``commands`` (auto mode's optimisation).

        :param commands: (n, 6) commands in the contact frames, manipulating part plus the
            prescribed internal load.
        :param margin: the margin of the cones (utilisation ``<= 1 - margin``), in [0, 1);
            None: the options' (the friction feedback passes a larger one).
        :return: (m,) coordinates in ``basis_names``.
        :raises FrictionInfeasibleError: when no internal load satisfies the cones.
        """
        commands = finite_array(commands, (self.n, 6), 'contact wrenches')
        if self.program is None:
            check = self.check(commands)
            if check.worst != 'ok':
                raise FrictionInfeasibleError(self.infeasible_message(check))
            return np.zeros(self.m)
        self.program.set_margin(self.options.margin if margin is None else margin)
        return self.program.solve(commands[:, :3])

    def apply(self, wrench, internal_load: InternalLoad = None) -> FrictionResult:
        """Commands for a desired resultant with the configured friction mode.

        :param wrench: desired resultant (6,), object frame about the centre of mass.
        :param internal_load: prescribed internal load (coordinates or handles).
        :return: commands (contact frames), loads and their check.
        :raises FrictionInfeasibleError: in auto mode, when no internal load satisfies the cones.
        """
        lam = np.zeros(self.m) if internal_load is None else (
            self.distributor.internal_load_from_handles(internal_load)
            if isinstance(internal_load, Mapping) else finite_array(internal_load, (self.m,), 'internal_load'))
        commands = self.distributor.wrench_commands(
            wrench, self.distributor.internal_wrench(lam) if self.m else None)
        added = np.zeros(self.m)
        if self.options.mode == 'auto' and self.unilateral.any():
            added = self.required_load(commands)
            commands = commands + np.einsum('ikj,j->ik', self.basis_contact, added)
        return FrictionResult(commands, lam + added, added, self.check(commands))

    def infeasible_message(self, check: FrictionCheck) -> str:
        """Explain why no internal load keeps the contacts inside their cones.

        :param check: the check of the commands that could not be corrected.
        :return: the message of :class:`FrictionInfeasibleError`, naming the contacts.
        """
        bad = [f'{name} ({status})' for name, status in zip(self.distributor.names, check.status)
               if status in ('pulling', 'slipping', 'near_limit')]
        return (f'no internal load keeps every contact inside its friction cone with margin '
                f'{self.options.margin:g}: {", ".join(bad) or "every contact is at its limit"}')


def check_forces(forces: np.ndarray, normals: np.ndarray, mu: np.ndarray, unilateral: np.ndarray,
                 margin: float) -> FrictionCheck:
    """Friction state of (n, 3) contact forces (see :class:`FrictionCheck`).

    :param forces: (n, 3) forces applied to the object, contact frames.
    :param normals: (n, 3) unit normals.
    :param mu: (n,) friction coefficients, NaN where none.
    :param unilateral: (n,) contacts that must press.
    :param margin: ``near_limit`` above ``1 - margin``.
    :return: the check.
    """
    normal = np.einsum('ij,ij->i', forces, normals)
    tangential = np.linalg.norm(forces - normal[:, None] * normals, axis=1)
    size = np.linalg.norm(forces, axis=1)
    tol = FORCE_TOLERANCE * max(float(size.max(initial=0.0)), 1e-12)
    utilisation = np.full(len(forces), np.nan)
    status = []
    for i in range(len(forces)):
        if not unilateral[i]:
            status.append('unconstrained')
        elif size[i] <= tol:
            status.append('unloaded')
            utilisation[i] = 0.0 if not np.isnan(mu[i]) else np.nan
        elif normal[i] < -tol:
            status.append('pulling')
        elif np.isnan(mu[i]):
            status.append('ok')
        elif normal[i] <= tol:
            status.append('slipping')
        else:
            utilisation[i] = tangential[i] / (mu[i] * normal[i])
            # compared on forces, with the solver's slack (relative and absolute)
            capacity = mu[i] * normal[i]
            slack = UTILISATION_TOLERANCE * capacity + 0.1 * tol
            status.append('slipping' if tangential[i] > capacity + slack else
                          'near_limit' if tangential[i] > (1 - margin) * capacity + slack else 'ok')
    return FrictionCheck(normal, tangential, utilisation, tuple(status))


def _tangent_basis(normal: np.ndarray) -> np.ndarray:
    """(3, 2) orthonormal basis of the plane orthogonal to a unit normal."""
    helper = np.eye(3)[int(np.argmin(np.abs(normal)))]
    first = np.cross(normal, helper)
    first /= np.linalg.norm(first)
    return np.column_stack([first, np.cross(normal, first)])


class ConeProgram:
    """The auto-mode SOCP in clarabel's form, built once per geometry.

    Variables ``x`` (reduced, scaled coordinates of the added load); per constrained contact
    ``s_i = b_i - A_i x`` lies in a 3-cone ``(mu' n.f, t1.f, t2.f)`` (or the non-negative ray
    ``n.f`` for a point contact without ``mu``); objective ``sum n.f`` over those contacts.
    Only ``b`` depends on the sample.
    """

    def __init__(self, model: FrictionModel) -> None:
        import clarabel  # lazy: only auto mode needs it
        from scipy import sparse
        self._clarabel = clarabel
        rows, objective, cones = [], np.zeros(model.m), []
        self.margin = model.options.margin
        scale = 1.0 - self.margin
        for i in np.flatnonzero(model.unilateral):
            basis = model.basis_contact[i, :3, :]  # (3, m)
            normal = model.normals[i]
            objective += normal @ basis
            if model.has_cone[i]:
                rows.append(np.vstack([scale * model.mu[i] * normal, model.tangents[i].T]))
                cones.append(clarabel.SecondOrderConeT(3))
            else:
                rows.append(normal[None, :])
                cones.append(clarabel.NonnegativeConeT(1))
        self._rows = np.vstack(rows)  # maps a contact-frame force stack to cone coordinates
        self._contacts = np.flatnonzero(model.unilateral)
        stacked = np.vstack([r @ model.basis_contact[i, :3, :] for r, i in zip(rows, self._contacts)])
        # Directions of lambda that change no constrained force are left as prescribed; decided
        # and complemented in coordinates of one unit (N*m ones over the reference length), so
        # that neither the rank nor the complement depends on the unit of length.
        distributor = model.distributor
        to_newtons = np.array([distributor.reference_length if unit == 'N*m' else 1.0
                               for unit in distributor.basis_units])
        _, singular, vt = np.linalg.svd(stacked * to_newtons, full_matrices=False)
        rank = int(np.sum(singular > 1e-9 * max(singular.max(initial=0.0), 1e-300)))
        self._reduce = vt[:rank].T * to_newtons[:, None]  # (m, r): lambda per reduced coordinate
        a_mat = -stacked @ self._reduce
        norms = np.linalg.norm(a_mat, axis=0)
        self._column_scale = 1.0 / np.where(norms > 0, norms, 1.0)
        self.rank = rank
        self._q = (objective @ self._reduce) * self._column_scale
        self._a = sparse.csc_matrix(a_mat * self._column_scale)
        self._sparse = sparse
        self._cones = cones
        self._model = model
        settings = clarabel.DefaultSettings()
        settings.verbose = False
        settings.tol_gap_abs = settings.tol_gap_rel = 1e-10
        settings.tol_feas = 1e-10
        self._settings = settings
        self._solver = None
        self.last_status = ''

    def set_margin(self, margin: float) -> None:
        """Use another margin: the rows of the normal forces scale by ``1 - margin``.

        Scaling a row leaves the row space, hence the reduction, unchanged; the constraint
        matrix is rebuilt (the solver set up again) only when the margin differs.

        :param margin: in [0, 1).
        :raises InvalidInputError: outside [0, 1).
        """
        margin = float(margin)
        if margin == self.margin:
            return
        if not 0.0 <= margin < 1.0:
            raise InvalidInputError(f'friction margin must be in [0, 1), got {margin}')
        model = self._model
        blocks = self._split_rows()  # views of the rows
        for block, i in zip(blocks, self._contacts):
            if model.has_cone[i]:
                block[0] = (1.0 - margin) * model.mu[i] * model.normals[i]  # as in __init__
        basis = model.basis_contact
        stacked = np.vstack([r @ basis[i, :3, :] for r, i in zip(blocks, self._contacts)])
        self._a = self._sparse.csc_matrix(-stacked @ self._reduce * self._column_scale)
        self.margin = margin
        self._solver = None

    def cone_data(self, forces: np.ndarray) -> np.ndarray:
        """Right-hand side ``b`` for (n, 3) contact forces."""
        return np.concatenate([r @ forces[i] for r, i in zip(self._split_rows(), self._contacts)])

    def _split_rows(self) -> List[np.ndarray]:
        if not hasattr(self, '_row_blocks'):
            sizes = [3 if self._model.has_cone[i] else 1 for i in self._contacts]
            self._row_blocks = np.split(self._rows, np.cumsum(sizes)[:-1])
        return self._row_blocks

    def solve(self, forces: np.ndarray) -> np.ndarray:
        """Compute the added internal load for the (n, 3) contact forces of the commands.

        :param forces: contact-frame forces of manipulating part plus prescribed load.
        :return: (m,) added load.
        :raises FrictionInfeasibleError: when the cones cannot all be met.
        """
        b_vec = self.cone_data(forces)
        size = float(np.abs(b_vec).max(initial=0.0))
        model = self._model
        if size == 0.0 or self.rank == 0:
            check = model.check(np.hstack([forces, np.zeros_like(forces)]))
            if check.worst != 'ok':
                raise FrictionInfeasibleError(model.infeasible_message(check))
            return np.zeros(model.m)
        x, status = self.solve_scaled(b_vec / size)
        if x is None:
            raise FrictionInfeasibleError(
                model.infeasible_message(model.check(np.hstack([forces, np.zeros_like(forces)])))
                + f' (solver: {status})')
        return self._reduce @ (x * self._column_scale) * size

    def solve_scaled(self, b_vec: np.ndarray) -> Tuple[Optional[np.ndarray], str]:
        """Solve for a right-hand side (the data already scaled).

        :param b_vec: cone data.
        :return: the scaled solution (None unless solved) and clarabel's status.
        """
        if self._solver is None:
            self._solver = self._clarabel.DefaultSolver(
                _zeros(len(self._q)), self._q, self._a, b_vec, self._cones, self._settings)
        else:
            self._solver.update(b=b_vec)
        result = self._solver.solve()
        self.last_status = status = str(result.status)
        if status not in ('Solved', 'AlmostSolved'):
            return None, status
        return np.array(result.x), status

    def objective(self, forces: np.ndarray, added: np.ndarray) -> float:
        """Sum of the constrained contacts' normal forces after adding ``added``.

        :param forces: (n, 3) forces before.
        :param added: (m,) added load.
        :return: the objective.
        """
        model = self._model
        after = forces + np.einsum('ikj,j->ik', model.basis_contact[:, :3, :], added)
        idx = self._contacts
        return float(np.einsum('ij,ij->', after[idx], model.normals[idx]))


def _zeros(size: int):
    from scipy import sparse
    return sparse.csc_matrix((size, size))


def friction_document(model: FrictionModel, check: FrictionCheck,
                      added: Optional[np.ndarray] = None) -> Dict[str, Any]:
    """JSON-ready friction report: per contact and, in auto mode, the added load.

    :param model: the friction model.
    :param check: the state to report.
    :param added: the added internal load, or None.
    :return: ``{'contacts': {name: {...}}, 'worst': ..., 'internal_load_added': {...}}``.
    """
    contacts = {}
    for i, name in enumerate(model.distributor.names):
        utilisation = check.utilisation[i]
        contacts[name] = {
            'normal_force': float(check.normal_force[i]),
            'tangential_force': float(check.tangential_force[i]),
            'utilisation': None if np.isnan(utilisation) else float(utilisation),
            'status': check.status[i],
            'mu': None if np.isnan(model.mu[i]) else float(model.mu[i]),
        }
    document: Dict[str, Any] = {'mode': model.options.mode, 'margin': model.options.margin,
                                'worst': check.worst, 'contacts': contacts}
    if added is not None:
        document['internal_load_added'] = dict(zip(model.distributor.basis_names, map(float, added)))
    return document


def add_friction(output: Dict[str, Any], model: FrictionModel, check: FrictionCheck,
                 added: Optional[np.ndarray]) -> None:
    """Add ``contacts.<name>.friction`` and a top-level ``friction`` to a result document.

    :param output: a synthesis or analysis document (modified in place).
    :param model: the friction model.
    :param check: the state of the reported wrenches.
    :param added: the added internal load (auto mode), or None.
    """
    report = friction_document(model, check, added)
    for name, entry in report.pop('contacts').items():
        output['contacts'][name]['friction'] = entry
    output['friction'] = report
