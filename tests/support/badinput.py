"""The check every test of a pinned bad-input class makes (tests/*/test_bad_input.py, tests/traces/test_bad_traces.py):
the call raises TcemuError, and the error's message names the field it reports."""
import pytest

from tcemu import TcemuError


def field_of(fn, *a, **kw):
    with pytest.raises(TcemuError) as e:
        fn(*a, **kw)
    assert e.value.field in str(e.value)
    return e.value.field
