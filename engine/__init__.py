"""ortflow engine: recipes, the stage DAG, the content-addressed artifact store and the CLI."""

__version__ = "0.1.0"
