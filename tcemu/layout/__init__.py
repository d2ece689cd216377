"""Where operands live: swizzle atoms, matrix descriptors, operand addressing, shared memory, register fragments, bank conflicts, TMA tiles."""
