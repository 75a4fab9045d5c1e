"""A small Korean and English corpus in real Chroma (hash embeddings) and a scripted question writer over it.

Each section of a file is one chunk: a heading and one sentence. The generator picks candidate answers from
them in code; ``QUESTIONS`` gives, per candidate, the question a writer asks for it; the ``writer`` responder
answers the generator's prompts from it, and ``overrides`` script the faults a test needs.
"""

import json
import re

from core.knowledge.base import KnowledgeBase
from core.prompts import questions as P
from support.fakes import HashEmbeddings
from support.scripted import ScriptedChatModel

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

QUESTIONS = {  # candidate answer (chosen in code from its chunk) -> the question a writer asks for it
    "1시간": "누비라에서 가장 짧은 이용권은 몇 시간짜리인가요?",
    "1,000원": "누비라 한 시간 이용권의 가격은 얼마인가요?",
    "30일": "누비라 정기권은 며칠 동안 쓸 수 있나요?",
    "5,000원": "누비라 한 달 정기권은 얼마인가요?",
    "312곳": "한빛시에 누비라 대여소는 몇 곳이 있나요?",
    "2,400대": "한빛시의 누비라 자전거는 모두 몇 대인가요?",
    "한빛": "누비라 대여소가 있는 도시는 어디인가요?",
    "오전 5시": "누비라 자전거 대여는 매일 몇 시부터 가능한가요?",
    "150,000원": "자전거를 잃어버리면 분실 보상금은 얼마인가요?",
    "24": "How many honey bee colonies does the apiary keep?",
    "Harbor Hill Apiary": "Which apiary keeps the honey bee colonies in Langstroth hives?",
    "Langstroth": "What kind of hives hold the apiary's honey bee colonies?",
    "July": "In which month does the main honey harvest take place?",
    "48 hours": "How long are stored frames frozen against wax moths?",
}
NO_CANDIDATE = ("헬멧", "Varroa")  # headings of the chunks without a figure, a name or a defining phrase
MISSING = {"bikes": "누비라 전기자전거 이용권은 얼마인가요?", "bees": "Who is the head beekeeper of the apiary?"}
TASKS = {name: getattr(P, name).split("{")[0] for name in
         ("WRITE_TASK", "UNANSWERABLE_TASK", "ANSWER_TASK", "ANSWERED_TASK", "SMALL_TALK_TASK")}


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


def fenced(text: str, tag: str) -> str:
    found = re.findall(rf"<{tag}>\n?(.*?)\n?</{tag}>", text, re.S)
    return found[-1] if found else ""


def task(message) -> str:
    """Which of the generator's tasks a prompt asks (every prompt shares one system text: the task is last)."""
    human = str(message.content)
    return next((name for name, text in TASKS.items() if text in human), "")


def heading(chunk: str) -> str:
    return chunk.split("\n", 1)[0].lstrip("# ").strip()


def writer(overrides: dict | None = None, answered: bool = False, answers: dict | None = None):
    """A responder for ScriptedChatModel that answers every generator prompt from QUESTIONS.

    ``overrides`` (answer span or kind -> reply) script the faults a test needs; ``answers`` (question ->
    reply) the round trip's answers; otherwise a question is answered with the span it was written for."""
    overrides, answers, written = dict(overrides or {}), dict(answers or {}), {}

    def respond(messages):
        human = messages[-1]
        kind, text = task(human), str(human.content)
        if kind == "ANSWERED_TASK":
            return {"answered": answered}
        if kind == "SMALL_TALK_TASK":
            korean = "Korean" in text
            return overrides.get("small_talk") or {"message": "안녕하세요, 반가워요!" if korean else "Hello there, thanks!"}
        if kind == "UNANSWERABLE_TASK":
            collection = "bikes" if re.search("[가-힣]", fenced(text, "line")) else "bees"
            return {"question": overrides.get("unanswerable") or MISSING[collection]}
        if kind == "ANSWER_TASK":
            question = fenced(text, "question")
            # two questions asked together (a pair) are answered with both their spans
            both = ", ".join(span for asked, span in written.items() if asked in question)
            return {"answer": answers.get(question, written.get(question, both))}
        span = re.findall(r"<answer>(.*?)</answer>", text)[0]
        question = overrides.get(span) or QUESTIONS.get(span, f"{span}?")
        if "in Korean" in text and not re.search("[가-힣]", question):
            # asked in the first chunk's language about the other document: its subject in its own words
            words = " ".join(re.findall(r"[A-Za-z]{5,}", question)[-2:])
            question = f"{words}의 값은 무엇인가요?" if words else "the other document's figure?"
        elif "in English" in text and re.search("[가-힣]", question):
            question = "What is the other document's figure?"
        written[question] = span
        return {"question": question}

    return respond


def model(overrides: dict | None = None, answered: bool = False, answers: dict | None = None) -> ScriptedChatModel:
    return ScriptedChatModel(responder=writer(overrides, answered, answers))


def chunk_text(kb, where: dict) -> str:
    return next(c.page_content for c in kb.chunks(where["collection"], limit=None) if c.id == where["chunk_id"])


def humans(scripted: ScriptedChatModel) -> list[str]:
    return [str(call[-1].content) for call in scripted.calls]


def as_json(text: str):
    return json.loads(text)


def chunk_meta(kb, where: dict) -> dict:
    return next(c.metadata for c in kb.chunks(where["collection"], limit=None) if c.id == where["chunk_id"])
