"""Keys stay in memory: nothing the app writes to disk contains them."""

from pathlib import Path

from helpers import web_ok
from scripted import ScriptedChatModel
from workflow_script import Script

from core.context import make_context
from core.knowledge import SAMPLES_DIR, KnowledgeBase
from core.runner import resume, run

SECRETS = ("sk-test-SECRET-123", "tvly-SECRET-456", "compat-SECRET-789")


def test_no_secret_reaches_checkpoints_threads_or_the_vector_store(settings):
    settings = settings.with_(openai_api_key=SECRETS[0], tavily_api_key=SECRETS[1], compat_api_key=SECRETS[2], k=2)
    KnowledgeBase(settings).ingest([SAMPLES_DIR / "restaurant_menu.md"], "restaurant_menu")
    script = Script(router={"route": "restaurant_menu"}, answer="₩35,000 [1].")
    model = ScriptedChatModel(responder=script)
    ctx = make_context(settings, llm=model, grader=model, web=web_ok("x"))
    paused = run("adaptive", "스테이크 가격?", settings, ctx=ctx, review=True)
    done = resume(paused["thread_id"], {"action": "approve"}, settings, ctx=ctx)
    assert done["answer"] == "₩35,000 [1]."
    assert all(secret not in str(done) for secret in SECRETS)
    files = [p for p in Path(settings.data_dir).rglob("*") if p.is_file()]
    assert any(p.name == "checkpoints.sqlite" for p in files) and any(p.name == "threads.sqlite" for p in files)
    for path in files:
        data = path.read_bytes()
        for secret in SECRETS:
            assert secret.encode() not in data, f"{secret} found in {path}"
