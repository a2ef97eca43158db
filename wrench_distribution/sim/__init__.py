"""Closed-loop simulator of a rigid object held by several compliant effectors.

Its rooms, each importing only the rooms above it in this list (and the package's core,
config, ros and bag layers); see docs/contributing.md, "Architecture", and docs/simulator.md:

- :mod:`.control`: the laws (no ROS): the arms' admittance rule, the object's pose controller;
- :mod:`.physics`: the plant (no ROS): the rigid object, the grasp springs, the F/T sensors,
  the admittance-controlled arm tips, the arms with joints and their closed chain;
- :mod:`.scenarios`: a scenario's parameter file and its sections, the objects built from
  them (the physics, the sensors, the truth's read-out);
- :mod:`.nodes`: the ROS side: ``object_sim``, ``object_controller``,
  ``baseline_distributor``, the demo's recorder and the user's service calls;
- :mod:`.reports`: the demo's summaries and plots, read from a run's bag and files;
- :mod:`.demo`: the demo (``python -m wrench_distribution.sim.demo``): the nodes over DDS, the
  bag recorded, the reports.
"""
