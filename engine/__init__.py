"""ortflow engine: recipes, the stage DAG, the content-addressed artifact store and the CLI (installed as
ortflow.engine). Layers, top to bottom: cli/console -> pipeline -> run, publish -> recipe -> store -> ort ->
the plugin contracts (registry, stage, dataset) -> shared types and errors."""
