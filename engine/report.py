"""The run summary: report.json beside the materialised outputs."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

from engine import atomic
from engine.environment import facts
from engine.recipe import Recipe
from engine.runner import StageOutcome


def write_report(recipe: Recipe, out_dir: Path, outcomes: dict[str, StageOutcome], source_digests: dict[str, str]) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    stages = []
    for name, outcome in outcomes.items():
        record = outcome.record or {}
        stages.append({
            "stage": name,
            "type": recipe.stages[name].uses,
            "status": outcome.status,
            "seconds": round(outcome.seconds, 3),
            "build_seconds": record.get("seconds"),
            "key": outcome.key,
            "summary": record.get("summary", ""),
            "metrics": record.get("metrics", {}),
            "outputs": {
                port: {"digest": out["digest"], "path": str(out_dir / name / out["filename"]), "size": out["size"]}
                for port, out in record.get("outputs", {}).items()
            },
            "error": outcome.error,
        })
    report = {
        "recipe": recipe.name,
        "recipe_path": str(recipe.path),
        "overrides": recipe.overrides,
        "finished": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "sources": source_digests,
        "environment": facts(("onnxruntime", "onnx", "python", "platform", "cpu")),
        "stages": stages,
    }
    path = out_dir / "report.json"
    atomic.remove_stale_staging(out_dir)
    atomic.write_text(path, json.dumps(report, indent=2))
    return path
