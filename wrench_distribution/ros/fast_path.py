"""A verified linear form of one solver's synthesis, for the per-message path.

For a fixed contact configuration, options with ``torque_share == 0`` and a fixed
internal load, the core's synthesis is affine in the desired wrench:
``h = A w + c``. This class reads ``A`` and ``c`` from the core itself
(``synthesize_batch`` on the unit wrenches), then checks the affine form against the
core on test wrenches of very different sizes and directions, and that every wrench is
realisable (``G A = I``). Only when every check passes is it used; otherwise the node
calls ``LoadDistributor.synthesize`` per message.
"""
from typing import Optional

import numpy as np

_TEST_WRENCHES = np.array([
    [3.0, -2.0, 15.0, 0.4, -0.3, 0.2],
    [0.0, 0.0, 0.0, 0.0, 0.0, 1e-9],
    [1e4, 5e3, -2e4, 300.0, -700.0, 90.0],
    [-0.01, 0.02, 0.005, -1e-4, 2e-4, 3e-5],
    [0.0, 0.0, 0.0, 5.0, -3.0, 2.0],
    [7.0, 0.0, 0.0, 0.0, 0.0, 0.0],
])


class LinearSynthesis:
    """``h = A w + c`` for one solver and internal load, checked against the core.

    :param a: (n*6, 6) matrix.
    :param c: (n*6,) offset.
    :param n: number of effectors.
    """

    def __init__(self, a: np.ndarray, c: np.ndarray, n: int) -> None:
        self.a = a
        self.c = c
        self.n = n

    def apply(self, w) -> np.ndarray:
        """Wrenches of all effectors for one desired wrench.

        :param w: (6,) desired wrench.
        :return: (n, 6).
        """
        return (self.a @ w + self.c).reshape(self.n, 6)

    @classmethod
    def build(cls, distributor, internal_load, object_frame: bool,
              rtol: float = 1e-10) -> Optional['LinearSynthesis']:
        """Read the affine form from the core and verify it, or return None.

        :param distributor: core ``LoadDistributor``.
        :param internal_load: lambda_c or None.
        :param object_frame: True for ``wrench_object``, False for ``wrench_contact``.
        :param rtol: tolerance relative to the wrench size.
        :return: the linear form, or None when the synthesis is not affine here.
        """
        try:
            if getattr(distributor, 'options', None) is not None and \
                    distributor.options.torque_share != 0.0:
                return None
            n = distributor.n
            field = 'wrench_object' if object_frame else 'wrench_contact'
            zero = distributor.synthesize(np.zeros(6), internal_load)
            c = np.asarray(getattr(zero, field), float).reshape(-1)
            unit = distributor.synthesize_batch(np.eye(6), internal_load)
            cols = np.asarray(getattr(unit, field), float).reshape(6, -1) - c
            a = cols.T.copy()
            if not np.allclose(unit.resultant, np.eye(6), rtol=0, atol=1e-9):
                return None  # some wrench is not realisable: keep the core's checks
            check = distributor.synthesize_batch(_TEST_WRENCHES, internal_load)
            got = np.asarray(getattr(check, field), float).reshape(len(_TEST_WRENCHES), -1)
            pred = _TEST_WRENCHES @ a.T + c
            scale = 1.0 + np.abs(_TEST_WRENCHES).max(axis=1, keepdims=True) + np.abs(c).max()
            if not np.all(np.abs(got - pred) <= rtol * scale):
                return None
            if not (np.all(np.isfinite(a)) and np.all(np.isfinite(c))):
                return None
            return cls(a, c, n)
        except (ValueError, AttributeError, TypeError):
            return None
