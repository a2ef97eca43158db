"""An independent reference for the auto-mode friction problem (tests and benchmarks).

Kelley's cutting-plane method: each friction cone is replaced by a polygonal pyramid that
contains it, the linear program over the internal-load coordinates ``lambda`` is solved with
HiGHS (``scipy.optimize.linprog``), and a supporting plane of every violated cone is added
until no cone is violated by more than a tolerance. Every pyramid contains its cone, so the
linear program's optimum is a lower bound of the true optimum, and its infeasibility proves
the cones infeasible. It shares no code with :class:`~.friction.FrictionModel`'s solver: it
works on ``lambda`` directly, without reduction or scaling.
"""
from dataclasses import dataclass
from typing import Optional

import numpy as np

#: Facets of the initial pyramids.
INITIAL_FACETS = 8


@dataclass(frozen=True)
class ReferenceResult:
    """Outcome of :func:`reference_solve`.

    :ivar feasible: False when a linear relaxation was infeasible (a proof).
    :ivar objective: lower bound of the sum of normal forces (None when infeasible).
    :ivar added: the relaxation's optimal ``lambda`` (None when infeasible).
    :ivar iterations: linear programs solved.
    :ivar violation: largest remaining cone violation, N.
    """

    feasible: bool
    objective: Optional[float]
    added: Optional[np.ndarray]
    iterations: int
    violation: float


def reference_solve(forces: np.ndarray, basis: np.ndarray, normals: np.ndarray, mu: np.ndarray,
                    unilateral: np.ndarray, margin: float, tolerance: float = 1e-11,
                    max_iterations: int = 400) -> ReferenceResult:
    """Minimise the sum of normal forces over ``lambda`` by cutting planes.

    :param forces: (n, 3) contact-frame forces before the added load.
    :param basis: (n, 3, m) contact-frame forces of each basis element.
    :param normals: (n, 3) unit normals.
    :param mu: (n,) coefficients, NaN for none.
    :param unilateral: (n,) contacts that must press.
    :param margin: utilisation limit ``1 - margin``.
    :param tolerance: relative violation at which to stop.
    :param max_iterations: cap on the linear programs solved.
    :return: the result.
    """
    from scipy.optimize import linprog
    m = basis.shape[2]
    scale = max(float(np.abs(forces).max(initial=0.0)), 1e-12)
    cost = np.zeros(m)
    rows, rhs = [], []
    cones = []
    for i in np.flatnonzero(unilateral):
        n_i = normals[i]
        cost += n_i @ basis[i]
        # n.f >= 0  ->  -(n B) lam <= n a
        rows.append(-(n_i @ basis[i]))
        rhs.append(float(n_i @ forces[i]))
        if not np.isnan(mu[i]):
            limit = (1.0 - margin) * mu[i]
            projector = np.eye(3) - np.outer(n_i, n_i)
            cones.append((i, limit, projector))
            helper = np.eye(3)[int(np.argmin(np.abs(n_i)))]
            e1 = np.cross(n_i, helper)
            e1 /= np.linalg.norm(e1)
            e2 = np.cross(n_i, e1)
            for angle in np.linspace(0, 2 * np.pi, INITIAL_FACETS, endpoint=False):
                _cut(rows, rhs, np.cos(angle) * e1 + np.sin(angle) * e2, limit, n_i, forces[i], basis[i])
    bound = 1e6 * scale * max(1.0, float(np.abs(basis).max(initial=0.0)) ** -1)
    violation = np.inf
    for iteration in range(1, max_iterations + 1):
        result = linprog(cost, A_ub=np.array(rows), b_ub=np.array(rhs),
                         bounds=[(-bound, bound)] * m, method='highs')
        if result.status == 2:
            return ReferenceResult(False, None, None, iteration, np.inf)
        if result.status != 0:
            raise RuntimeError(f'reference LP failed: {result.message}')
        lam = result.x
        after = forces + basis @ lam
        violation = 0.0
        for i, limit, projector in cones:
            tangential = projector @ after[i]
            size = np.linalg.norm(tangential)
            excess = size - limit * (normals[i] @ after[i])
            violation = max(violation, excess)
            if excess > tolerance * scale and size > 0:
                _cut(rows, rhs, tangential / size, limit, normals[i], forces[i], basis[i])
        if violation <= tolerance * scale:
            break
    objective = float(cost @ lam + sum(normals[i] @ forces[i] for i in np.flatnonzero(unilateral)))
    return ReferenceResult(True, objective, lam, iteration, float(violation))


def _cut(rows, rhs, direction, limit, normal, force, basis) -> None:
    """Append ``u.f - limit n.f <= 0`` for ``f = force + basis lam`` (a plane supporting the cone)."""
    row = direction @ basis - limit * (normal @ basis)
    rows.append(row)
    rhs.append(float(limit * (normal @ force) - direction @ force))


def random_grasp(rng: np.random.Generator, n: int, kind: str = 'point', radius: float = 0.05):
    """Random contacts on a sphere, pushing inwards, with random friction (tests, benchmarks).

    :param rng: random generator.
    :param n: number of contacts.
    :param kind: ``'point'`` or ``'rigid'``.
    :param radius: sphere radius, m.
    :return: list of :class:`~.contacts.Contact`.
    """
    from scipy.spatial.transform import Rotation
    from .contacts import Contact
    contacts = []
    for i in range(n):
        direction = rng.normal(size=3)
        direction /= np.linalg.norm(direction)
        # contact frame: a random rotation; the inward normal expressed in it
        frame = Rotation.from_quat(rng.normal(size=4))
        normal = frame.inv().apply(-direction)
        contacts.append(Contact(f'c{i}', kind, radius * direction, frame.as_quat(),
                                friction=float(rng.uniform(0.3, 1.2)), normal=normal))
    return contacts
