"""The served model's tokenizer, read from ``tokenizer.json`` in its directory, never from a
hub: prompts are built as ids the server sees exactly, and ids coming back are decoded with
the same vocabulary. Loaded once per file per process, and shared: no caller may switch on
padding or truncation on it.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_rocm_llm.errors import InfrastructureError

if TYPE_CHECKING:
    from tokenizers import Tokenizer

TOKENIZER_FILE = "tokenizer.json"


class TokenizerUnavailable(InfrastructureError):
    pass


def tokenizer_file(path: str | Path) -> Path:
    """``path`` itself when it is a file, else ``tokenizer.json`` in the directory."""
    p = Path(path)
    return p if p.is_file() else p / TOKENIZER_FILE


def load_tokenizer(path: str | Path) -> Tokenizer:
    """The tokenizer of a model directory (or of its ``tokenizer.json``); raises
    ``TokenizerUnavailable`` naming the file when there is none."""
    file = tokenizer_file(path)
    if not file.is_file():
        raise TokenizerUnavailable(
            f"{file} not found: prompts are built with the served model's tokenizer; the "
            "model directory must be readable from the test process (--llm-model-path)")
    return _load(str(file.resolve()))


@lru_cache(maxsize=8)
def _load(file: str) -> Tokenizer:
    from tokenizers import Tokenizer  # imported here: loading the plugin stays light

    return Tokenizer.from_file(file)
