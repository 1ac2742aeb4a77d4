"""Recipe layer: YAML with source positions -> overrides -> schema checks -> matrix expansion -> resolved
inputs and datasets -> a validated Recipe and its stage graph (and the validated snapshot that skips all
of it when nothing changed)."""
