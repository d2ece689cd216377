"""Arbitrary-input helpers shared by the hypothesis tests that only TcemuError escapes (tests/layout/test_banks.py,
tests/layout/test_tma.py, tests/hopper/test_arbitrary_input.py): values of any type, and the check."""
from hypothesis import strategies as st

from tcemu import TcemuError

junk = st.one_of(st.none(), st.booleans(), st.floats(allow_nan=True), st.text(max_size=12),
                 st.integers(-2**70, 2**70), st.lists(st.integers(-2**40, 2**40), max_size=40))


def only_ours(fn, *a, **kw):
    try:
        fn(*a, **kw)
    except TcemuError as e:
        assert e.field and e.field in str(e)
