"""The trace kinds: each module declares its kinds once (TRACE_KINDS, a base.Kind each: columns, embedded members,
consistency check, replay) and tcemu.traces.registry lists the modules; base and fixtures hold what they share."""
