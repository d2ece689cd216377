"""Blackwell (sm_100a) tensor-core instructions: tcgen05.mma (dense, sparse, block-scaled), instruction descriptors, tensor memory, collector buffers."""
