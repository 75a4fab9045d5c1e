"""llama.cpp on this CPU (core.llm.llama_runtime): a model loads and answers, AMX or not."""

import subprocess
import sys

import pytest

from core.llm.llama_runtime import needs_plain_buffers
from support.paths import ROOT

# a child process: a crash in llama.cpp must fail this test, not take the test run down with it
GENERATE = """
from core.llm.embedded_llm import get_llama
from core.llm.model_files import gemma_270m_path
llama = get_llama(gemma_270m_path())
out = llama.create_completion("Red, green, blue. " * 20 + "Red,", max_tokens=8, temperature=0)
print("tokens", out["usage"]["completion_tokens"])
"""


@pytest.mark.real_model
def test_the_embedded_model_decodes_on_this_cpu():
    done = subprocess.run([sys.executable, "-c", GENERATE], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"exit {done.returncode}: {done.stderr[-1500:]}"
    assert done.stdout.startswith("tokens ") and int(done.stdout.split()[1]) > 0


def test_amx_builds_load_weights_without_the_extra_buffers():
    assert needs_plain_buffers("CPU : AVX2 = 1 | AVX512 = 1 | AMX_INT8 = 1 | REPACK = 1 |")
    assert not needs_plain_buffers("CPU : AVX2 = 1 | AVX512 = 1 | AVX512_VNNI = 1 | REPACK = 1 |")


def test_the_prepared_library_loads_with_plain_buffers_where_it_must():
    probe = ("import llama_cpp.llama_cpp as lib; from core.llm.llama_runtime import prepare_llama_cpp, cpu_features, "
             "needs_plain_buffers; off = prepare_llama_cpp(); "
             "print(off, needs_plain_buffers(cpu_features()), lib.llama_model_default_params().use_extra_bufts)")
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120)
    off, needed, extra = done.stdout.split()
    assert off == needed and extra == str(needed != "True")
