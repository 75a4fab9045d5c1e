"""`python -m core` with a scripted model in place of the embedded one (deterministic CLI processes).

    python tests/support/scripted_cli.py ask --pattern adaptive --review --json "..."

Routers and graders say yes, the answer is ``app_support.HAPPY_ANSWER``. Everything else is real:
the CLI, the settings (RAG_DATABASE_URL, RAG_CHROMA_URL), embeddings, Chroma, the database.
"""

import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(TESTS.parent), str(TESTS)]

import core.cli.common  # noqa: E402
import core.cli.main  # noqa: E402
import core.llm.models  # noqa: E402
from support.app_support import happy_script  # noqa: E402
from support.scripted import ScriptedChatModel  # noqa: E402

MODEL = ScriptedChatModel(responder=happy_script())
core.llm.models.get_chat_model = lambda settings, role="main": MODEL
core.cli.common.prepare_model = lambda settings: None  # nothing to assemble: no embedded model runs

if __name__ == "__main__":
    sys.exit(core.cli.main.main(sys.argv[1:]))
