"""How llama.cpp is loaded on this CPU: the AMX weight buffers are switched off where they crash.

llama-cpp-python builds llama.cpp for the machine it is installed on. On CPUs that report AMX
(Sapphire Rapids and later Xeons), the build repacks weights into AMX "extra buffers", and on the
virtual machines here the first decode then dies with a segmentation fault in
``ggml_backend_amx_mul_mat`` (Gemma 3 270M and Qwen2.5 1.5B alike; reproduced with llama-cpp-python
0.3.36). Loading with ``use_extra_bufts = False`` runs the same model on the plain AVX-512 path.
``Llama()`` does not take that option, so the library's default model parameters are wrapped once.
"""

from __future__ import annotations

import threading

_lock = threading.Lock()
_state = {"checked": False, "disabled": False}


def cpu_features() -> str:
    """llama.cpp's own line about the CPU it was built for (``AVX2 = 1 | AMX_INT8 = 1 | ...``)."""
    import llama_cpp

    return llama_cpp.llama_print_system_info().decode(errors="replace")


def needs_plain_buffers(features: str) -> bool:
    """Whether this build would use AMX weight buffers (the ones that crash here)."""
    return "AMX_INT8 = 1" in features


def prepare_llama_cpp() -> bool:
    """Make every later model load safe on this CPU; True when the extra buffers were switched off."""
    with _lock:
        if not _state["checked"]:
            _state["checked"] = True
            if needs_plain_buffers(cpu_features()):
                _disable_extra_buffers()
                _state["disabled"] = True
        return _state["disabled"]


def _disable_extra_buffers() -> None:
    import llama_cpp.llama_cpp as lib

    default = lib.llama_model_default_params

    def plain_params():
        params = default()
        params.use_extra_bufts = False
        return params

    lib.llama_model_default_params = plain_params
