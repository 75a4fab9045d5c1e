"""`streamlit run` with a scripted model in place of the embedded one, for browser tests that need timing.

    python tests/support/scripted_server.py run streamlit_app.py --server.port N ...

Every answer waits ``RAG_TEST_ANSWER_DELAY`` seconds first (a slow model) and is ``RAG_TEST_ANSWER`` when set;
routers and graders say yes at once, and the question generator's prompts are answered from the chunks shown
(tests/support/question_writer.py).
Nothing else changes: real Streamlit, real Chroma and embeddings, real SQLite.
"""

import os
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(TESTS.parent), str(TESTS)]

from streamlit.web import cli  # noqa: E402

import core.llm.models  # noqa: E402
from support.app_support import happy_script  # noqa: E402
from support.question_writer import combined, reply  # noqa: E402
from support.scripted import ScriptedChatModel  # noqa: E402
from support.workflow_script import role_of  # noqa: E402

DELAY = float(os.environ.get("RAG_TEST_ANSWER_DELAY", "5"))
SCRIPT = happy_script()
if os.environ.get("RAG_TEST_ANSWER"):  # a draft of the test's own (one with a sentence the documents lack)
    SCRIPT.replies["answer"] = os.environ["RAG_TEST_ANSWER"]
MODEL = ScriptedChatModel(responder=combined(SCRIPT),
                          delay=lambda m: DELAY if reply(m) is None and role_of(m) == "answer" else 0.0)
core.llm.models.get_chat_model = lambda settings, role="main": MODEL

if __name__ == "__main__":
    sys.argv = ["streamlit", *sys.argv[1:]]
    sys.exit(cli.main())
