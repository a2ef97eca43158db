"""Hypothesis profiles: deterministic in CI, broader on demand.

``HYPOTHESIS_PROFILE=thorough make test`` explores ten times more examples.
"""
import os

from hypothesis import settings

settings.register_profile('ci', max_examples=60, derandomize=True, deadline=None)
settings.register_profile('thorough', max_examples=600, deadline=None)
settings.load_profile(os.environ.get('HYPOTHESIS_PROFILE', 'ci'))
