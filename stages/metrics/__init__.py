"""Built-in task metrics, registered under the `ortflow.metrics` entry-point group like third-party ones."""
