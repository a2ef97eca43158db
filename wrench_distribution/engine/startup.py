"""What a node does at start-up with static contacts, judged without starting it (no ROS).

With ``contact_source: static`` a node builds its solver before it runs: poses the core
refuses, or (the distributor) a prescription the solver cannot resolve or that is over a
limit, stop it (exit 2). ``check-config`` asks the same engines the same question here, so
that its verdict is the node's.
"""
from typing import Mapping

import numpy as np

from wrench_distribution.config.findings import Problem
from .cache import DistributorCache
from .distribution import DistributionEngine


def startup_problems(configs: Mapping) -> list:
    """Return the start-up refusals of nodes with static contacts.

    :param configs: node name -> its configuration (``Judgement.configs``).
    :return: one error :class:`~wrench_distribution.config.findings.Problem` per node that
        would stop.
    """
    out = []
    for name, config in configs.items():
        if config.contact_source != 'static' or config.contacts is None:
            continue
        positions = np.array([c.position for c in config.contacts], float)
        quaternions = np.array([c.orientation for c in config.contacts], float)
        if config.kind == 'distributor':
            refusal = DistributionEngine(config).offer_contacts(positions, quaternions, 0).refusal
            if refusal is not None:
                parameter = ('contact_positions' if refusal.concern == 'contacts' else
                             'internal_load_handles' if config.settings.prescription.kind == 'handles'
                             else 'internal_load')
                out.append(Problem('error', name, parameter, refusal.message))
            continue
        cache = DistributorCache(config.effectors, config.contact_types, config.object_model,
                                 config.options, config.contact_pose_tolerance, config.contact_extras)
        try:
            cache.update(positions, quaternions)
        except ValueError as err:
            out.append(Problem('error', name, 'contact_positions', f'contact poses rejected: {err}'))
    return out
