"""Budgets against the built-in models' own tokenizers, and a cut-off grammar run on Gemma (real models)."""

import json

import pytest
from pydantic import BaseModel

from core.knowledge.entity_graph import QuestionEntities
from core.knowledge.graph_extraction import batch_schema
from core.knowledge.sources import DraftDescription
from core.llm import graders
from core.llm.budgets import token_budget
from core.llm.claims.check import _verdicts_schema
from core.llm.embedded_grammar import schema_to_gbnf
from core.llm.embedded_llm import EmbeddedChatModel, embedded_model_path
from core.patterns.rag_fusion import SearchQueries
from core.studio.evaluate import Declined
from core.studio.question_gen import Answer, AnsweredCheck, Question, SmallTalk

pytestmark = pytest.mark.real_model

MODELS = ["gemma-3-270m", "qwen2.5-coder-1.5b-instruct"]
# Korean with rarer syllables (two byte-level tokens each on Qwen) and digits: the costliest text per character
FILLER = "스테이크 메뉴의 가격은 얼마인가요? 시그니처 등심 스테이크는 ₩35,000이며 굽기는 선택할 수 있습니다. 뷁꿻쒧"
SCHEMAS = [graders.route_schema(["restaurant_menu", "restaurant_wine", "web", "direct"]),
           graders.sources_schema(["restaurant_menu", "restaurant_wine", "web"], 3), graders.Complexity,
           graders.SubQuestions, graders.MessageKind, graders.Relevance, graders.CragGrade, graders.Grounded,
           graders.Usefulness, graders.Rewrite, graders._strip_schema(12), SearchQueries, QuestionEntities,
           batch_schema(4), Question, Answer, SmallTalk, AnsweredCheck, _verdicts_schema(8),
           DraftDescription, Declined]


def longest(node: dict, defs: dict):
    """The longest valid value of a JSON schema node: strings at their maxLength, lists at maxItems."""
    if "$ref" in node:
        return longest(defs[node["$ref"].rsplit("/", 1)[-1]], defs)
    if "anyOf" in node:
        return max((longest(o, defs) for o in node["anyOf"]), key=lambda v: len(json.dumps(v, ensure_ascii=False)))
    if "enum" in node or "const" in node:
        return max(node.get("enum", [node.get("const")]), key=lambda v: len(json.dumps(v)))
    kind = node.get("type")
    if kind == "object":
        return {name: longest(sub, defs) for name, sub in node.get("properties", {}).items()}
    if kind == "array":
        return [longest(node["items"], defs) for _ in range(node.get("maxItems", 10))]
    if kind == "string":
        n = node.get("maxLength", 300)
        return (FILLER * (n // len(FILLER) + 1))[:n]
    if kind in ("integer", "number"):
        return 0.123456 if node.get("maximum", 2) <= 1 else 123456
    return False


@pytest.fixture(scope="module", params=MODELS)
def tokenizer(request):
    from llama_cpp import Llama

    llama = Llama(model_path=str(embedded_model_path(request.param)), vocab_only=True, verbose=False)
    return lambda text: len(llama.tokenize(text.encode(), add_bos=False, special=False))


@pytest.mark.parametrize("schema", SCHEMAS, ids=lambda s: s.__name__)
def test_each_budget_covers_its_schemas_longest_reply_on_both_tokenizers(schema: type[BaseModel], tokenizer):
    tree = schema.model_json_schema()
    reply = json.dumps(longest(tree, tree.get("$defs", {})), ensure_ascii=False, separators=(", ", ": "))
    schema.model_validate_json(reply)  # it is a valid reply
    assert tokenizer(reply) <= token_budget(schema)


def test_a_strings_max_length_is_a_bounded_repetition_in_the_grammar():
    grammar = schema_to_gbnf(SearchQueries.model_json_schema())
    assert "char)?)?" in grammar  # llama.cpp's converter spells maxLength as nested optional characters


def test_gemma_writes_its_queries_within_their_budget():
    """Before: Gemma filled one JSON string with ~1,000 tokens, twice. Now the grammar closes it at 60 characters."""
    model = EmbeddedChatModel(model_name="gemma-3-270m", max_tokens=2048)
    outcome = graders.ask(model, SearchQueries, "Write 3 search queries, each at most 60 characters.",
                          "Question: 스테이크 메뉴의 가격은 얼마인가요?", SearchQueries(queries=["-"]))
    assert not outcome.fallback or "cut off" not in outcome.error
    assert all(len(q) <= 60 for q in outcome.value.queries)
