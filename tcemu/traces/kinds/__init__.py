"""Trace kinds with a replay of their own: each module reads and judges one kind of hardware capture."""
