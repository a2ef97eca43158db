"""The prescribed internal load: basis coordinates or physical handles, resolved per solver."""
from typing import Optional, Sequence

import numpy as np


class InternalLoadPrescription:
    """What the user asked for, kept independent of the current basis.

    Kinds: ``none``; ``coords`` (lambda_c in the basis order); ``handles``
    (``{'squeeze(left,right)': 20.0}``). The latest setting wins, whether it came from
    a parameter or from the ``internal_load`` topic.
    """

    def __init__(self) -> None:
        self.kind = 'none'
        self.coords: Optional[np.ndarray] = None
        self.handles: dict = {}

    def set_coords(self, values: Sequence[float]) -> None:
        """Prescribe basis coordinates.

        :param values: lambda_c, one per basis element.
        """
        self.kind, self.coords, self.handles = 'coords', np.asarray(values, float), {}

    def set_handles(self, handles: dict) -> None:
        """Prescribe physical handles.

        :param handles: ``{basis or handle name: value}``.
        """
        self.kind, self.coords, self.handles = 'handles', None, dict(handles)

    def resolve(self, distributor) -> Optional[np.ndarray]:
        """lambda_c for a solver, or None for no internal load.

        :param distributor: core ``LoadDistributor`` (for its basis).
        :return: (m,) array or None.
        :raises ValueError: when the prescription does not fit the basis; the message
            names the accepted basis.
        """
        if self.kind == 'none':
            return None
        names = list(distributor.basis_names)
        if self.kind == 'coords':
            v = self.coords
            if v.shape != (len(names),):
                raise ValueError(f'internal load has {v.size} values, the basis has '
                                 f'{len(names)}: {", ".join(names) or "(empty)"}')
            if not np.all(np.isfinite(v)):
                raise ValueError('internal load contains NaN or Inf')
            return v.copy()
        vals = list(self.handles.values())
        if not all(np.isfinite(vals)):
            raise ValueError('internal load handle values contain NaN or Inf')
        return np.asarray(distributor.internal_load_from_handles(self.handles), float)

    def describe(self) -> str:
        """Short text for diagnostics.

        :return: e.g. ``handles squeeze(left,right)=20``.
        """
        if self.kind == 'coords':
            return 'coords ' + ', '.join(f'{x:g}' for x in self.coords)
        if self.kind == 'handles':
            return 'handles ' + ', '.join(f'{k}={v:g}' for k, v in self.handles.items())
        return 'none'
