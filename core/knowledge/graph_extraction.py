"""Entity–relation extraction for Graph RAG: several chunks per call, a compact output, provenance per chunk.

One call reads ``CHUNKS_PER_CALL`` numbered chunks after a fixed instruction text and answers
``{"t": [{"c": 2, "s": source, "r": relation, "o": target}, ...]}`` under a JSON-schema grammar in
which ``c`` can only be one of the call's chunk numbers: each triple is attributed to the chunk it was
read from. Instructions first, chunks last, so every call shares its prefix (the prompt-state cache of
the embedded model reads it once), and one instruction text serves four chunks instead of one.
"""

from __future__ import annotations

import functools
import re
import threading
import time
from concurrent.futures import FIRST_COMPLETED, wait
from typing import Annotated, Literal

import networkx as nx
from langchain_core.documents import Document
from langchain_core.runnables.config import ContextThreadPoolExecutor
from pydantic import BaseModel, BeforeValidator, Field, create_model

from core.llm import graders
from core.prompts import agents as P
from core.prompts import fence

CHUNKS_PER_CALL = 4
MAX_RELATIONS_PER_CHUNK = 5
NAME_CHARS, RELATION_CHARS = 30, 20  # short fields also keep constrained decoding fast on small models


def cut(limit: int) -> BeforeValidator:
    """Trim instead of failing: the limit is a hint for constrained decoders, not a reason to drop a chunk."""
    return BeforeValidator(lambda v: " ".join(str(v).split())[:limit] if v is not None else "")


def first(limit: int) -> BeforeValidator:
    return BeforeValidator(lambda v: list(v)[:limit] if isinstance(v, (list, tuple)) else v)


class Triple(BaseModel):
    """One fact: chunk number in the call, source, relation, target (short keys: fewer tokens to write)."""

    c: int
    s: Annotated[str, Field(max_length=NAME_CHARS), cut(NAME_CHARS)]
    r: Annotated[str, Field(max_length=RELATION_CHARS), cut(RELATION_CHARS)]
    o: Annotated[str, Field(max_length=NAME_CHARS), cut(NAME_CHARS)]


class BatchExtraction(BaseModel):
    """The facts of the numbered chunks of one call."""

    t: list[Triple]


@functools.cache
def batch_schema(chunks: int) -> type[BatchExtraction]:
    """The schema of a call over ``chunks`` chunks: ``c`` is one of 1..chunks, at most 5 facts a chunk."""
    most = MAX_RELATIONS_PER_CHUNK * chunks
    triple = create_model("Triple", __base__=Triple, c=(Literal[tuple(range(1, chunks + 1))], ...))
    return create_model("BatchExtraction", __base__=BatchExtraction,
                        t=(Annotated[list[triple], Field(max_length=most), first(most)], ...))


def extraction_system() -> str:
    return P.GRAPH_EXTRACT_SYSTEM.format(per_chunk=MAX_RELATIONS_PER_CHUNK, name_chars=NAME_CHARS,
                                         relation_chars=RELATION_CHARS)


def batch_message(docs: list[Document]) -> str:
    """The human message of one call: the chunks, numbered from 1, each fenced as data."""
    return "\n\n".join(f"Chunk {i}:\n{fence(doc.page_content)}" for i, doc in enumerate(docs, 1))


def triples_by_chunk(value: BatchExtraction, count: int) -> list[list[Triple]]:
    """The call's triples split by the chunk they name (a number out of range is dropped), 5 at most each."""
    per_chunk: list[list[Triple]] = [[] for _ in range(count)]
    for triple in value.t:
        if 1 <= triple.c <= count and len(per_chunk[triple.c - 1]) < MAX_RELATIONS_PER_CHUNK:
            per_chunk[triple.c - 1].append(triple)
    return per_chunk


def extract_batch(model, docs: list[Document]) -> tuple[list[list[Triple]], str]:
    """One call over up to CHUNKS_PER_CALL chunks (one retry on a parse failure): triples per chunk, error."""
    schema = batch_schema(len(docs))
    outcome = graders.ask(model, schema, extraction_system(), batch_message(docs), schema(t=[]))
    return triples_by_chunk(outcome.value, len(docs)), outcome.error if outcome.fallback else ""


# ---------------------------------------------------------------- facts written as lists

PROSE_WORDS = 5  # an item longer than this is a sentence, not a name: left to the model
_HEADING = re.compile(r"^#{1,6}\s+(?:\d+[.)]\s*)?(.+?)\s*#*$")
_FIELD = re.compile(rf"^\s*[-*•]\s+\**([^:*]{{1,{RELATION_CHARS}}}?)\**\s*:\s*(.+)$")


def _items(value: str) -> list[str]:
    """A field's value split into items at ", " and " / " outside brackets; a sentence ends it at ". "."""
    items, depth, current, i = [], 0, "", 0
    while i < len(value):
        char = value[i]
        depth += char in "([{"
        depth -= char in ")]}"
        if depth == 0 and value.startswith(". ", i):
            break
        if depth == 0 and (value.startswith(", ", i) or value.startswith(" / ", i)):
            items.append(current)
            current, i = "", i + (2 if value[i] == "," else 3)
            continue
        current += char
        i += 1
    return [name for name in map(clean_name, items + [current]) if name]


def list_facts(doc: Document) -> list[Triple]:
    """Facts a chunk states as a list under a heading ("## 1. 시그니처 스테이크" then "- 가격: ₩35,000"):
    (heading, field, item) for each item, read without the model. Fields written as sentences are skipped:
    the model reads those."""
    facts, heading = [], ""
    for line in doc.page_content.splitlines():
        if match := _HEADING.match(line.strip()):
            heading = clean_name(match.group(1))
            continue
        match = _FIELD.match(line)
        if not (heading and match):
            continue
        relation, value = clean_name(match.group(1)), match.group(2).strip()
        if "니다" in value or len(value.split()) > 3 * PROSE_WORDS:  # a description: sentences, not items
            continue
        for item in _items(value):
            if len(item.split()) > PROSE_WORDS or len(item) > NAME_CHARS:
                continue
            facts.append(Triple(c=1, s=heading, r=relation, o=item))
    return facts


def with_list_facts(doc: Document, triples: list[Triple]) -> list[Triple]:
    """A chunk's list facts, then the model's triples on other relations: where the list states a field, the
    model's copy of it is noise ("허브 양갈비 구이, 시그니처 스테이크 --[어울리는 음식]--> 레드 록 바로사 쉬라즈")."""
    listed = list_facts(doc)
    fields = {name_key(t.r) for t in listed}
    return listed + [t for t in triples if name_key(t.r) not in fields]


# ---------------------------------------------------------------- names and edges


_PAIRS = {"(": ")", "[": "]", "{": "}"}


def clean_name(text: str) -> str:
    """A name without surrounding spaces, quotes and punctuation; brackets go only where they are unpaired
    ("라 포레스타 (La Foresta)" keeps its own) and a name wholly in brackets is unwrapped."""
    name = " ".join(str(text or "").split()).strip(" \"'`.,;:*")
    while len(name) > 1 and name[0] in _PAIRS and name[-1] == _PAIRS[name[0]] and _balanced(name[1:-1]):
        name = name[1:-1].strip(" \"'`.,;:*")
    while name and name[0] in "([{" and not _balanced(name):
        name = name[1:].strip(" \"'`.,;:*")
    while name and name[-1] in ")]}" and not _balanced(name):
        name = name[:-1].strip(" \"'`.,;:*")
    return name


def _balanced(text: str) -> bool:
    depth = 0
    for char in text:
        depth += char in "([{"
        depth -= char in ")]}"
        if depth < 0:
            return False
    return depth == 0


def name_key(text: str) -> str:
    """What two names must share to be the same node: case and spacing ignored."""
    return "".join(clean_name(text).casefold().split())


def meaningful(key: str) -> bool:
    return len(key) >= 2 and not key.replace(".", "").replace(",", "").isdigit()


def _label(meta: dict) -> str:
    source = meta.get("source", "?")
    return f"{source} p.{meta.get('page', 1)}" if source.lower().endswith(".pdf") else source


def add_relations(graph: nx.MultiDiGraph, doc: Document, triples: list[Triple], collection: str) -> int:
    """Add one chunk's triples, each edge naming that chunk; nodes merge by name key. Returns edges added."""
    meta = doc.metadata
    added = 0
    for triple in triples:
        source, target, relation = clean_name(triple.s), clean_name(triple.o), clean_name(triple.r)
        s_key, t_key = name_key(source), name_key(target)
        if not (meaningful(s_key) and meaningful(t_key)) or s_key == t_key:
            continue
        for key, name in ((s_key, source), (t_key, target)):
            if key not in graph:
                graph.add_node(key, name=name, collections=[collection])
            elif collection not in graph.nodes[key]["collections"]:
                graph.nodes[key]["collections"].append(collection)
        graph.add_edge(s_key, t_key, relation=relation or "related to", chunk_id=meta.get("chunk_id", "") or doc.id or "",
                       label=_label(meta), doc_source=meta.get("source", "?"), title=meta.get("title", ""),
                       page=meta.get("page"), collection=collection, chunk_index=meta.get("chunk_index"), order=added)
        added += 1
    return added


class ChunkQueue:
    """The chunks a build has yet to read, in the order it reads them.

    A question on a graph being built moves the chunks it retrieves to the front (``prioritize``) and waits
    until they are read (``wait_read``), so its answer can use them before the rest of the graph is built.
    Either may come before the build has filled the queue; ``close`` (the build ended) releases every waiter.
    """

    def __init__(self) -> None:
        self._pending: list[Document] = []
        self._reading: set[str] = set()
        self._ids: set[str] = set()  # every chunk this build was given to read
        self._first: set[str] = set()  # asked for by a question: read before the others
        self._filled = self._closed = False
        self._changed = threading.Condition()

    def fill(self, docs: list[Document]) -> None:
        with self._changed:
            self._pending = sorted(docs, key=lambda d: d.id not in self._first)  # stable: document order kept
            self._ids = {d.id for d in docs}
            self._filled = True
            self._changed.notify_all()

    def prioritize(self, ids: list[str]) -> None:
        """Read these chunks next (those not in this build, or already read, are ignored)."""
        with self._changed:
            self._first |= set(ids)
            self._pending.sort(key=lambda d: d.id not in self._first)

    def take(self, size: int) -> list[Document]:
        """The next batch to read (empty when nothing is left)."""
        with self._changed:
            batch, self._pending = self._pending[:size], self._pending[size:]
            self._reading |= {d.id for d in batch}
            return batch

    def finish(self, batch: list[Document]) -> None:
        """A batch is read and stored."""
        with self._changed:
            self._reading -= {d.id for d in batch}
            self._changed.notify_all()

    def close(self) -> None:
        """The build ended (done, failed or found nothing to read): nobody waits any more."""
        with self._changed:
            self._closed, self._pending, self._reading = True, [], set()
            self._changed.notify_all()

    def _unread(self, wanted: set[str]) -> bool:
        return bool(wanted & self._reading) or any(d.id in wanted for d in self._pending)

    def wait_read(self, ids: list[str], on_change=None, timeout: float | None = None) -> int:
        """Block until these chunks are read (or the build ends, or ``timeout`` passes); ``on_change()`` after
        each batch meanwhile. Returns how many of them this build had to read (0: none were in it)."""
        wanted = set(ids)
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._changed:
            while not self._closed and (not self._filled or self._unread(wanted)):
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    break
                self._changed.wait(left)
                if on_change:
                    on_change()
            return len(wanted & self._ids)


def extract_into(graph: nx.MultiDiGraph, model, docs: list[Document], collection: str, max_concurrency: int = 4,
                 on_batch=None, queue: ChunkQueue | None = None) -> list[str]:
    """Extract ``docs`` into ``graph`` a batch at a time (batches concurrently, bounded); returns the errors.

    Batches are taken from ``queue`` as calls end, so chunks a question prioritizes meanwhile are read next.
    ``on_batch(batch_docs, error)`` runs in the calling thread after each batch is added (error: "" or why it
    failed), before the queue hears the batch is read, so a caller can report progress and store the partial
    graph. Provider errors propagate.
    """
    queue = queue or ChunkQueue()
    queue.fill(docs)
    errors: list[str] = []
    # a model that answers one call at a time (the embedded one) gains nothing from more: a question's
    # chunks would only queue behind batches taken ahead of them
    parallel = 1 if getattr(model, "serial_calls", False) else max_concurrency
    workers = max(1, min(parallel, -(-len(docs) // CHUNKS_PER_CALL)))
    if not docs:
        return errors
    # the context travels with each call (callbacks, the run's stream writer), as in Runnable.batch
    with ContextThreadPoolExecutor(max_workers=workers) as pool:
        running: dict = {}

        def submit() -> None:
            batch = queue.take(CHUNKS_PER_CALL)
            if batch:
                running[pool.submit(extract_batch, model, batch)] = batch

        for _ in range(workers):
            submit()
        while running:
            finished, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in finished:
                batch = running.pop(future)
                per_chunk, error = future.result()
                if error:
                    error = f"{', '.join(d.metadata.get('chunk_id', d.id or '?') for d in batch)}: {error[:120]}"
                    errors.append(error)
                for doc, triples in zip(batch, per_chunk):
                    add_relations(graph, doc, with_list_facts(doc, triples), collection)
                if on_batch:
                    on_batch(batch, error)
                queue.finish(batch)
                submit()
    return errors


def model_label(model) -> str:
    """The name a graph is keyed by: the model's own name (``model_name`` / ``model``), else its class."""
    return str(getattr(model, "model_name", None) or getattr(model, "model", None) or type(model).__name__)
