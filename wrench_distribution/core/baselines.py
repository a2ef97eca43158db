"""Baseline load-distribution methods from the literature, for comparison only.

Everything here works on plain arrays and follows the notation of Flight and Gosselin,
"A Generalized Theory of Load Distribution in Redundantly-actuated Robotic Systems"
(arXiv:2603.11431, 2026), called "the paper" below; equation numbers refer to it.

Conventions shared by every function:

- ``r``: contact positions, shape ``(n, 3)``, relative to the centre of mass, object frame.
- ``types``: sequence of ``'rigid'`` (force and torque, 6 columns of ``G``, eq. 14) or
  ``'point'`` (pure force, 3 columns of ``G``, eq. 13) of length ``n``. Mixed lists are allowed.
- A *stacked* wrench vector ``h`` has ``N = sum(6 if rigid else 3)`` entries, ordered contact by
  contact as the columns of :func:`grasp_matrix`. An *expanded* wrench array has shape
  ``(n, 6)``; the torque entries of point contacts are zero.
- ``h_o``: resultant wrench ``[fx, fy, fz, tx, ty, tz]`` about the centre of mass, shape ``(6,)``
  or a batch ``(k, 6)``.

These are reference implementations of *other people's* methods (or of formulas the paper shows
to be wrong), written so that the paper's section IX-C comparison can be reproduced and timed.
The package's own solver is :class:`wrench_distribution.core.LoadDistributor`.

Nothing here imports ROS; :func:`donner_qp_decomposition` imports ``clarabel`` and ``scipy``
lazily, and only when its closed-form fast path does not apply.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence, Tuple, Union

import numpy as np

from .grasp import grasp_matrix as full_grasp_matrix
from .spatial import skew

__all__ = [
    'grasp_matrix',
    'expand_stacked',
    'stack_expanded',
    'moore_penrose',
    'erhart_hirche_eq4',
    'corrected_eq81',
    'helicoidal_fit',
    'kw_interaction',
    'kumar_waldron_helicoidal',
    'DonnerDecomposition',
    'donner_qp_decomposition',
]

ArrayLike = Union[np.ndarray, Sequence]

_VALID_TYPES = ('rigid', 'point')


# ----------------------------------------------------------------------------- helpers


def _check_r_types(r: ArrayLike, types: Sequence[str]) -> Tuple[np.ndarray, Tuple[str, ...]]:
    """Validate positions and contact types.

    :param r: positions ``(n, 3)``.
    :param types: ``n`` strings, each ``'rigid'`` or ``'point'``.
    :return: ``(r as float array (n, 3), types as tuple)``.
    :raises ValueError: on wrong shapes, unknown types or non-finite positions.
    """
    r = np.asarray(r, dtype=float)
    if r.ndim != 2 or r.shape[1] != 3 or r.shape[0] < 1:
        raise ValueError(f'positions must have shape (n, 3) with n >= 1, got {r.shape}')
    if not np.all(np.isfinite(r)):
        raise ValueError('positions contain NaN or Inf')
    if isinstance(types, str):
        types = [types] * r.shape[0]
    types = tuple(types)
    if len(types) != r.shape[0]:
        raise ValueError(f'{len(types)} contact types given for {r.shape[0]} positions')
    for t in types:
        if t not in _VALID_TYPES:
            raise ValueError(f"unknown contact type {t!r}; expected 'rigid' or 'point'")
    return r, types


def _check_wrench(h_o: ArrayLike) -> np.ndarray:
    """Validate a resultant wrench ``(6,)`` or batch ``(k, 6)``.

    :param h_o: wrench(es).
    :return: float array of the same shape.
    :raises ValueError: on wrong shape or non-finite entries.
    """
    h_o = np.asarray(h_o, dtype=float)
    if h_o.shape[-1:] != (6,) or h_o.ndim not in (1, 2):
        raise ValueError(f'resultant wrench must have shape (6,) or (k, 6), got {h_o.shape}')
    if not np.all(np.isfinite(h_o)):
        raise ValueError('resultant wrench contains NaN or Inf')
    return h_o


def _column_index(types: Sequence[str]) -> np.ndarray:
    """Index the entries of a flattened ``(n, 6)`` array present in the stacked vector.

    :param types: contact types.
    :return: integer array of length ``N`` (columns of ``G``, eqs. 13/14).
    """
    idx = []
    for i, t in enumerate(types):
        idx.extend(range(6 * i, 6 * i + (6 if t == 'rigid' else 3)))
    return np.asarray(idx, dtype=np.intp)


# ----------------------------------------------------------------------------- grasp matrix


def grasp_matrix(r: ArrayLike, types: Sequence[str]) -> np.ndarray:
    """Grasp matrix ``G`` of eq. 1 for mixed contacts.

    Each point contact contributes the 3 columns ``[I3; S(r_i)]`` of eq. 13, each rigid contact
    the 6 columns ``[[I3, 0], [S(r_i), I3]]`` of eq. 14, in contact order, so that
    ``h_o = G h`` (eq. 1) with ``h`` the stacked vector of applied wrenches (eq. 12).

    :param r: contact positions relative to the centre of mass, ``(n, 3)``.
    :param types: ``'rigid'`` or ``'point'`` per contact (a single string applies to all).
    :return: ``G``, shape ``(6, N)`` with ``N = 6 n_rigid + 3 n_point``.
    """
    r, types = _check_r_types(r, types)
    rigid = np.array([t == 'rigid' for t in types])
    return full_grasp_matrix(r, rigid)[:, _column_index(types)]


def expand_stacked(h: ArrayLike, types: Sequence[str]) -> np.ndarray:
    """Expand a stacked wrench vector to one 6-vector per contact.

    :param h: stacked wrenches, shape ``(N,)`` or batch ``(k, N)`` (column order of
        :func:`grasp_matrix`).
    :param types: contact types.
    :return: ``(n, 6)`` or ``(k, n, 6)``; point contacts get zero torques.
    """
    types = tuple([types] if isinstance(types, str) else types)
    h = np.asarray(h, dtype=float)
    idx = _column_index(types)
    if h.shape[-1] != idx.size:
        raise ValueError(f'stacked vector has {h.shape[-1]} entries, expected {idx.size}')
    out = np.zeros(h.shape[:-1] + (6 * len(types),))
    out[..., idx] = h
    return out.reshape(h.shape[:-1] + (len(types), 6))


def stack_expanded(h: ArrayLike, types: Sequence[str]) -> np.ndarray:
    """Inverse of :func:`expand_stacked`: drop the torque entries of point contacts.

    :param h: per-contact wrenches ``(n, 6)`` or ``(k, n, 6)``.
    :param types: contact types.
    :return: stacked vector ``(N,)`` or ``(k, N)``.
    """
    types = tuple([types] if isinstance(types, str) else types)
    h = np.asarray(h, dtype=float)
    if h.shape[-2:] != (len(types), 6):
        raise ValueError(f'expected per-contact wrenches (..., {len(types)}, 6), got {h.shape}')
    flat = h.reshape(h.shape[:-2] + (6 * len(types),))
    return flat[..., _column_index(types)]


# ----------------------------------------------------------------------------- Kumar & Waldron


def moore_penrose(r: ArrayLike, types: Sequence[str], h_o: ArrayLike) -> np.ndarray:
    """Unweighted Moore-Penrose distribution of Kumar and Waldron (1988), eq. 3.

    ``h = G^+ h_o`` with ``G`` from :func:`grasp_matrix`. For point contacts this is the
    *equilibrating force distribution* ``f_e``, which satisfies the no-interaction condition
    eq. 2. ``numpy.linalg.pinv`` is used, so rank-deficient ``G`` (e.g. two point contacts)
    gives the least-squares, minimum-norm answer rather than an error.

    Note: for point contacts every column of ``G^T`` is ``[I3, S(r_i)^T]``, so
    ``G^+ h_o = G^T y`` always has the form ``f_i = a + alpha x r_i``, i.e. the forces do lie on
    a helicoidal field (see :func:`helicoidal_fit`); what they do not match, in general, is the
    virtual acceleration field of the paper (section VIII-B).

    :param r: positions ``(n, 3)`` relative to the centre of mass.
    :param types: contact types.
    :param h_o: resultant ``(6,)`` or batch ``(k, 6)``.
    :return: per-contact wrenches ``(n, 6)`` or ``(k, n, 6)`` (point torques are 0).
    """
    r, types = _check_r_types(r, types)
    h_o = _check_wrench(h_o)
    g_pinv = np.linalg.pinv(grasp_matrix(r, types))
    return expand_stacked(h_o @ g_pinv.T, types)


def kw_interaction(r: ArrayLike, forces: ArrayLike) -> np.ndarray:
    """Kumar and Waldron's pairwise interaction terms, left-hand side of eq. 2.

    :param r: positions ``(n, 3)``.
    :param forces: forces ``(n, 3)`` (or ``(n, 6)``, torques ignored), or a batch ``(k, n, 3|6)``.
    :return: matrix ``(n, n)`` (or ``(k, n, n)``) of ``(f_j - f_i) . (r_j - r_i)``; all zero
        for an interaction-free (equilibrating) distribution.
    """
    r = np.asarray(r, dtype=float)
    f = np.asarray(forces, dtype=float)[..., :3]
    df = f[..., None, :, :] - f[..., :, None, :]
    dr = r[None, :, :] - r[:, None, :]
    return np.einsum('...ijk,ijk->...ij', df, dr)


def kumar_waldron_helicoidal(r: ArrayLike, h_o: ArrayLike) -> np.ndarray:
    """Helicoidal-field forces in the manner of Kumar and Waldron (1988), as reported in eq. 99.

    Reconstruction from the paper's description (sections II-A, VIII-B, IX-C), not from [14]
    itself: the field ``f_i = a + alpha x r_i`` gets the parameters that ``G^+`` has when the
    contacts' centroid is the reference point (then ``G G^T`` is block-diagonal, cf. eqs.
    119-121 with ``m_i* = 1``)::

        a     = f_o / n
        alpha = (sum_i S(r_i) S(r_i)^T)^-1 t_o

    but evaluated with ``r_i`` and ``t_o`` about the centre of mass. When the centroid is not
    the centre of mass the forces do not reproduce ``h_o``: the force sum is
    ``f_o + alpha x sum r_i``. On the IX-C example this gives eq. 99 to within 6.4e-4 (at most
    one unit in the printed third decimal; the same agreement the paper's eq. 97 has with eq. 4
    evaluated on the paper's own inputs) and the wrong resultant printed after eq. 99.
    Point contacts only; needs ``sum S S^T`` invertible (contacts not all on one line through
    the centre of mass).

    :param r: positions ``(n, 3)`` relative to the centre of mass.
    :param h_o: resultant ``(6,)`` or batch ``(k, 6)``.
    :return: forces ``(n, 3)`` or ``(k, n, 3)``.
    """
    r, _ = _check_r_types(r, 'point')
    h_o = _check_wrench(h_o)
    s = skew(r)
    j_bar = np.einsum('ijk,ilk->jl', s, s)  # sum S(r_i) S(r_i)^T
    alpha = np.linalg.solve(j_bar, h_o[..., 3:, None] if h_o.ndim == 1 else h_o[..., 3:].T)
    alpha = alpha[:, 0] if h_o.ndim == 1 else alpha.T
    a = h_o[..., :3] / r.shape[0]
    return a[..., None, :] + np.cross(alpha[..., None, :], r)


# ----------------------------------------------------------------------------- Erhart & Hirche


def _torque_inertias(torque_inertias: Optional[ArrayLike], n: int) -> np.ndarray:
    """Normalise the ``J_i*`` argument to an ``(n, 3, 3)`` array.

    :param torque_inertias: ``None`` (all zero: forces only), ``(n,)`` scalars (``J_i* = j_i I3``)
        or ``(n, 3, 3)`` tensors.
    :param n: number of contacts.
    :return: ``(n, 3, 3)`` array.
    """
    if torque_inertias is None:
        return np.zeros((n, 3, 3))
    j = np.asarray(torque_inertias, dtype=float)
    if j.shape == (n,):
        return j[:, None, None] * np.eye(3)
    if j.shape == (n, 3, 3):
        return j
    raise ValueError(f'torque_inertias must be None, shape ({n},) or ({n}, 3, 3); got {j.shape}')


def _virtual_body(r: np.ndarray, types: Tuple[str, ...], virtual_masses: ArrayLike,
                  torque_inertias: Optional[ArrayLike]) -> Tuple[np.ndarray, np.ndarray, float, np.ndarray]:
    """Virtual masses and inertias, with ``m_o*`` from eq. 5/51 and ``J_o*`` from eq. 6/52.

    :return: ``(m (n,), J (n, 3, 3), m_o, J_o (3, 3))``.
    """
    n = r.shape[0]
    m = np.asarray(virtual_masses, dtype=float)
    if m.shape != (n,):
        raise ValueError(f'virtual_masses must have shape ({n},), got {m.shape}')
    j = _torque_inertias(torque_inertias, n)
    for i, t in enumerate(types):
        if t == 'point' and np.any(j[i] != 0.0):
            raise ValueError(f'contact {i} is a point contact: its torque inertia must be 0')
    m_o = float(m.sum())  # eq. 5 / 51
    s = skew(r)
    j_o = j.sum(axis=0) + np.einsum('i,ijk,ilk->jl', m, s, s)  # eq. 6 / 52: S m S^T
    if m_o == 0.0:
        raise ValueError('the virtual masses sum to zero')
    return m, j, m_o, j_o


def erhart_hirche_eq4(r: ArrayLike, types: Sequence[str], h_o: ArrayLike,
                      virtual_masses: ArrayLike,
                      torque_inertias: Optional[ArrayLike] = None) -> np.ndarray:
    """Erhart and Hirche's parametrized pseudo-inverse ``G_M^+``, exactly as printed in eq. 4.

    .. warning::
       This reproduces a **known-wrong formula**, for comparison only. Eq. 4 writes the
       force-torque block as ``m_i* [J_o*]^-1 S(r_i)^T``; the paper (appendix X-B, eqs.
       112-116) shows the correct order is ``m_i* S(r_i)^T [J_o*]^-1`` (eq. 81). With the
       printed order the forces generally do **not** reproduce ``h_o`` (section IX-C, eq. 97:
       the resultant torque comes out as ``[-0.126, 2.690, 1.820]`` instead of
       ``[-0.208, 1.957, 1.846]``). Use :func:`corrected_eq81` or the package's
       ``LoadDistributor`` for the correct distribution.

    Per contact (eq. 4, with ``m_o* = sum m_i*`` eq. 5 and ``J_o*`` from eq. 6)::

        f_i = (m_i*/m_o*) f_o + m_i* [J_o*]^-1 S(r_i)^T t_o
        t_i = J_i* [J_o*]^-1 t_o

    :param r: positions ``(n, 3)`` relative to the centre of mass.
    :param types: contact types; point contacts must have ``J_i* = 0``.
    :param h_o: resultant ``(6,)`` or batch ``(k, 6)``.
    :param virtual_masses: ``m_i*``, shape ``(n,)`` (e.g. from eq. 64).
    :param torque_inertias: ``J_i*``: ``None`` (forces only), ``(n,)`` scalars times ``I3`` or
        ``(n, 3, 3)``.
    :return: per-contact wrenches ``(n, 6)`` or ``(k, n, 6)``.
    """
    return _parametrized(r, types, h_o, virtual_masses, torque_inertias, corrected=False)


def corrected_eq81(r: ArrayLike, types: Sequence[str], h_o: ArrayLike,
                   virtual_masses: ArrayLike,
                   torque_inertias: Optional[ArrayLike] = None) -> np.ndarray:
    """Compute the paper's corrected ``G_M^+`` (eq. 81, derived in eqs. 109-116), as a plain reference.

    Same arguments as :func:`erhart_hirche_eq4`; the only difference is the order
    ``m_i* S(r_i)^T [J_o*]^-1`` (eq. 114). It reproduces ``h_o`` exactly when the virtual
    parameters satisfy eqs. 51-53 and ``J_o*`` is invertible. This is a small independent
    cross-check, not a replacement for ``LoadDistributor`` (no regime handling).

    :return: per-contact wrenches ``(n, 6)`` or ``(k, n, 6)``.
    """
    return _parametrized(r, types, h_o, virtual_masses, torque_inertias, corrected=True)


def _parametrized(r: ArrayLike, types: Sequence[str], h_o: ArrayLike, virtual_masses: ArrayLike,
                  torque_inertias: Optional[ArrayLike], corrected: bool) -> np.ndarray:
    """Shared body of :func:`erhart_hirche_eq4` (``corrected=False``) and :func:`corrected_eq81`."""
    r, types = _check_r_types(r, types)
    h_o = _check_wrench(h_o)
    m, j, m_o, j_o = _virtual_body(r, types, virtual_masses, torque_inertias)
    j_o_inv = np.linalg.inv(j_o)
    st = np.swapaxes(skew(r), -1, -2)  # S(r_i)^T
    if corrected:
        force_block = m[:, None, None] * (st @ j_o_inv)  # eq. 81 / 114
    else:
        force_block = m[:, None, None] * (j_o_inv @ st)  # eq. 4 (wrong order)
    torque_block = j @ j_o_inv  # (n, 3, 3)
    f_o = h_o[..., :3]
    t_o = h_o[..., 3:]
    forces = (m / m_o)[:, None] * f_o[..., None, :] + np.einsum('ijk,...k->...ij', force_block, t_o)
    torques = np.einsum('ijk,...k->...ij', torque_block, t_o)
    return np.concatenate([forces, torques], axis=-1)


# ----------------------------------------------------------------------------- helicoidal fields


def helicoidal_fit(r: ArrayLike, forces: ArrayLike) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Least-squares fit of forces to a helicoidal field ``f_i = a + alpha x r_i``.

    A field ``a + alpha x r`` is the velocity field of a rigid body (a twist); its field lines
    are helices about one screw axis, which is the definition in the paper's footnote 1.
    The paper's virtual acceleration field (eq. 49, ``p_o* + w_o* x r_i``) is of this form, so
    the manipulating forces of eq. 81 divided by their virtual masses fit it exactly, with
    ``a = p_o*`` and ``alpha = w_o*``. The fit solves ``min ||f_i - a - alpha x r_i||`` over
    ``(a, alpha)`` with ``numpy.linalg.lstsq`` (6 unknowns, ``3 n`` equations).

    :param r: positions ``(n, 3)``.
    :param forces: ``(n, 3)`` (or ``(n, 6)``, torques ignored), or a batch ``(k, n, 3|6)``.
    :return: ``(a, alpha, residual)``: ``a`` and ``alpha`` of shape ``(3,)`` (or ``(k, 3)``), and
        ``residual`` the Euclidean norm of the misfit over all contacts (scalar array, or
        ``(k,)``). ``residual`` is 0 (to rounding) iff the forces lie on a helicoidal field.
    """
    r = np.asarray(r, dtype=float)
    f = np.asarray(forces, dtype=float)[..., :3]
    n = r.shape[0]
    if f.shape[-2:] != (n, 3):
        raise ValueError(f'forces must have shape (..., {n}, 3), got {f.shape}')
    # f_i = a + alpha x r_i = a + S(r_i)^T alpha  (S(r)^T alpha = alpha x r)
    design = np.concatenate([np.tile(np.eye(3), (n, 1)),
                             np.swapaxes(skew(r), -1, -2).reshape(3 * n, 3)], axis=1)
    rhs = f.reshape(f.shape[:-2] + (3 * n,))
    batch = rhs.ndim == 2
    rhs_cols = rhs.T if batch else rhs[:, None]
    sol, *_ = np.linalg.lstsq(design, rhs_cols, rcond=None)
    misfit = rhs_cols - design @ sol
    residual = np.linalg.norm(misfit, axis=0)
    if batch:
        return sol[:3].T, sol[3:].T, residual
    return sol[:3, 0], sol[3:, 0], residual[0]


# ----------------------------------------------------------------------------- Donner et al.


@dataclass(frozen=True)
class DonnerDecomposition:
    """Result of :func:`donner_qp_decomposition`.

    :ivar manipulating: ``h_m``, per-contact manipulating wrenches ``(n, 6)``.
    :ivar constraint: ``h_c = h - h_m`` (n, 6). **Sign convention of Schmidts et al. / Donner et
        al. (eq. 8, ``h = h_m + h_c``), opposite to the paper's eq. 80 (``h_c = h_m - h``).**
    :ivar resultant: ``G h`` (6,), reproduced by ``G h_m``.
    :ivar status: ``'Solved'`` etc. from clarabel, or ``'ClosedForm'`` when the unconstrained
        minimiser already satisfied the cone constraints (no solver call).
    :ivar objective: value of ``sum ||f_m,i||^2 + w^2 ||t_m,i||^2`` at the solution.
    :ivar iterations: interior-point iterations (0 for the closed form).
    """

    manipulating: np.ndarray
    constraint: np.ndarray
    resultant: np.ndarray
    status: str
    objective: float
    iterations: int


def donner_qp_decomposition(r: ArrayLike, types: Sequence[str], measured_h: ArrayLike,
                            torque_weight: float = 1.0, tol: float = 1e-9,
                            max_iter: int = 200) -> DonnerDecomposition:
    """Wrench decomposition of the kind proposed by Donner, Endo and Buss (2018).

    As summarised in the paper (sections II-B, VIII-C, IX-A): the applied wrenches are split as
    ``h_i = h_m,i + h_c,i`` (eq. 8) and the manipulating part must be "no larger than the applied
    one": per contact ``f_m,i^T f_m,i <= f_i^T f_m,i`` and likewise ``t_m,i^T t_m,i <=
    t_i^T t_m,i``. Since ``|x|^2 <= a^T x`` is the ball ``||x - a/2|| <= ||a||/2``, this is a
    second-order-cone constraint; it is also exactly the condition that the constraint part
    ``a - x`` satisfies the same inequality, so the manipulating and constraint components both
    lie in the circles of the paper's Fig. 7. Donner et al. minimise the Euclidean norms of the
    manipulating forces and torques (their abstract); here the convex objective

    ``minimise  sum_i ||f_m,i||^2 + w^2 ||t_m,i||^2  s.t.  G h_m = G h,  balls above``

    is solved with clarabel. (Minimising the constraint part instead would be trivial:
    ``h_m = h`` is always feasible.) ``w = torque_weight`` (1/m) makes the objective
    dimensionally homogeneous; the default 1 treats 1 N*m like 1 N.

    Fast path (numpy only): the minimiser without the cone constraints is the weighted
    minimum-norm solution ``h_m = W^-1 G^T (G W^-1 G^T)^+ G h``; when it already satisfies every
    ball it is optimal and returned with ``status='ClosedForm'``, without importing scipy or
    clarabel.

    Sign convention: the returned ``constraint`` is ``h - h_m`` (Donner's eq. 8), the negative of
    the paper's ``h_c`` (eq. 80).

    :param r: positions ``(n, 3)`` relative to the centre of mass.
    :param types: contact types; the torque entries of point contacts are ignored (treated as 0).
    :param measured_h: applied wrenches ``(n, 6)``, object-frame axes, about the contact points.
    :param torque_weight: ``w`` in the objective, > 0.
    :param tol: feasibility tolerance of the fast-path check and the solver's tolerances.
    :param max_iter: solver iteration limit.
    :return: :class:`DonnerDecomposition`.
    :raises ValueError: on bad shapes or non-finite input.
    """
    r, types = _check_r_types(r, types)
    h = _donner_applied(measured_h, types, torque_weight)
    g = grasp_matrix(r, types)
    x_applied = stack_expanded(h, types)
    h_o = g @ x_applied
    # Weights of the objective, in stacked order: 1 for force entries, w^2 for torques.
    weights = np.ones((len(types), 6))
    weights[:, 3:] = torque_weight ** 2
    wvec = stack_expanded(weights, types)
    blocks = _donner_blocks(x_applied, types)

    # Fast path: weighted minimum-norm solution of G x = h_o (unconstrained optimum).
    winv_gt = g.T / wvec[:, None]
    x0 = winv_gt @ (np.linalg.pinv(g @ winv_gt) @ h_o)
    scale = max(1.0, float(np.abs(x_applied).max()))
    exact = np.allclose(g @ x0, h_o, atol=1e-9 * scale)
    if _in_balls(blocks, x0, tol * scale * scale) and exact:
        hm = expand_stacked(x0, types)
        return DonnerDecomposition(hm, h - hm, h_o, 'ClosedForm', float(x0 @ (wvec * x0)), 0)
    x, status, iterations = _donner_socp(g, h_o, wvec, blocks, tol, max_iter)
    hm = expand_stacked(x, types)
    return DonnerDecomposition(hm, h - hm, h_o, status, float(x @ (wvec * x)), iterations)


def _donner_applied(measured_h: ArrayLike, types: Sequence[str],
                    torque_weight: float) -> np.ndarray:
    """Check the applied wrenches of :func:`donner_qp_decomposition`; zero point torques.

    :return: a checked copy ``(n, 6)``.
    :raises ValueError: on a bad shape, non-finite values or a weight <= 0.
    """
    n = len(types)
    h = np.asarray(measured_h, dtype=float)
    if h.shape != (n, 6):
        raise ValueError(f'measured wrenches must have shape ({n}, 6), got {h.shape}')
    if not np.all(np.isfinite(h)):
        raise ValueError('measured wrenches contain NaN or Inf')
    if not torque_weight > 0.0:
        raise ValueError('torque_weight must be > 0')
    h = h.copy()
    for i, t in enumerate(types):
        if t == 'point':
            h[i, 3:] = 0.0
    return h


def _donner_blocks(x_applied: np.ndarray, types: Sequence[str]) -> list:
    """3-vector blocks of the stacked vector: ``(start index, applied 3-vector)``."""
    blocks = []
    pos = 0
    for t in types:
        blocks.append((pos, x_applied[pos:pos + 3]))
        if t == 'rigid':
            blocks.append((pos + 3, x_applied[pos + 3:pos + 6]))
        pos += 6 if t == 'rigid' else 3
    return blocks


def _in_balls(blocks: list, x: np.ndarray, slack: float) -> bool:
    """Whether every block of ``x`` satisfies ``|x_b|^2 <= a^T x_b`` (within ``slack``)."""
    for start, a in blocks:
        xb = x[start:start + 3]
        if xb @ xb > a @ xb + slack:
            return False
    return True


def _donner_socp(g: np.ndarray, h_o: np.ndarray, wvec: np.ndarray, blocks: list, tol: float,
                 max_iter: int) -> tuple:
    """Solve the cone program of :func:`donner_qp_decomposition` with clarabel.

    :return: ``(stacked manipulating wrenches, solver status, iterations)``.
    """
    import clarabel  # lazy: only needed off the fast path
    from scipy import sparse

    nvar = wvec.size
    rows_eq = [g]
    b_eq = [h_o]
    rows_soc = []
    b_soc = []
    cones = []
    zero_rows = 6
    for start, a in blocks:
        na = float(np.linalg.norm(a))
        if na == 0.0:
            # Degenerate ball {0}: fix the block to zero with equality rows.
            e = np.zeros((3, nvar))
            e[:, start:start + 3] = np.eye(3)
            rows_eq.append(e)
            b_eq.append(np.zeros(3))
            zero_rows += 3
            continue
        # s = b - A x = [||a||/2, a/2 - x_blk] in SOC(4)  <=>  ||x_blk - a/2|| <= ||a||/2
        blk = np.zeros((4, nvar))
        blk[1:, start:start + 3] = np.eye(3)
        rows_soc.append(blk)
        b_soc.append(np.concatenate([[0.5 * na], 0.5 * a]))
        cones.append(clarabel.SecondOrderConeT(4))
    a_mat = np.vstack(rows_eq + rows_soc)
    b_vec = np.concatenate(b_eq + b_soc)
    cones = [clarabel.ZeroConeT(zero_rows)] + cones

    settings = clarabel.DefaultSettings()
    settings.verbose = False
    settings.max_iter = int(max_iter)
    settings.tol_feas = tol
    settings.tol_gap_abs = tol
    settings.tol_gap_rel = tol
    p_mat = sparse.diags(wvec).tocsc()
    solver = clarabel.DefaultSolver(p_mat, np.zeros(nvar), sparse.csc_matrix(a_mat), b_vec,
                                    cones, settings)
    sol = solver.solve()
    return np.asarray(sol.x, dtype=float), str(sol.status), int(sol.iterations)
