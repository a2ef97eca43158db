"""Demo scenarios: parameter files ``config/demo_<name>.yaml``, their sections, the physics built.

Each file is an ordinary ROS 2 parameter file with one section per node of the demo
(``object_sim``, ``object_controller``, ``wrench_distributor``, ``wrench_analyzer``,
``baseline_distributor``). Values shared by several nodes (effectors, contacts, centre of
mass) are repeated in each section; :func:`check_consistency` verifies that they agree.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Mapping

import yaml

from .models import effector_model
from ...config.index import NODE_KINDS
from ...config.schema import ConfigError
from ...config.validation import validate_params

SCENARIOS = ('dual_arm', 'three_finger_hand', 'quadruped_stance', 'dual_arm_admittance',
             'dual_arm_joints', 'dual_arm_real_cell', 'dual_arm_real_cell_tilt', 'dual_arm_faults',
             'quadruped_stepping', 'hand_regrasp')

#: Sections of a demo file and their node names.
NODES = ('object_sim', 'object_controller', 'wrench_distributor', 'wrench_analyzer',
         'baseline_distributor')

#: Parameters that must be equal in every section that sets them.
SHARED = ('object_frame', 'effectors', 'contact_types', 'contact_positions',
          'contact_orientations', 'object_com', 'object_mass', 'friction_coefficients',
          'contact_normals')


def config_dir() -> Path:
    """Directory of the demo parameter files (source tree first, then the installed share).

    :return: path to ``config/``
    """
    here = Path(__file__).resolve().parents[3] / 'config'
    if here.is_dir():
        return here
    try:
        from ament_index_python.packages import get_package_share_directory
        return Path(get_package_share_directory('wrench_distribution')) / 'config'
    except Exception:  # noqa: BLE001 - no ament index: keep the source path
        return here


def scenario_file(name: str) -> Path:
    """Path of a scenario's parameter file.

    :param name: one of :data:`SCENARIOS`, or a path to a YAML file.
    :return: the file path
    :raises ValueError: for an unknown scenario
    """
    if os.path.sep in name or name.endswith('.yaml'):
        return Path(name)
    if name not in SCENARIOS:
        raise ValueError(f'unknown scenario {name!r}; choose one of: {", ".join(SCENARIOS)}')
    return config_dir() / f'demo_{name}.yaml'


def load_sections(name: str) -> dict:
    """Read a scenario file into ``{node_name: {param: value}}``.

    :param name: scenario name or file path.
    :return: the ``ros__parameters`` of each section
    """
    with open(scenario_file(name), 'r', encoding='utf-8') as f:
        data = yaml.safe_load(f)
    return {str(k).lstrip('/'): dict(v.get('ros__parameters') or {}) for k, v in data.items()}


def check_consistency(sections: Mapping[str, Mapping]) -> list:
    """List the shared parameters whose values differ between sections.

    :param sections: as returned by :func:`load_sections`.
    :return: human-readable problems (empty when consistent)
    """
    problems = []
    for key in SHARED:
        values = {node: p[key] for node, p in sections.items() if key in p}
        distinct = {repr(v) for v in values.values()}
        if len(distinct) > 1:
            problems.append(f'{key} differs: {values}')
    return problems


def validate_sections(sections: Mapping[str, Mapping]) -> dict:
    """Validate every section of a scenario with its node's schema.

    :param sections: as returned by :func:`load_sections`.
    :return: node name -> validated parameters (defaults filled in).
    :raises ConfigError: naming the node's parameter and its accepted values.
    """
    out = {}
    for node, params in sections.items():
        if node not in NODE_KINDS:
            raise ConfigError(f'unknown section {node!r}; expected: {", ".join(NODES)}')
        try:
            out[node] = (sim_params(params) if node == 'object_sim' else
                         validate_params(NODE_KINDS[node], params))
        except ConfigError as e:
            raise ConfigError(f'{node}: {e}') from None
    return out


def sim_params(params: Mapping) -> dict:
    """Return the simulator parameters validated by the schema, with defaults filled in.

    :param params: the ``object_sim`` section (or a subset).
    :return: complete dict
    :raises ConfigError: for an unknown parameter or a value the schema or the effector model
        refuses (a ``ValueError``; the message names the parameter and the accepted values)
    """
    p = validate_params('object_sim', params)
    effector_model(p).check(p)
    return p


def build_sim(params: Mapping):
    """Build the physics of a scenario: its effector model's (:mod:`.models`).

    :param params: ``object_sim`` parameters.
    :return: a simulator at its initial state, with its ``sensors``
    :raises ConfigError: for a parameter the schema or the model refuses
    """
    p = sim_params(params)
    return effector_model(p).build(p)
