"""Every registered pattern: builds, draws its Mermaid diagram, documents a bound."""

import pytest

from core.patterns import all_patterns, compile_pattern, pattern_ids


@pytest.mark.parametrize("pattern_id", pattern_ids())
def test_pattern_compiles_and_draws_its_diagram(sample_settings, pattern_id):
    from core.patterns import get_pattern

    pattern = get_pattern(pattern_id)
    graph = compile_pattern(pattern)
    mermaid = graph.get_graph().draw_mermaid()
    assert mermaid.startswith("---") or "graph TD" in mermaid
    assert pattern.max_llm_calls(sample_settings) > 0
    assert len(pattern.description.splitlines()) == 2
    if pattern.subgraph_nodes:  # Auto: its answer and its pauses are those of the pattern it runs
        from core.patterns.auto import ROUTED

        assert pattern.subgraph_nodes <= set(graph.get_graph().nodes) and not pattern.answer_tail
        assert pattern.answer_nodes == {n for p in ROUTED for n in p.answer_nodes} and pattern.supports_review
        return
    for node in pattern.answer_nodes:
        assert node in mermaid, node
    # every pattern retrieves, so every pattern can pause for a human before it uses what it found
    assert pattern.supports_review and {"review_documents", "review_tool_calls"} & set(graph.get_graph().nodes)


RETRY_BOUND = {"self_rag", "corrective", "agentic"}  # grade k documents, rewrite and regenerate
STEP_BOUND = {"react", "react_native"}  # one call per agent step


def test_bounds_follow_exactly_the_settings_they_depend_on(sample_settings):
    small = sample_settings.with_(k=2, max_rewrites=1, max_generations=1)
    large = sample_settings.with_(k=4, max_rewrites=3, max_generations=3)
    few, many = sample_settings.with_(max_iterations=2), sample_settings.with_(max_iterations=8)
    from core.llm.graders import VERDICT_CALLS
    from core.patterns.auto import ROUTED

    for pattern in all_patterns():
        if pattern.subgraph_nodes:  # Auto: its verdict, then the most of the patterns it runs, whatever the settings
            for settings in (small, large, few, many):
                assert pattern.max_llm_calls(settings) == VERDICT_CALLS + max(p.max_llm_calls(settings) for p in ROUTED)
            continue
        assert (pattern.max_llm_calls(large) > pattern.max_llm_calls(small)) == (pattern.id in RETRY_BOUND), pattern.id
        assert (pattern.max_llm_calls(many) > pattern.max_llm_calls(few)) == (pattern.id in STEP_BOUND), pattern.id


def test_each_state_declares_each_field_once_with_its_default_and_what_it_holds():
    """The turn input, a pattern's reset and what an edited question clears are read from the declarations;
    the channels keep the names and reducers old checkpoints were written with."""
    from langgraph.channels import BinaryOperatorAggregate, LastValue

    from core.patterns.common import BaseState, turn_input
    from core.patterns.state import QUESTION, declared, field_types, question_defaults

    for pattern in all_patterns():
        graph = pattern.build()
        assert graph.state_schema is pattern.state, pattern.id
        fields = declared(pattern.state)  # raises on a field without a declaration, or a reducer not last
        assert all(f.doc and "\n" not in f.doc for f in fields.values()), pattern.id
        for name, annotation in field_types(pattern.state).items():
            reducer = getattr(annotation, "__metadata__", ())
            assert isinstance(graph.channels[name], BinaryOperatorAggregate if reducer else LastValue), (pattern.id, name)
        start = turn_input(pattern.state, "질문", {"source_ids": ["menu"]})
        assert set(start) == set(fields) and start["source_ids"] == ["menu"] and start["question"] == "질문"
        assert set(pattern.reset) == {"source_ids"} | (set(fields) - set(declared(BaseState))), pattern.id
        assert all(fields[name].scope == QUESTION for name in question_defaults(pattern.state))
    assert {"trace", "searched", "messages"} <= {name for name, a in field_types(BaseState).items()
                                                if getattr(a, "__metadata__", ())}


def test_a_field_whose_reducer_langgraph_would_not_see_is_refused():
    from typing import Annotated, TypedDict

    from core.patterns.state import declared, per_turn
    from core.runtime.trace import add_or_reset

    class Misread(TypedDict, total=False):  # LangGraph reads only the last annotation as the reducer
        trace: Annotated[list[dict], add_or_reset, per_turn(None, "events")]

    class Undeclared(TypedDict, total=False):
        answer: str

    for schema in (Misread, Undeclared):
        with pytest.raises(TypeError, match="not declared as"):
            declared(schema)


def test_an_edited_question_clears_exactly_the_fields_of_the_question_it_replaces():
    from core.patterns.self_rag import new_question

    cleared = new_question({}, "티본 스테이크 가격은?")
    assert cleared == {"query": "티본 스테이크 가격은?", "search_results": None, "relevance_retries": 0, "generations": 0,
                       "grounded": "", "grounding": "", "usefulness": 0, "feedback": "", "best": {}}
    cleared["best"]["answer"] = "x"  # a fresh copy each time: one run's edit never leaks into the declaration
    assert new_question({}, "q")["best"] == {}
