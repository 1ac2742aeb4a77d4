"""Store layer: the content-addressed artifact store (objects, run records, locks), atomic writes,
hashing and cache keys."""
