"""Hopper (sm_90a) tensor-core instructions: wgmma.mma_async and its structured-sparse form."""
