"""Small builders shared by the pattern tests."""

import contextlib
import io
import os
import subprocess
import sys
from dataclasses import dataclass
from unittest import mock

from langchain_core.documents import Document

from core.knowledge.web_search import WebResult
from core.run.runner import run
from core.runtime.context import make_context
from support.paths import ROOT
from support.scripted import ScriptedChatModel
from support.workflow_script import Script


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


LONG_CHUNK_END = "마지막 줄: 스테이크 세트의 디저트는 무료입니다."


def add_long_menu_chunk(settings, folder) -> str:
    """Index one menu chunk longer than any preview (about 700 characters), ending with LONG_CHUNK_END."""
    from core.knowledge.base import KnowledgeBase

    line = "스테이크 메뉴의 가격 안내 {}: 시그니처 스테이크는 ₩35,000이며 굽기는 선택할 수 있습니다."
    body = " ".join(line.format(i) for i in range(12))
    text = f"# 스테이크 메뉴 가격\n\n{body[:620]} {LONG_CHUNK_END}"
    path = folder / "steak_prices.md"
    path.write_text(text, encoding="utf-8")
    KnowledgeBase(settings).ingest([path], "restaurant_menu")
    return text


def cli_process(*args, data_dir, env_extra=None):
    """`python -m core --data-dir DIR ARGS` in a new process, without the provider keys of the environment."""
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "TAVILY_API_KEY")}
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-m", "core", "--data-dir", str(data_dir), *args],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)


@dataclass
class CliResult:
    returncode: int
    stdout: str
    stderr: str


def run_cli(*args, data_dir, env: dict | None = None, stdin: str = "") -> CliResult:
    """`python -m core --data-dir DIR ARGS` in this process: core.cli.main.main with stdin, stdout and stderr
    swapped for strings and ``env`` over os.environ, for tests of arguments, output and exit codes. An exception
    fails the test as a traceback would. What only a process shows (the entry point, a kill, what a new process
    reads from disk) stays with cli_process."""
    from core.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    with mock.patch.dict(os.environ, env or {}), mock.patch.object(sys, "stdin", io.StringIO(stdin)), \
            contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(["--data-dir", str(data_dir), *map(str, args)])
        except SystemExit as exc:  # argparse: 2 on a usage error, 0 after --help
            code = 0 if exc.code is None else exc.code if isinstance(exc.code, int) else 1
    return CliResult(code, out.getvalue(), err.getvalue())


def run_scripted_cli(*args, data_dir, stdin: str = "") -> CliResult:
    """run_cli with the stand-ins of tests/support/scripted_cli.py (routers and graders say yes, the happy answer),
    in this process: for what the command says and returns; a process only where the process is the point."""
    import core.cli.common
    import core.llm.models
    from support.app_support import happy_script

    model = ScriptedChatModel(responder=happy_script())
    with mock.patch.object(core.llm.models, "get_chat_model", lambda settings, role="main": model), \
            mock.patch.object(core.cli.common, "prepare_model", lambda settings: None):
        return run_cli(*args, data_dir=data_dir, stdin=stdin)
