"""Tools for kernel authors: writer-versus-reader checks, descriptors explained with lints, pictures, and `tcemu run`."""
