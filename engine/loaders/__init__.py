"""Built-in dataset loaders, one per module, registered under the `ortflow.datasets` entry-point group."""
