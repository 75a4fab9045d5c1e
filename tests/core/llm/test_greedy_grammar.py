"""The best-token-first grammar check writes exactly what the grammar in llama.cpp's sampler chain writes
(real Gemma 3 270M, greedy, with the repeat penalty), and rarely filters the whole vocabulary."""

import json

import pytest

from core.llm import graders
from core.llm.embedded_llm import EmbeddedChatModel, _grammar, _json_gbnf, embedded_model_path, get_llama
from core.llm.greedy_grammar import GreedyUnderGrammar
from core.patterns.rag_fusion import SearchQueries

pytestmark = pytest.mark.real_model

PROMPTS = ["Question: 스테이크 메뉴의 가격은 얼마인가요?\nWrite three search queries as JSON.",
           "Document: 시그니처 스테이크 ₩35,000.\nQuestion: 와인 추천?\nIs the document relevant? Answer as JSON.",
           "Rate how useful this answer is, as JSON: 스테이크는 35,000원입니다."]
SCHEMAS = [SearchQueries.model_json_schema(), graders.Relevance.model_json_schema(),
           graders.Usefulness.model_json_schema(),
           {"type": "object", "properties": {"score": {"type": "integer", "minimum": 1, "maximum": 5},
                                             "why": {"type": "string", "maxLength": 80}},
            "required": ["score", "why"]}]


@pytest.fixture(scope="module")
def llama():
    return get_llama(embedded_model_path("gemma-3-270m"))


def complete(llama, prompt: str, schema: dict, greedy: bool) -> tuple[str, GreedyUnderGrammar | None]:
    grammar = _grammar(llama, _json_gbnf(json.dumps(schema, sort_keys=True)))
    llama.reset()
    if not greedy:
        out = llama.create_completion(prompt, max_tokens=60, temperature=0.0, repeat_penalty=1.1, grammar=grammar)
        return out["choices"][0]["text"], None
    processor = GreedyUnderGrammar(llama, grammar, 1.1, llama.last_n_tokens_size)
    try:
        out = llama.create_completion(prompt, max_tokens=60, temperature=0.0, repeat_penalty=1.0,
                                      logits_processor=[processor])
    finally:
        processor.close()
    return out["choices"][0]["text"], processor


@pytest.mark.parametrize("schema", SCHEMAS, ids=["queries", "relevance", "usefulness", "bounded"])
@pytest.mark.parametrize("prompt", PROMPTS, ids=["queries", "relevance", "useful"])
def test_the_best_token_first_writes_what_the_chain_writes(llama, prompt, schema):
    chain, _ = complete(llama, prompt, schema, greedy=False)
    first, processor = complete(llama, prompt, schema, greedy=True)
    assert first == chain
    assert processor.steps > 0 and processor.rejections < processor.steps


def test_the_adapter_decodes_structured_replies_through_it():
    model = EmbeddedChatModel(model_name="gemma-3-270m", max_tokens=60)
    reply = model.with_structured_output(graders.Relevance).invoke("Is 'steak ₩35,000' relevant to 'steak price'?")
    assert isinstance(reply, graders.Relevance)


def test_a_grammar_llama_cpp_cannot_parse_is_refused_before_it_reaches_the_sampler(llama):
    # llama-cpp-python's sampler chain uses the parsed grammar unchecked: text that is not GBNF crashed the process
    with pytest.raises(ValueError, match="could not parse"):
        _grammar(llama, json.dumps(SCHEMAS[0]))
    model = EmbeddedChatModel(model_name="gemma-3-270m", max_tokens=8, temperature=0.5)
    with pytest.raises(ValueError, match="could not parse"):
        model._call(llama, [{"role": "user", "content": "hi"}], "root ::= (", False, 8)
