"""Every node kind this package configures, and its parameters by name (no ROS import)."""
from .schema import PARAM_INDEX
from .sim import SIM_SPECS

#: Kind (node name) -> parameter name -> spec, for the two nodes and the simulator's nodes.
INDEX = dict(PARAM_INDEX, **{kind: {s.name: s for s in specs} for kind, specs in SIM_SPECS.items()})

#: Node name -> kind of :data:`INDEX`: the sections of a parameter file this package validates.
NODE_KINDS = {'wrench_distributor': 'distributor', 'wrench_analyzer': 'analyzer',
              'object_sim': 'object_sim', 'object_controller': 'object_controller',
              'baseline_distributor': 'baseline_distributor'}
