"""The prescribed internal load: basis coordinates or physical handles, resolved per solver."""
from dataclasses import dataclass
from typing import Mapping, Optional, Sequence, Tuple

import numpy as np

from .errors import InvalidInputError


@dataclass(frozen=True)
class InternalLoadPrescription:
    """What the user asked for, kept independent of the current basis (a value: never changed).

    Kinds: ``none``; ``coords`` (lambda_c in the basis order); ``handles``
    (``{'squeeze(left,right)': 20.0}``). Values are checked finite when it is made
    (:meth:`of_coordinates`, :meth:`of_handles`), once.

    :param kind: ``none``, ``coords`` or ``handles``.
    :param coords: the coordinates (kind ``coords``).
    :param handles: ``(name, value)`` pairs in the order given (kind ``handles``).
    """

    kind: str = 'none'
    coords: Tuple[float, ...] = ()
    handles: Tuple[Tuple[str, float], ...] = ()

    @classmethod
    def of_coordinates(cls, values: Sequence[float]) -> 'InternalLoadPrescription':
        """Prescribe basis coordinates.

        :param values: lambda_c, one per basis element.
        :return: the prescription.
        :raises InvalidInputError: on NaN or Inf.
        """
        values = tuple(float(x) for x in np.asarray(values, float).ravel())
        if not np.all(np.isfinite(values)):
            raise InvalidInputError('internal load contains NaN or Inf')
        return cls('coords', values)

    @classmethod
    def of_handles(cls, handles: Mapping[str, float]) -> 'InternalLoadPrescription':
        """Prescribe physical handles.

        :param handles: ``{basis or handle name: value}``.
        :return: the prescription.
        :raises InvalidInputError: on NaN or Inf.
        """
        pairs = tuple((str(k), float(v)) for k, v in handles.items())
        if not np.all(np.isfinite([v for _, v in pairs])):
            raise InvalidInputError('internal load handle values contain NaN or Inf')
        return cls('handles', (), pairs)

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
            if len(self.coords) != len(names):
                raise ValueError(f'internal load has {len(self.coords)} values, the basis has '
                                 f'{len(names)}: {", ".join(names) or "(empty)"}')
            return np.array(self.coords)
        return np.asarray(distributor.internal_load_from_handles(dict(self.handles)), float)

    def describe(self) -> str:
        """Short text for diagnostics.

        :return: e.g. ``handles squeeze(left,right)=20``.
        """
        if self.kind == 'coords':
            return 'coords ' + ', '.join(f'{x:g}' for x in self.coords)
        if self.kind == 'handles':
            return 'handles ' + ', '.join(f'{k}={v:g}' for k, v in self.handles)
        return 'none'
