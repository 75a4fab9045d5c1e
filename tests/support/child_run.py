"""A run in a separate process, for tests that kill it outright: ``python tests/support/child_run.py DATA_DIR MODE``.

Modes: ``ask [THREAD]`` (a Basic RAG run whose answer takes minutes), ``resume THREAD`` (approve a paused
review; the answer takes minutes), ``review`` (an Adaptive RAG run that pauses for review, then
exits), ``review-hang`` (pauses for review, then hangs before the registry records the pause, printing
``{"type": "closing"}``), ``compare`` (a comparison whose answers take minutes). Each event is printed
as a JSON line. The settings come from the environment as well (RAG_DATABASE_URL, RAG_CHROMA_URL).
"""

import json
import sys
import time
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parents[2]), str(Path(__file__).resolve().parents[1])]

from core.config import load_settings  # noqa: E402
from core.runtime.context import make_context  # noqa: E402
from support.scripted import ScriptedChatModel  # noqa: E402
from support.workflow_script import Script, role_of  # noqa: E402

ANSWER = "시그니처 스테이크는 ₩35,000입니다 [1]."
SLOW = 600.0


def context(settings, slow: bool):
    script = Script(router={"route": "restaurant_menu"}, answer=ANSWER, contextualize="스테이크 가격은?")
    model = ScriptedChatModel(responder=script, delay=lambda m: SLOW if slow and role_of(m) == "answer" else 0.0)
    return make_context(settings, llm=model, grader=model, web=lambda q: None)


def hang_before_recording_a_pause() -> None:
    """The pause is in the checkpoint, the registry still says ``running``: the moment a kill is worst."""
    from core.store.threads import ThreadRegistry

    finish = ThreadRegistry.finish_run

    def finish_run(self, run_id, status, result):
        if status == "waiting":
            print(json.dumps({"type": "closing", "run_id": run_id}), flush=True)
            time.sleep(SLOW)
        finish(self, run_id, status, result)

    ThreadRegistry.finish_run = finish_run


def main() -> None:
    data_dir, mode, *rest = sys.argv[1:]
    settings = load_settings(data_dir=data_dir, provider="embedded", k=2)
    if mode == "compare":
        from core.studio.compare import stream_compare

        events = stream_compare("스테이크 가격?", ["basic", "adaptive"], settings,
                                ctx_factory=lambda _p: context(settings, slow=True))
    else:
        from core.run.runner import stream_run

        if mode == "resume":
            events = stream_run("", None, settings, thread_id=rest[0], resume={"action": "approve"},
                                ctx=context(settings, slow=True), review=True)
        elif mode in ("review", "review-hang"):
            if mode == "review-hang":
                hang_before_recording_a_pause()
            events = stream_run("adaptive", "스테이크 가격?", settings, ctx=context(settings, slow=False), review=True)
        else:
            events = stream_run("basic", "스테이크 가격?", settings, thread_id=rest[0] if rest else None,
                                ctx=context(settings, slow=True))
    for event in events:
        print(json.dumps({k: v for k, v in event.items() if k in ("type", "thread_id", "pattern", "node", "comparison")},
                         ensure_ascii=False, default=str), flush=True)


if __name__ == "__main__":
    main()
