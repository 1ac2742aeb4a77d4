"""A `stages:` entry as written, read once where the recipe is loaded: the matrix expansion and the stage
checks read its parts by name (`entry.params`) rather than a mapping by key, and each part whose shape the
engine relies on is narrowed here, once."""

from __future__ import annotations

from dataclasses import dataclass, field

from ortflow.engine.leaves.json_types import Json


@dataclass
class StageEntry:
    """One entry of the recipe's `stages:`, or one matrix instance of it. A part of the wrong shape reads as
    absent (the recipe schema reports it, and every check skips it); `params`, `inputs` and `matrix` stay the
    user's values as written: the stage type's schema checks the first, the reference checks the second and
    the matrix expansion the third."""

    mapping: bool = (
        True  # False: the entry is not a mapping (reported); its name is still a stage's
    )
    uses: str = ""  # the stage type; "" where it is not a string
    params: Json = None  # `with:`
    inputs: Json = None  # `in:`: port -> reference(s)
    after: list[Json] = field(default_factory=list)  # the stages it waits for
    matrix: Json = None  # `matrix:`: axes, include, exclude
    resources: dict[str, float] = field(default_factory=dict)  # the numeric ones only
    workers: list[str] = field(default_factory=list)  # a single name reads as a list of one
    optional: bool = False  # `optional: true`

    @classmethod
    def read(cls, value: Json) -> StageEntry:
        """The entry as written in the recipe (`value`: the YAML under the stage's name)."""
        if not isinstance(value, dict):
            return cls(mapping=False)
        uses, after, resources, workers = (
            value.get(k) for k in ("uses", "after", "resources", "workers")
        )
        return cls(
            uses=uses if isinstance(uses, str) else "",
            params=value.get("with"),
            inputs=value.get("in"),
            after=after if isinstance(after, list) else [],
            matrix=value.get("matrix"),
            resources={
                k: v
                for k, v in (resources.items() if isinstance(resources, dict) else ())
                if isinstance(v, (int, float))
            },
            workers=[workers]
            if isinstance(workers, str)
            else [w for w in (workers if isinstance(workers, list) else []) if isinstance(w, str)],
            optional=value.get("optional") is True,
        )


def read_stages(value: Json) -> dict[str, StageEntry]:
    """The recipe's `stages:` (anything but a mapping reads as none: the recipe schema reports it)."""
    return (
        {name: StageEntry.read(v) for name, v in value.items()} if isinstance(value, dict) else {}
    )
