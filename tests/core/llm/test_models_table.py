"""One provider table; the model a result names is the model that ran."""

import pytest

from core.config import PROVIDERS, load_settings
from core.llm.models import PROVIDER_TABLE, ProviderError, get_chat_model, list_models, model_name
from support.helpers import run_script
from support.workflow_script import Script


def test_the_table_lists_every_provider_once():
    assert tuple(PROVIDER_TABLE) == PROVIDERS
    assert list_models(load_settings(), "embedded") == ["qwen2.5-coder-1.5b-instruct", "gemma-3-270m"]


def test_embedded_model_names_are_checked_and_canonical(tmp_path):
    assert model_name(load_settings(provider="embedded", embedded_model="")) == "qwen2.5-coder-1.5b-instruct"
    assert model_name(load_settings(provider="embedded", model="gemma-3-270m-q4_k_m")) == "gemma-3-270m"
    with pytest.raises(ProviderError, match="no model 'qwen2.5:7b'; choose one of"):
        model_name(load_settings(provider="embedded", model="qwen2.5:7b"))
    # chosen automatically (no key, no Ollama): a model named for Ollama does not apply to the built-in one
    assert model_name(load_settings(provider="", model="qwen2.5:7b"), "embedded") == "gemma-3-270m"
    chat = get_chat_model(load_settings(provider="embedded", model="qwen2.5-coder-1.5b-instruct",
                                        model_cache_dir=str(tmp_path)))
    assert chat.model_name == "qwen2.5-coder-1.5b-instruct" and chat.model_cache_dir == str(tmp_path)


def test_a_result_names_the_model_that_ran(sample_settings):
    # before: every embedded result said "gemma-3-270m-q4_k_m", whichever file was loaded
    script = Script(answer="₩35,000 [1].")
    result = run_script("basic", "스테이크 가격?", sample_settings.with_(model="qwen2.5-coder-1.5b-instruct"), script)
    assert (result["provider"], result["model"]) == ("embedded", "qwen2.5-coder-1.5b-instruct")
    result = run_script("basic", "스테이크 가격?", sample_settings, script)
    assert result["model"] == "gemma-3-270m"  # the suite's RAG_EMBEDDED_MODEL
