"""Run layer: the scheduler walks the stage graph, executors run stage jobs (here or on Dask), the runner
looks each job up in the store and builds it in a private work folder, steps run sub-stages."""
