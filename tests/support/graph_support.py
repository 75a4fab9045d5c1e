"""A scripted Graph RAG extractor shared by the Graph RAG tests: triples read off the wine list's chunks."""

import re

from core.knowledge.graph_extraction import CHUNKS_PER_CALL
from support.scripted import ScriptedChatModel

PAIRING_Q = "시그니처 스테이크에 어울리는 와인은 무엇인가요?"


def read_wine_chunk(text: str) -> dict:
    """What a perfect extractor would say about a wine-list chunk: grapes and food pairings."""
    relations = []
    for section in re.split(r"\n(?=## \d+\. )", text):
        name = re.match(r"## \d+\. (.+)", section)
        if not name:
            continue
        grape = re.search(r"- 포도 품종: ([^,\n]+)", section)
        if grape:
            relations.append({"source": name[1], "relation": "포도 품종", "target": re.sub(r"\s*\d+%$", "", grape[1])})
        for dish in (re.search(r"- 어울리는 음식: (.+)", section) or [None, ""])[1].split(","):
            if dish.strip():
                relations.append({"source": name[1], "relation": "어울리는 음식", "target": dish.strip()})
    return {"relations": relations[:5]}


def read_batch(human: str) -> dict:
    """The compact answer of a perfect extractor over one call's numbered chunks (each triple names its chunk)."""
    triples = []
    for number, text in re.findall(r"Chunk (\d+):\n(.*?)(?=\n\nChunk \d+:\n|\Z)", human, re.S):
        triples += [{"c": int(number), "s": r["source"], "r": r["relation"], "o": r["target"]}
                    for r in read_wine_chunk(text)["relations"]]
    return {"t": triples}


def calls_for(chunks: int) -> int:
    return -(-chunks // CHUNKS_PER_CALL)


class Extractor(ScriptedChatModel):
    """A scripted grader: triples read off each chunk, and the question's entities from a list."""

    def __init__(self, entities=(), broken=False):
        def respond(messages):
            system, human = messages[0].content, messages[-1].content
            if "knowledge graph" in system:
                return "not json at all" if broken else read_batch(human)
            if "named entities" in system:
                return {"entities": list(entities)}
            return "standalone question"

        super().__init__(responder=respond)

    def extraction_calls(self):
        return sum("knowledge graph" in call[0].content for call in self.calls)
