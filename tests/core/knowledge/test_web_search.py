from core.config import Settings
from core.knowledge.web_search import MAX_QUERY_CHARS, shorten_query, web_search


class StubTavily:
    """Stands in for the Tavily client: returns or raises what the test sets."""

    def __init__(self, answer):
        self.answer = answer
        self.queries = []

    def invoke(self, payload):
        self.queries.append(payload["query"])
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


def test_results_become_documents_with_url_and_title():
    client = StubTavily({"results": [
        {"title": "Steak guide", "url": "https://example.org/steak", "content": "Pair steak with Cabernet.", "score": 0.9},
        {"title": "Empty", "url": "https://example.org/empty", "content": "  ", "score": 0.1},
    ]})
    result = web_search("steak wine", Settings(), client=client)
    assert result.status == "ok"
    assert len(result.documents) == 1  # empty contents are dropped
    doc = result.documents[0]
    assert doc.metadata["url"] == "https://example.org/steak"
    assert doc.metadata["title"] == "Steak guide"
    assert doc.metadata["source"] == "https://example.org/steak"
    assert doc.page_content == "Pair steak with Cabernet."


def test_no_key_is_unavailable_with_reason():
    result = web_search("anything", Settings(tavily_api_key=""))
    assert result.status == "unavailable"
    assert "TAVILY_API_KEY" in result.reason


def test_string_answer_is_empty_result():
    result = web_search("zzzz", Settings(), client=StubTavily("No search results found for 'zzzz'."))
    assert result.status == "empty" and "No search results" in result.reason


def test_error_dict_and_exceptions_are_unavailable_not_raised():
    assert web_search("q", Settings(), client=StubTavily({"error": "rate limited"})).status == "unavailable"
    result = web_search("q", Settings(), client=StubTavily(TimeoutError("read timed out")))
    assert result.status == "unavailable" and "TimeoutError" in result.reason


def test_long_queries_are_cut_at_a_word_boundary():
    client = StubTavily({"results": []})
    long_query = "스테이크와 어울리는 와인 " * 100
    result = web_search(long_query, Settings(), client=client)
    assert result.status == "empty"
    sent = client.queries[0]
    assert len(sent) <= MAX_QUERY_CHARS and not sent.endswith(" ")
    assert long_query.startswith(sent)
    assert shorten_query("  a   b  ") == "a b"
