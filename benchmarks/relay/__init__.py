"""The relay benchmark (``benchmarks/bench_relay.py``), by job.

- :mod:`.fanout`: what every process agrees on (topics, contacts, QoS, parameter files);
- :mod:`.roles`: the process roles (source, relay, sink, measure, ft, probe, talker);
- :mod:`.runs`: one run's processes, started and stopped, and its window's record; the rounds;
- :mod:`.startup`: the start-up trials;
- :mod:`.figures`: loss and latency, phases, rounds, ratios;
- :mod:`.rule`: the acceptance rule;
- :mod:`.tables`: the Markdown tables;
- :mod:`.command`: the command line.
"""
