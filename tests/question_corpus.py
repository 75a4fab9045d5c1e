"""A small Korean and English corpus in real Chroma (hash embeddings) and a scripted question writer over it.

Each section of a file is one chunk: a heading and one sentence holding one fact. ``QUESTIONS`` gives,
per heading, the question a writer asks and the fact it quotes; the ``writer`` responder answers the
generator's prompts from it, and ``overrides`` (heading or kind -> reply) script the faults a test needs.
"""

import json
import re

from fakes import HashEmbeddings
from scripted import ScriptedChatModel

from core.knowledge.base import KnowledgeBase
from core.prompts import questions as P

FILES = {
    "bikes": {
        "fees.md": "## 1시간 이용권\n누비라 1시간 이용권은 1,000원이며 앱에서 바로 살 수 있습니다.\n\n"
                   "## 정기권\n누비라 30일 정기권은 5,000원이고 한 달 동안 매일 쓸 수 있습니다.",
        "stations.md": "## 대여소\n한빛시 전역에 대여소 312곳이 있고 자전거는 모두 2,400대입니다.\n\n"
                       "## 운영 시간\n대여와 반납은 매일 오전 5시부터 자정까지 가능합니다.",
        "safety.md": "## 헬멧\n헬멧은 대여소마다 무료로 빌려 주며 반납함에 돌려 놓으면 됩니다.\n\n"
                     "## 분실\n자전거를 잃어버리면 분실 신고 후 보상금 150,000원을 내야 합니다.",
    },
    "bees": {
        "hives.md": "## Colonies\nHarbor Hill Apiary keeps 24 honey bee colonies in Langstroth hives.\n\n"
                    "## Harvest\nThe main honey harvest takes place in late July every summer.",
        "pests.md": "## Varroa\nVarroa mites are counted with a sugar roll test each month.\n\n"
                    "## Wax moths\nStored frames are frozen for 48 hours to keep wax moths away.",
    },
}

QUESTIONS = {  # heading -> (question, fact quoted from its chunk)
    "1시간 이용권": ("누비라 한 시간 이용권의 가격은 얼마인가요?", "1,000원"),
    "정기권": ("누비라 한 달 정기권은 얼마인가요?", "5,000원"),
    "대여소": ("한빛시에 대여소는 몇 곳이 있나요?", "312곳"),
    "운영 시간": ("자전거는 하루 중 언제부터 빌릴 수 있나요?", "오전 5시"),
    "헬멧": ("헬멧을 빌리려면 돈을 내야 하나요?", "무료"),
    "분실": ("자전거를 잃어버리면 보상금은 얼마인가요?", "150,000원"),
    "Colonies": ("How many colonies does the apiary keep?", "24 honey bee colonies"),
    "Harvest": ("When is the main honey harvest?", "late July"),
    "Varroa": ("How are varroa mites counted?", "sugar roll test"),
    "Wax moths": ("How long are stored frames frozen?", "48 hours"),
}
MISSING = {"bikes": ("누비라 전기자전거 이용권은 얼마인가요?", "전기자전거"),
           "bees": ("Who is the head beekeeper of the apiary?", "head beekeeper")}


def build(tmp_path, settings, embeddings=None):
    """A knowledge base with the two collections, one chunk per section (hash embeddings unless given)."""
    kb = KnowledgeBase(settings.with_(chunk_size=80, chunk_overlap=0), embeddings or HashEmbeddings())
    for collection, files in FILES.items():
        paths = []
        for name, text in files.items():
            path = tmp_path / collection / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            paths.append(path)
        assert not kb.ingest(paths, collection).errors
    return kb


def documents(message) -> list[str]:
    return re.findall(r"<document>\n(.*?)\n</document>", str(message.content), re.S)


def heading(chunk: str) -> str:
    return chunk.split("\n", 1)[0].lstrip("# ").strip()


def _is(system: str, prompt: str) -> bool:
    return system.startswith(prompt.split("{")[0])  # the text before the language is filled in


def writer(overrides: dict | None = None, answered: bool = False):
    """A responder for ScriptedChatModel that answers every generator prompt from QUESTIONS."""
    overrides = dict(overrides or {})

    def respond(messages):
        system, human = str(messages[0].content), messages[-1]
        docs = documents(human)
        if _is(system, P.ANSWERED_CHECK_SYSTEM):
            return {"answered": answered}
        if _is(system, P.SMALL_TALK_SYSTEM):
            korean = "Korean" in system
            return overrides.get("small_talk") or {"message": "안녕하세요, 반가워요!" if korean else "Hello there, thanks!"}
        if _is(system, P.UNANSWERABLE_SYSTEM):
            collection = "bikes" if re.search("[가-힣]", docs[0]) else "bees"
            reply = overrides.get("unanswerable") or MISSING[collection]
            return {"question": reply[0], "missing": reply[1]}
        if _is(system, P.TWO_FACTS_SYSTEM):
            (q1, f1), (q2, f2) = (overrides.get(heading(d)) or QUESTIONS[heading(d)] for d in docs)
            korean = bool(re.search("[가-힣]", q1))
            if korean != bool(re.search("[가-힣]", q2)):  # asked in the first chunk's language, as the prompt says
                q2 = "다른 문서의 수치는 무엇인가요?" if korean else "what figure does the other document give?"
            return {"question": f"{q1} 그리고 {q2}" if korean else f"{q1} And {q2}", "fact_first": f1, "fact_second": f2}
        key = heading(docs[0])
        reply = overrides.get(key) or QUESTIONS[key]
        return {"question": reply[0], "facts": [reply[1]]}

    return respond


def model(overrides: dict | None = None, answered: bool = False) -> ScriptedChatModel:
    return ScriptedChatModel(responder=writer(overrides, answered))


def chunk_text(kb, where: dict) -> str:
    return next(c.page_content for c in kb.chunks(where["collection"], limit=None) if c.id == where["chunk_id"])


def systems(scripted: ScriptedChatModel) -> list[str]:
    return [str(call[0].content) for call in scripted.calls]


def as_json(text: str):
    return json.loads(text)
