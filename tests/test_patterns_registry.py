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
    for node in pattern.answer_nodes:
        assert node in mermaid, node
    assert pattern.max_llm_calls(sample_settings) > 0
    assert len(pattern.description.splitlines()) == 2
    # every pattern retrieves, so every pattern can pause for a human before it uses what it found
    assert pattern.supports_review and {"review_documents", "review_tool_calls"} & set(graph.get_graph().nodes)


RETRY_BOUND = {"self_rag", "corrective", "agentic"}  # grade k documents, rewrite and regenerate
STEP_BOUND = {"react", "react_native"}  # one call per agent step


def test_bounds_follow_exactly_the_settings_they_depend_on(sample_settings):
    small = sample_settings.with_(k=2, max_rewrites=1, max_generations=1)
    large = sample_settings.with_(k=4, max_rewrites=3, max_generations=3)
    few, many = sample_settings.with_(max_iterations=2), sample_settings.with_(max_iterations=8)
    for pattern in all_patterns():
        assert (pattern.max_llm_calls(large) > pattern.max_llm_calls(small)) == (pattern.id in RETRY_BOUND), pattern.id
        assert (pattern.max_llm_calls(many) > pattern.max_llm_calls(few)) == (pattern.id in STEP_BOUND), pattern.id
