"""``python -m wrench_distribution.sim.demo``: the whole idea, closed loop, in one command.

A simulated object is held by compliant effectors (``object_sim``); a pose controller
(``object_controller``) asks for the object wrench and a scripted squeeze; the
distributor turns both into per-effector commands; the simulated F/T sensors feed the
analyzer, which recovers the internal load. The demo starts the four nodes as
subprocesses on one private ``ROS_DOMAIN_ID`` (DDS kept on the loopback interface),
records an mcap bag in-process (the simulator's truth included), stops everything after
``--duration`` seconds of sim time, and prints a summary, judged on the truth, and writes a
plot. ``--tare on`` tares the analyzer while the grippers are open (``dual_arm_real_cell``);
``--calibrate on`` runs a user's calibration through the analyzer's services
(``dual_arm_real_cell_tilt``); where the scenario holds the object still at several internal
loads before its move (``dual_arm_admittance``, ``dual_arm_joints``) the demo identifies the
grasps from those rests (``--identify-grasps``). See README, "The demo", and docs/simulator.md.

Its modules, by job:

- :mod:`.options`: the command line, and a run's name and output directory;
- :mod:`.sections`: a run's parameter sections, the scenario file with the options applied (no ROS);
- :mod:`.nodes`: the node processes (:mod:`wrench_distribution.processes`) and the bag recorded
  while the simulator runs;
- :mod:`.report`: a run's summary, plot and files, the user's steps, a comparison's table;
- :mod:`.compare`: the comparisons (``--friction compare``, ``--tare compare``,
  ``--calibrate compare``), each several variants of the options;
- :mod:`.run`: one run, and :func:`~.run.main`.
"""
