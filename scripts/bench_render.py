"""Chat page render time for a thread of 200 messages, measured with Streamlit's AppTest.

Builds a 100-turn Basic RAG thread in a temporary data dir with the real runner and an offline canned
model (so the checkpoints and run records are exactly what the app reads back), then opens the chat
page on that thread in fresh AppTest sessions and times each run. One untimed warm-up run pays for
imports and cached resources. Prints one JSON line on stdout:

    {"messages": 200, "runs": 5, "p50_s": ..., "max_s": ...}

Standalone (``python scripts/bench_render.py [--turns 100] [--runs 5] [--data-dir DIR]``); ``python -m core
bench`` runs it in a subprocess because core must not import Streamlit. ``--data-dir`` builds the thread in
that directory instead of a temporary one (its sample collections are indexed there when missing).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "pages" / "1_Basic_RAG.py"
PATTERN = "basic"
QUESTIONS = ["시그니처 스테이크 가격은 얼마인가요?", "트러플 크림 파스타에는 어떤 재료가 들어가나요?",
             "비건 메뉴는 어떤 것들이 있나요?", "스테이크와 어울리는 와인을 추천해주세요",
             "What are the opening hours?"]
ANSWER = ("시그니처 스테이크는 ₩35,000이며 한우 등심을 미디엄 레어로 구워 냅니다 [1]. 곁들임으로 구운 채소와 "
          "트러플 매시드 포테이토가 나오고 [2], 레드 와인으로는 카베르네 소비뇽을 추천합니다 [3].")


def canned_model():
    """An offline chat model: follow-ups are kept as they are, every answer is the same cited paragraph."""
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import AIMessage
    from langchain_core.outputs import ChatGeneration, ChatResult

    from core import prompts

    class CannedChatModel(BaseChatModel):
        @property
        def _llm_type(self) -> str:
            return "canned"

        def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
            rewrite = str(messages[0].content) == prompts.CONTEXTUALIZE_SYSTEM
            text = str(messages[-1].content) if rewrite else ANSWER
            usage = {"input_tokens": 400, "output_tokens": 60, "total_tokens": 460}
            return ChatResult(generations=[ChatGeneration(message=AIMessage(text, usage_metadata=usage))])

    return CannedChatModel()


def build_thread(settings, turns: int) -> str:
    """Ask ``turns`` questions in one thread through the runner; return the thread id."""
    from core.knowledge.base import KnowledgeBase
    from core.run.runner import run
    from core.runtime.context import make_context

    KnowledgeBase(settings).ensure_samples()
    model = canned_model()
    ctx = make_context(settings, llm=model, grader=model)
    thread_id = None
    for i in range(turns):
        question = f"{QUESTIONS[i % len(QUESTIONS)]} ({i + 1})"
        result = run(PATTERN, question, settings, thread_id=thread_id, ctx=ctx)
        if result.get("error"):
            raise RuntimeError(f"turn {i + 1} failed: {result['error']}")
        thread_id = result["thread_id"]
    return thread_id


def render_once(thread_id: str, expected_messages: int) -> float:
    """Open the chat page on the thread in a fresh session; seconds for the whole script run."""
    from streamlit.testing.v1 import AppTest

    # pages are reached from the app's entry point, as in the browser: their links name it
    at = AppTest.from_file(str(ROOT / "streamlit_app.py"), default_timeout=600).run()
    at.query_params["thread"] = thread_id
    start = time.perf_counter()
    at.switch_page(str(PAGE.relative_to(ROOT))).run()
    elapsed = time.perf_counter() - start
    if at.exception:
        raise RuntimeError(f"the chat page failed: {at.exception[0].value}")
    shown = len(at.chat_message)
    if shown != expected_messages:  # a page that rendered less would look fast for the wrong reason
        raise RuntimeError(f"the chat page showed {shown} messages, expected {expected_messages}")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--turns", type=int, default=100, help="question/answer turns in the thread")
    parser.add_argument("--runs", type=int, default=5, help="timed page renders (after one warm-up)")
    parser.add_argument("--data-dir", help="build the thread here (default: a temporary directory, removed after)")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    with tempfile.TemporaryDirectory(prefix="bench-render-", ignore_cleanup_errors=True) as tmp:
        # the app reads its data dir and provider from the environment; embedded never probes a server
        os.environ.update(RAG_DATA_DIR=args.data_dir or str(Path(tmp) / "data"), RAG_PROVIDER="embedded")
        # library chatter goes to stderr: stdout carries exactly one JSON line
        with contextlib.redirect_stdout(sys.stderr):
            from core.config import load_settings

            thread_id = build_thread(load_settings(), args.turns)
            messages = 2 * args.turns
            render_once(thread_id, messages)  # warm-up: imports, cached resources, sample index check
            times = [render_once(thread_id, messages) for _ in range(args.runs)]
    print(json.dumps({"messages": messages, "runs": len(times), "p50_s": round(statistics.median(times), 3),
                      "max_s": round(max(times), 3)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
