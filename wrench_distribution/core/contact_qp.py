"""TSID's way of letting a contact go, written as its quadratic program (a baseline, for comparison).

TSID (``tsid.InverseDynamicsFormulationAccForce``) solves, per control tick, for the contact
forces together with the joint accelerations; with the trunk's motion given, what is left of it
for the contact forces is: the forces of least weighted norm (its force-regularisation task)
that produce the required wrench (the dynamics equality), each inside its friction cone and with
a normal force between a minimum and a maximum. ``removeRigidContact(name, duration)`` ramps the
leaving contact's maximum normal force from its current normal force down to the minimum over
``duration``, then removes it; ``addRigidContact`` adds one at once.

:func:`least_norm_contact_forces` is that program for point contacts, solved with Clarabel (TSID
itself linearises the cones into pyramids and uses its own active-set solver): the benchmark
``benchmarks/bench_transitions.py`` runs it beside :class:`.WeightedDistributor` on the same
schedule. Nothing here is used by the package's own distribution.
"""
from dataclasses import dataclass
from typing import Optional

import numpy as np

from .errors import InvalidInputError
from .spatial import skew


@dataclass(frozen=True)
class ContactForces:
    """Contact forces of the program, one row per contact.

    :ivar forces: (n, 3) forces applied to the object, object axes.
    :ivar status: Clarabel's status.
    """

    forces: np.ndarray
    status: str


def least_norm_contact_forces(r: np.ndarray, normals: np.ndarray, mu: np.ndarray, wrench: np.ndarray,
                              max_normal: Optional[np.ndarray] = None, min_normal: float = 0.0) -> ContactForces:
    """``min sum |f_i|^2`` with ``G f = h_o``, ``|f_t,i| <= mu_i f_n,i``, ``f_min <= f_n,i <= f_max,i``.

    :param r: (n, 3) contact points relative to the centre of mass.
    :param normals: (n, 3) unit normals (object axes): the direction in which each contact pushes.
    :param mu: (n,) friction coefficients.
    :param wrench: (6,) the resultant, about the centre of mass.
    :param max_normal: (n,) largest normal forces (inf: none), or None.
    :param min_normal: smallest normal force of every contact.
    :return: the forces (zero and the status when the program is not solved).
    :raises InvalidInputError: on shapes that do not match.
    """
    import clarabel  # lazy: only the benchmark and its test use it
    from scipy import sparse
    n = r.shape[0]
    if normals.shape != (n, 3) or mu.shape != (n,) or wrench.shape != (6,):
        raise InvalidInputError('least_norm_contact_forces: r (n, 3), normals (n, 3), mu (n,), wrench (6,)')
    size = float(np.abs(wrench).max()) or 1.0
    grasp = np.vstack([np.tile(np.eye(3), n), np.hstack(list(skew(r)))])
    limits = np.full(n, np.inf) if max_normal is None else np.asarray(max_normal, dtype=float)
    pushing = np.zeros((n, 3 * n))
    for i, normal in enumerate(normals):
        pushing[i, 3 * i:3 * i + 3] = normal
    bounded = np.flatnonzero(np.isfinite(limits))
    rows = [grasp, -pushing, pushing[bounded]]
    values = [wrench / size, np.full(n, -min_normal / size), limits[bounded] / size]
    cones = [clarabel.ZeroConeT(6), clarabel.NonnegativeConeT(n + bounded.size)]
    for i, normal in enumerate(normals):
        helper = np.eye(3)[int(np.argmin(np.abs(normal)))]
        first = np.cross(normal, helper) / np.linalg.norm(np.cross(normal, helper))
        block = np.zeros((3, 3 * n))
        block[0, 3 * i:3 * i + 3] = -mu[i] * normal
        block[1, 3 * i:3 * i + 3] = -first
        block[2, 3 * i:3 * i + 3] = -np.cross(normal, first)
        rows.append(block)
        values.append(np.zeros(3))
        cones.append(clarabel.SecondOrderConeT(3))
    settings = clarabel.DefaultSettings()
    settings.verbose = False
    solver = clarabel.DefaultSolver(sparse.identity(3 * n, format='csc') * 2.0, np.zeros(3 * n),
                                    sparse.csc_matrix(np.vstack(rows)), np.concatenate(values), cones, settings)
    result = solver.solve()
    status = str(result.status)
    if status not in ('Solved', 'AlmostSolved'):
        return ContactForces(np.zeros((n, 3)), status)
    return ContactForces(np.array(result.x).reshape(n, 3) * size, status)
