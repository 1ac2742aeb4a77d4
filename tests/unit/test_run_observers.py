"""A run is observed through types.RunObserver (lock writer, out/ publisher, console, as Kedro's runner hooks):
the scheduler's callbacks tell every observer, in the order the run gave them."""

from __future__ import annotations

from ortflow.engine.contracts.types import QuietObserver, RunObserver, StageOutcome, Status
from ortflow.engine.publish.lock import LockWriter
from ortflow.engine.publish.out_folder import Publisher
from ortflow.engine.run.scheduler import EventsObserver, SchedulerEvents


class Noting(QuietObserver):
    def __init__(self, name: str, said: list[str]):
        self.name, self.said = name, said

    def stage_started(self, name: str) -> None:
        self.said.append(f"{self.name} started {name}")

    def stage_finished(self, outcome: StageOutcome) -> None:
        self.said.append(f"{self.name} finished {outcome.name}")


def test_each_observer_is_told_in_the_order_given():
    said: list[str] = []
    console = SchedulerEvents(finished=lambda outcome: said.append(f"console {outcome.status}"))
    events = SchedulerEvents.telling(
        [Noting("lock", said), Noting("out", said), EventsObserver(console)]
    )
    events.started("a")
    events.finished(StageOutcome("a", Status.RAN))
    events.log("ignored by the quiet ones")
    assert said == [
        "lock started a",
        "out started a",
        "lock finished a",
        "out finished a",
        f"console {Status.RAN}",
    ]


def test_the_lock_writer_and_publisher_are_run_observers():
    assert issubclass(LockWriter, QuietObserver) and issubclass(Publisher, QuietObserver)
    assert isinstance(EventsObserver(SchedulerEvents()), RunObserver)
