"""Built-in dataset loaders, one per module, registered under the `ortflow.datasets` entry-point group like a
third-party package's: plugins, so they import only `ortflow.api` (an import-linter contract)."""
