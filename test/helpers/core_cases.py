"""Geometries shared by the core tests (inputs only: no expected values here)."""
import numpy as np

from wrench_distribution.core import Contact, DistributionOptions, LoadDistributor, ObjectModel

#: Paper IX-C, eq. 92: (azimuth, elevation) in degrees of the four contacts on a unit sphere.
SPHERE_ANGLES = [(0, 65), (-60, -25), (65, -45), (180, 0)]
#: Paper IX-C, eq. 93: the applied wrenches.
SPHERE_WRENCHES = np.array([
    [1, 0.5, 1, 0, 0.5, 0.5],
    [0, 0, 1, 1, 0, 0],
    [-0.25, 0.75, 0, 0, -0.5, 0.5],
    [0.5, -0.25, 1, -0.5, 0.75, 0],
])


def sphere_positions() -> np.ndarray:
    """Eq. 92 evaluated at the paper's angles."""
    out = []
    for azimuth, elevation in SPHERE_ANGLES:
        a, g = np.radians(azimuth), np.radians(elevation)
        out.append([np.cos(a) * np.cos(g), np.sin(a) * np.cos(g), np.sin(g)])
    return np.array(out)


def sphere(torque_share: float = 0.0) -> LoadDistributor:
    """Build the IX-C problem with rigid contacts (frames aligned with the object frame)."""
    contacts = [Contact(f'c{i + 1}', 'rigid', p) for i, p in enumerate(sphere_positions())]
    return LoadDistributor(contacts, ObjectModel(), DistributionOptions(torque_share=torque_share))


def dual_arm(com=(0.0, 0.0, -0.1), **options) -> LoadDistributor:
    """Two rigid grasps 60 cm apart on the y axis; the right frame is turned 180 deg about z."""
    contacts = [
        Contact('left', 'rigid', (0.0, 0.3, 0.0)),
        Contact('right', 'rigid', (0.0, -0.3, 0.0), (0.0, 0.0, 1.0, 0.0)),
    ]
    return LoadDistributor(contacts, ObjectModel(com=com), DistributionOptions(**options))


def quadruped(com=(0.05, 0.0, 0.4), lift=0.0) -> LoadDistributor:
    """Four point feet on the ground plane, centre of mass above them."""
    feet = [('lf', (0.3, 0.2, lift)), ('rf', (0.3, -0.2, 0.0)), ('lh', (-0.3, 0.2, 0.0)),
            ('rh', (-0.3, -0.2, 0.0))]
    return LoadDistributor([Contact(n, 'point', p) for n, p in feet], ObjectModel(com=com))


def assert_refusal_is_legitimate(contacts, com, wrench) -> None:
    """Check, by hand, that no contact wrenches produce ``wrench``: the refusal was due.

    ``G`` is written here (forces at every contact, torques at rigid ones, about the contacts'
    centroid, the torque rows over the contacts' spread so that the test is unit-free); the
    directions whose singular value is below ``1e-5`` of the largest count as missing (ten
    times wider than the core's ``RANK_TOLERANCE``, so a grasp at that edge may go either
    way); the part of ``wrench`` outside the others must be at least ``1e-9`` of it.

    :param contacts: the contacts (``position``, ``type``).
    :param com: the centre of mass about which ``wrench`` is given.
    :param wrench: the refused resultant.
    """
    points = np.array([c.position for c in contacts], dtype=float)
    centroid = points.mean(0)
    spread = max(np.linalg.norm(points - centroid, axis=1).max(), np.linalg.norm(np.asarray(com) - centroid))
    if spread == 0.0:  # every contact at the centre of mass: forces only, unless one is rigid
        assert all(c.type == 'point' for c in contacts) and np.any(np.asarray(wrench)[3:] != 0.0), \
            f'refused a realisable resultant {wrench} (contacts at the centre of mass)'
        return
    columns = []
    for contact, point in zip(contacts, points):
        lever = point - centroid
        for axis in np.eye(3):
            columns.append(np.r_[axis, np.cross(lever, axis) / spread])
            if contact.type == 'rigid':
                columns.append(np.r_[np.zeros(3), axis / spread])
    u, sigma, _ = np.linalg.svd(np.array(columns).T)
    kept = u[:, :np.count_nonzero(sigma > 1e-5 * sigma[0])]
    wrench = np.asarray(wrench, dtype=float)
    about_centroid = np.r_[wrench[:3], (wrench[3:] + np.cross(np.asarray(com) - centroid, wrench[:3])) / spread]
    outside = about_centroid - kept @ (kept.T @ about_centroid)
    assert np.linalg.norm(outside) >= 1e-9 * np.linalg.norm(about_centroid), \
        f'refused a realisable resultant {wrench} (outside part {np.linalg.norm(outside):.3g})'
