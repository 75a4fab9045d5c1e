"""``python tests/support/llama_server.py ARGS``: llama-cpp-python's OpenAI-compatible server, loaded as the app loads models.

The same CPU preparation as the embedded provider (core.llm.llama_runtime), then the server's own main.
"""

import runpy
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from core.llm.llama_runtime import prepare_llama_cpp  # noqa: E402

prepare_llama_cpp()
sys.argv[0] = "llama_cpp.server"
runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)
