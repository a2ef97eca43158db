"""The simulator's ROS side.

- :mod:`.object_sim_node`, :mod:`.object_controller_node`, :mod:`.baseline_distributor_node`:
  the demo's nodes;
- :mod:`.recorder`: the demo's in-process bag recorder;
- :mod:`.tare_step`, :mod:`.calibration_step`: the service calls a user makes during a run.
"""
