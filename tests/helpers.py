"""Small builders shared by the pattern tests."""

from langchain_core.documents import Document
from scripted import ScriptedChatModel
from workflow_script import Script

from core.context import make_context
from core.runner import run
from core.web_search import WebResult


def web_ok(*texts):
    """A web search stand-in that finds the given texts and records its queries."""
    queries = []

    def search(query):
        queries.append(query)
        docs = [Document(page_content=t, metadata={"source": f"https://example.org/{i}", "url": f"https://example.org/{i}",
                                                  "title": f"Result {i}", "collection": "web", "score": 0.9})
                for i, t in enumerate(texts)]
        return WebResult("ok", docs, query=query)

    search.queries = queries
    return search


def web_down(query):
    return WebResult("unavailable", reason="web search is not configured (no TAVILY_API_KEY)", query=query)


def run_script(pattern, question, settings, script: Script, web=web_down, **kwargs):
    """Run a pattern with one scripted model as both answerer and grader."""
    model = ScriptedChatModel(responder=script)
    ctx = make_context(settings, llm=model, grader=model, web=web)
    return run(pattern, question, settings, ctx=ctx, **kwargs)


def kinds(result, kind):
    return [e for e in result["trace"] if e["kind"] == kind]
