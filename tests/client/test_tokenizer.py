"""The served model's tokenizer: one loader, once per file, a named error when missing."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_rocm_llm.client.tokenizer import TokenizerUnavailable, load_tokenizer
from pytest_rocm_llm.correctness.long_context import LongContextConfig, build_items
from pytest_rocm_llm.correctness.parity import natural_prompts


def test_loaded_once_from_the_directory_or_the_file(reference_model_dir: Path) -> None:
    tok = load_tokenizer(reference_model_dir)
    assert load_tokenizer(reference_model_dir / "tokenizer.json") is tok
    assert tok.decode(tok.encode("The capital of France").ids) == "The capital of France"


def test_a_missing_tokenizer_is_named_by_every_caller(tmp_path: Path) -> None:
    want = str(tmp_path / "tokenizer.json")
    for call in (lambda: load_tokenizer(tmp_path),
                 lambda: natural_prompts(want, 2, 0),
                 lambda: build_items(LongContextConfig("lc", "long_context", None, (512,)),
                                     want)):
        with pytest.raises(TokenizerUnavailable, match="tokenizer.json not found"):
            call()
