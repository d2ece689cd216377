"""The foundations every part stands on: tcemu's error types, argument checks at the public boundary, per-architecture constants."""
