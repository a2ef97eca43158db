"""The simulator's control laws (no ROS).

- :mod:`.admittance`: ros2_controllers' ``admittance_controller`` law and the arms' position loop;
- :mod:`.object_controller`: the object's pose controller, its planned move and tilts, the
  internal-load schedule.
"""
