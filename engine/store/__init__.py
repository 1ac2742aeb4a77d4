"""Store layer: the content-addressed artifact store (objects, run records, mutexes), atomic writes,
hashing and cache keys."""
