"""Contacts (where and how each effector holds the object) and the object model."""
from dataclasses import dataclass
from typing import Optional, Sequence, Tuple

import numpy as np

from .errors import InvalidInputError
from .spatial import far_from_zero, quaternion_to_matrix
from .validation import check_names, finite_array, finite_vector

CONTACT_TYPES = ('rigid', 'point')


@dataclass(frozen=True)
class Contact:
    """One effector's grasp: a frame on the object and what it can transmit.

    :param name: effector name, unique within a problem.
    :param type: ``'rigid'`` (force and torque, eq. 14) or ``'point'`` (force only, eq. 13).
    :param position: contact point in the object frame.
    :param orientation: contact frame orientation in the object frame, ``[qx, qy, qz, qw]``.
    :param friction: Coulomb coefficient ``mu`` of the contact, or None (no friction cone:
        rigid contacts are then unconstrained, point contacts only unilateral).
    :param normal: direction in which the effector pushes on the object, in the contact
        frame (normalised; default the contact frame's +z).
    """

    name: str
    type: str = 'rigid'  # noqa: A003 (public field name of the problem file and the API)
    position: Sequence[float] = (0.0, 0.0, 0.0)
    orientation: Sequence[float] = (0.0, 0.0, 0.0, 1.0)
    friction: Optional[float] = None
    normal: Sequence[float] = (0.0, 0.0, 1.0)

    def __post_init__(self) -> None:
        if self.type not in CONTACT_TYPES:
            raise InvalidInputError(
                f'contact {self.name!r}: type must be one of {", ".join(CONTACT_TYPES)}, '
                f'got {self.type!r}'
            )
        object.__setattr__(
            self, 'position', tuple(finite_vector(self.position, 3, f'contact {self.name!r} position'))
        )
        quaternion = finite_vector(self.orientation, 4, f'contact {self.name!r} orientation')
        matrix = quaternion_to_matrix(quaternion)  # rejects a zero quaternion
        matrix.setflags(write=False)
        object.__setattr__(self, '_matrix', matrix)  # not a field: equality and repr stay the fields'
        object.__setattr__(self, 'orientation', tuple(quaternion))
        if self.friction is not None:
            mu = float(finite_array(self.friction, (), f'contact {self.name!r} friction'))
            if mu <= 0:
                raise InvalidInputError(f'contact {self.name!r}: friction must be positive, got {mu}')
            object.__setattr__(self, 'friction', mu)
        normal = finite_vector(self.normal, 3, f'contact {self.name!r} normal')
        length = float(np.linalg.norm(normal))
        if length < 1e-9:
            raise InvalidInputError(f'contact {self.name!r}: normal must be a non-zero vector')
        object.__setattr__(self, 'normal', tuple(normal / length))

    @property
    def rotation(self) -> np.ndarray:
        """Rotation of the contact frame in the object frame, (3, 3), read-only."""
        return self._matrix


@dataclass(frozen=True)
class ObjectModel:
    """The held object: centre of mass, and optionally mass and inertia (eq. 59).

    :param com: centre of mass in the object frame.
    :param mass: object mass in kg, or None when unknown.
    :param inertia: inertia tensor about the centre of mass in object-frame axes
        in a form :func:`inertia_matrix` accepts, or None.
    """

    com: Sequence[float] = (0.0, 0.0, 0.0)
    mass: Optional[float] = None
    inertia: Optional[Sequence] = None

    def __post_init__(self) -> None:
        com = finite_vector(self.com, 3, 'object com')
        object.__setattr__(self, 'com', tuple(com))
        com.setflags(write=False)
        object.__setattr__(self, '_com', com)  # not a field: equality and repr stay the fields'
        if self.mass is not None:
            mass = float(finite_array(self.mass, (), 'object mass'))
            if mass <= 0:
                raise InvalidInputError(f'object mass must be positive, got {mass}')
            object.__setattr__(self, 'mass', mass)
        if self.inertia is not None:
            object.__setattr__(self, 'inertia', tuple(map(tuple, inertia_matrix(self.inertia))))

    @property
    def com_array(self) -> np.ndarray:
        """Centre of mass as a (3,) array, read-only."""
        return self._com

    @property
    def inertia_matrix(self) -> Optional[np.ndarray]:
        """Inertia as a (3, 3) array, or None."""
        return None if self.inertia is None else np.array(self.inertia, dtype=float)


def inertia_matrix(value) -> np.ndarray:
    """Inertia tensor from its accepted forms, checked symmetric and positive definite.

    :param value: 3 numbers (principal moments, diagonal), 6 numbers
        ``[Ixx, Iyy, Izz, Ixy, Ixz, Iyz]``, or 9 numbers / a 3x3 nesting, row-major.
    :return: the (3, 3) tensor.
    :raises InvalidInputError: another count, non-finite, asymmetric or not positive definite.
    """
    array = np.array(value, dtype=float).reshape(-1) if np.size(value) else np.zeros(0)
    if array.size == 3:
        array = np.diag(array)
    elif array.size == 6:
        ixx, iyy, izz, ixy, ixz, iyz = array
        array = np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])
    matrix = finite_array(array.reshape(-1), (9,), 'object inertia').reshape(3, 3)
    if not np.allclose(matrix, matrix.T, rtol=1e-9, atol=1e-12 * np.abs(matrix).max()):
        raise InvalidInputError('object inertia must be symmetric')
    if np.linalg.eigvalsh(matrix).min() <= 0:
        raise InvalidInputError('object inertia must be positive definite')
    return matrix


@dataclass(frozen=True)
class ContactArrays:
    """The contacts of one configuration as arrays: what the solver reads.

    Build with :meth:`of` (from :class:`Contact` objects) or :meth:`ContactLayout.arrays` (from
    poses, checked at once: the per-tick path of a moving grasp).

    :param names: contact names (n).
    :param types: ``'rigid'`` or ``'point'`` per contact.
    :param positions: (n, 3) contact points, object frame.
    :param quaternions: (n, 4) orientations ``[qx, qy, qz, qw]``, any scale.
    :param rotations: (n, 3, 3) the rotation matrices of ``quaternions``.
    :param friction: (n,) Coulomb coefficients, NaN where none.
    :param normals: (n, 3) unit normals in the contact frames.
    """

    names: Tuple[str, ...]
    types: Tuple[str, ...]
    positions: np.ndarray
    quaternions: np.ndarray
    rotations: np.ndarray
    friction: np.ndarray
    normals: np.ndarray

    @staticmethod
    def of(contacts: Sequence[Contact]) -> 'ContactArrays':
        """Arrays of checked :class:`Contact` objects.

        :param contacts: the contacts.
        :return: the arrays.
        """
        quaternions = np.array([c.orientation for c in contacts], dtype=float).reshape(-1, 4)
        return ContactArrays(
            tuple(c.name for c in contacts), tuple(c.type for c in contacts),
            np.array([c.position for c in contacts], dtype=float).reshape(-1, 3), quaternions,
            quaternion_to_matrix(quaternions).reshape(-1, 3, 3),
            np.array([np.nan if c.friction is None else c.friction for c in contacts], dtype=float),
            np.array([c.normal for c in contacts], dtype=float).reshape(-1, 3))

    @property
    def rigid(self) -> np.ndarray:
        """Return the (n,) rigid-contact mask."""
        return np.array([t == 'rigid' for t in self.types], dtype=bool)

    def contacts(self) -> Tuple[Contact, ...]:
        """Return the same contacts as :class:`Contact` objects."""
        return tuple(Contact(name, kind, tuple(p), tuple(q), None if np.isnan(mu) else float(mu), tuple(normal))
                     for name, kind, p, q, mu, normal in zip(self.names, self.types, self.positions,
                                                             self.quaternions, self.friction, self.normals))

    def select(self, mask: np.ndarray) -> 'ContactArrays':
        """Return the contacts where ``mask`` is true.

        :param mask: (n,) booleans.
        :return: the arrays of those contacts.
        """
        index = np.flatnonzero(mask)
        return ContactArrays(tuple(self.names[i] for i in index), tuple(self.types[i] for i in index),
                             self.positions[index], self.quaternions[index], self.rotations[index],
                             self.friction[index], self.normals[index])


class ContactLayout:
    """What stays fixed while contacts move: names, types, friction and normals.

    :meth:`arrays` checks a new set of poses at once (the per-tick path of a walking trunk or a
    moving hand); the result is what :meth:`LoadDistributor.from_arrays` reads.

    :param contacts: the contacts at some pose (their poses are not kept).
    :raises InvalidInputError: on no contact or duplicated names.
    """

    def __init__(self, contacts: Sequence[Contact]) -> None:
        contacts = tuple(contacts)
        if not contacts or not all(isinstance(c, Contact) for c in contacts):
            raise InvalidInputError('at least one contact is required, each a Contact')
        check_names([c.name for c in contacts])
        template = ContactArrays.of(contacts)
        self.names, self.types = template.names, template.types
        self.friction, self.normals = template.friction, template.normals
        self.n = len(contacts)
        self._last_rotations = (b'', None)

    def arrays(self, positions, quaternions, checked: bool = False) -> ContactArrays:
        """Check poses and return the contacts at them.

        :param positions: (n, 3) contact points, object frame.
        :param quaternions: (n, 4) orientations ``[qx, qy, qz, qw]``, any scale.
        :param checked: the caller has checked them already (float arrays of these shapes, finite,
            within the supported magnitude, no zero quaternion: ``engine.cache.check_poses``), so
            they are not checked again (the per-tick path).
        :return: the arrays.
        :raises InvalidInputError: wrong shape, NaN, Inf, a magnitude above 1e100, a zero quaternion.
        """
        if not checked:
            positions = finite_array(positions, (self.n, 3), f'contact positions ({self.n} x 3)')
            quaternions = finite_array(quaternions, (self.n, 4), f'contact orientations ({self.n} x 4)')
        return ContactArrays(self.names, self.types, positions, quaternions,
                             self._rotations(quaternions, checked), self.friction, self.normals)

    def _rotations(self, quaternions: np.ndarray, checked: bool) -> np.ndarray:
        """Rotation matrices (n, 3, 3), read-only: those of the last call when the quaternions are the same."""
        quaternions = np.asarray(quaternions, dtype=float)
        key = quaternions.tobytes()
        last_key, last = self._last_rotations
        if key == last_key:
            return last
        rotations = quaternion_to_matrix(quaternions, checked or far_from_zero(quaternions))
        rotations.setflags(write=False)
        self._last_rotations = (key, rotations)
        return rotations
