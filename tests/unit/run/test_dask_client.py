"""engine.run.dask_client: the typed view of the Dask calls the executor makes, against a real in-process
cluster (placement reads each worker's name, host and resources through it)."""

from __future__ import annotations

import pytest

from ortflow.engine.run.dask_client import connect, workers_of

distributed = pytest.importorskip("distributed")


def test_placement_reads_a_real_clusters_workers_through_the_protocol():
    with distributed.LocalCluster(
        n_workers=1,
        threads_per_worker=1,
        processes=False,
        resources={"GPU": 2},
        dashboard_address=None,
    ) as cluster:
        client = connect(cluster.scheduler_address, 10)
        try:
            assert sum(client.nthreads().values()) == 1
            workers = workers_of(client.scheduler_info(n_workers=-1))
        finally:
            client.close()
    [(address, worker)] = workers.items()
    assert address.startswith(("tcp://", "inproc://"))
    assert worker["resources"] == {"GPU": 2.0} and isinstance(worker["host"], str)
    assert str(worker["name"]) in ("0", address)
    assert workers_of({"workers": None}) == {}
