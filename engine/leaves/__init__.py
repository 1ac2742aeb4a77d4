"""The leaves: modules that import nothing else of the engine but each other. Errors and exit codes, JSON types,
the machine's facts (environment, cuda_provider), secrets' redaction, YAML with line numbers (yamlsource), the
schema check, disk space, wording and the terminal's text rule. Every floor above may use them."""
