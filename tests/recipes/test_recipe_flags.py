"""Every recipe flag takes both spellings: `--batch-size` and Paddle's `--batch_size`."""

from __future__ import annotations

import dataclasses
import importlib
import os
import sys

import pytest

RECIPES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "recipes")


@pytest.fixture(scope="module")
def recipes_path():
    sys.path.insert(0, RECIPES)
    yield
    sys.path.remove(RECIPES)


def test_config_dataclass_flags_take_both_spellings(recipes_path):
    from _config_cli import flags, parse_config

    @dataclasses.dataclass
    class Config:
        batch_size: int = 4
        steps: int = 1

    assert flags("batch_size") == ["--batch-size", "--batch_size"] and flags("steps") == ["--steps"]
    for spelling in ("--batch-size", "--batch_size"):
        assert parse_config(Config, argv=[spelling, "7"]).batch_size == 7
    with pytest.raises(SystemExit):
        parse_config(Config, argv=["--batch-size", "x"])


@pytest.mark.parametrize("recipe", ["llama_pretrain", "llm_dpo", "llm_finetune"])
def test_llm_recipes_take_both_spellings(recipes_path, recipe):
    module = importlib.import_module(recipe)
    for spelling in ("--batch-size", "--batch_size"):
        assert module.parse_config([spelling, "3", "--seq_len", "16"]).batch_size == 3
