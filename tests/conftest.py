"""Hypothesis profiles: 'ci' (default, fast) and 'campaign' (long fuzzing runs).

    HYPOTHESIS_PROFILE=campaign pytest tests/ -k hypothesis
"""
import os

from hypothesis import HealthCheck, settings

settings.register_profile("ci", max_examples=150, deadline=None, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("campaign", max_examples=20000, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
