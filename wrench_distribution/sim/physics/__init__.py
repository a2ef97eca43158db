"""The simulator's plant (no ROS): what the effectors, the grasps and the sensors do.

- :mod:`.rigid_object`: the rigid body; :mod:`.grasp`: the compliant grasp springs;
- :mod:`.ft_sensor`: the simulated F/T sensors;
- :mod:`.held_object`: the object held by ideal force-controlled effector bodies;
- :mod:`.admittance_arms`: the same held by admittance-controlled arm tips;
- :mod:`.arm_models`, :mod:`.closed_chain` (over :mod:`.chain_arms`, each arm's free dynamics,
  and :mod:`.chain_grasps`, the grasps' coupling), :mod:`.joint_arms`: arms with joints
  (Pinocchio, the simulator's optional extra).
"""
