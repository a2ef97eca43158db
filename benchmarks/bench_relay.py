r"""Distributor node vs a bare rclpy relay, side by side, over real DDS.

One ``WrenchStamped`` in, four out (4 effectors; ``--effectors`` 2 or 3 for fewer); source,
relay (or distributor) and sink run in separate processes. For each rate, the relay and
the distributor are run one after the other with the same source and sink, and the script reports the rate
held, lost cycles (an input whose four outputs did not all arrive) and p50/p99
latency from the input's header stamp to the arrival of the last of its four outputs.
Each of ``--executors`` (kinds of ``wrench_distribution.ros.runner.make_executor``) runs
the relay and the distributor; ratios are to the relay on ``--reference``. With
``--feedback`` the distributor also runs with ``internal_load_feedback`` on, fed by a
``measure`` process that publishes a labelled measured internal load at the input rate
(as the analyzer would: one measurement per command cycle); with ``--analyzer-rate HZ`` (and
``--effectors 2``) by the analyzer itself, in its own process, on two F/T streams at HZ from
an ``ft`` process: the whole loop. The F/T streams run on their own clock, ``--ft-sweeps``
F/T periods per window faster than nominal, so that each window sees every phase between
a sensor reading and a desired wrench, as a sensor's crystal drifts against the controller's.
The measured window opens once the sink has taken a whole cycle (the target's writers
matched its readers) and ``--settle`` seconds more, never before ``EARLIEST_WINDOW_S`` after
the source started, and closes when the source says it is done. With ``--windows K``, each
run's ``--duration`` is split into K windows, the runs alternating window by window, and
each run's cycles are pooled into one row: a process start's own luck (where its threads
land, the F/T phase it starts at) and the machine's drift fall on the relay and the loop
alike. Before that, ``--startup-trials`` start-up trials per kind and durability count the
runs in which a freshly started subscriber missed some of the first messages
(``relay/startup.py``). The last line applies the acceptance rule (``relay/rule.py``: the
distributor must hold what the bare relay holds at no more than 1.2x its latency).

Usage::

    ROS_DOMAIN_ID=77 .venv/bin/python benchmarks/bench_relay.py --rates 500 1000 \
        --duration 8 --executors single multi events --startup-trials 9 --markdown
    ROS_DOMAIN_ID=77 .venv/bin/python benchmarks/bench_relay.py --rates 500 1000 \
        --duration 5 --settle 2 --executors events --reference events --startup-trials 0 \
        --feedback --rounds 4 --markdown

DDS discovery stays on loopback: every process is started by ``wrench_distribution.processes``
(``ROS_AUTOMATIC_DISCOVERY_RANGE`` and ``ROS_LOCALHOST_ONLY`` set; stopped with SIGINT, then
SIGKILL). The code is the package ``relay/`` beside this script, by job (its ``__init__``).
"""
import sys

from relay.command import main

if __name__ == '__main__':
    sys.exit(main())
