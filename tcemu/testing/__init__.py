"""Testing aids: hypothesis strategies, the independent addressing oracle and the fuzzing campaign."""
