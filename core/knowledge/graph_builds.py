"""Graph builds in the background: started when a collection is ingested or re-indexed, followed by the
Knowledge page, ``python -m core ingest`` and a Graph RAG question that waits for one.

One build per collection and data directory at a time in this process (starting one that runs returns
it). A build is a daemon thread around ``entity_graph.ensure_graph``, which stores the graph after every
batch: a process that ends mid-build leaves a partial graph the next build resumes. A question that does
not wait for the whole graph has its own chunks read next (``read_first``). Nothing here touches
Streamlit: the page polls ``current``.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from core.config import Settings
from core.knowledge import entity_graph as eg
from core.knowledge.graph_extraction import ChunkQueue, model_label


@dataclass
class GraphBuild:
    """One build's state: running, then ready or failed; ``done`` of ``total`` chunks extracted or found."""

    collection: str
    model: str
    total: int = 0
    done: int = 0
    state: str = "running"  # running | ready | failed
    error: str = ""
    info: dict = field(default_factory=dict)
    started: float = field(default_factory=time.time)
    queue: ChunkQueue = field(default_factory=ChunkQueue, repr=False)  # the order chunks are read in
    _changed: threading.Condition = field(default_factory=threading.Condition, repr=False)

    def _update(self, **values) -> None:
        with self._changed:
            for key, value in values.items():
                setattr(self, key, value)
            self._changed.notify_all()

    @property
    def running(self) -> bool:
        return self.state == "running"

    def wait(self, progress=None, timeout: float | None = None) -> bool:
        """Block until the build ends (True) or ``timeout`` passes (False); ``progress(done, total)`` as it goes."""
        deadline = None if timeout is None else time.monotonic() + timeout
        reported = -1
        with self._changed:
            while True:
                if progress and self.total and self.done != reported:
                    reported = self.done
                    progress(self.done, self.total)
                if not self.running:
                    return True
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self._changed.wait(left)

    def read_first(self, chunk_ids: list[str], progress=None, timeout: float | None = None) -> int:
        """Have these chunks read next and block until they are (or the build ends, or ``timeout`` passes);
        ``progress(done, total)`` meanwhile. Returns how many of them the build had still to read."""
        self.queue.prioritize(chunk_ids)
        report = (lambda: progress(self.done, self.total)) if progress else None
        return self.queue.wait_read(chunk_ids, report, timeout)

    def as_dict(self) -> dict:
        return {"collection": self.collection, "model": self.model, "state": self.state, "done": self.done,
                "total": self.total, "error": self.error, "seconds": round(time.time() - self.started, 1)}


_builds: dict[tuple[str, str], GraphBuild] = {}
_guard = threading.Lock()


def _key(settings: Settings, collection: str) -> tuple[str, str]:
    return str(settings.data_path.resolve()), collection


def current(settings: Settings, collection: str) -> GraphBuild | None:
    """The latest build of this collection started in this process (running or ended), if any."""
    with _guard:
        return _builds.get(_key(settings, collection))


def start(settings: Settings, kb, model, collection: str, max_chunks: int = eg.GRAPH_MAX_CHUNKS) -> GraphBuild:
    """Start building the collection's graph with ``model`` in a background thread; a running build is returned."""
    name = model_label(model)
    with _guard:
        build = _builds.get(_key(settings, collection))
        if build and build.running:
            return build
        build = GraphBuild(collection, name)
        _builds[_key(settings, collection)] = build
    threading.Thread(target=_run, args=(build, settings, kb, model, max_chunks), daemon=True,
                     name=f"graph-build-{collection}").start()
    return build


def _run(build: GraphBuild, settings: Settings, kb, model, max_chunks: int) -> None:
    try:
        _, info = eg.ensure_graph(settings, kb, model, build.collection, max_chunks, build.model,
                                  lambda done, total: build._update(done=done, total=total), build.queue)
    except Exception as exc:  # a provider down, a collection deleted meanwhile: the build says why
        build._update(state="failed", error=f"{exc.__class__.__name__}: {str(exc)[:300]}")
        return
    finally:
        build.queue.close()  # a question waiting for its chunks goes on
    build._update(state="ready", info=info, done=info["chunks"], total=info["chunks"])


def build_after_ingest(settings: Settings, kb, collection: str, model=None) -> GraphBuild | None:
    """Start the graph build an ingest or re-index calls for, with the configured grader model (Graph RAG's
    extractor). None when no grader model can be made here (no provider configured): the graph is then
    built when a Graph RAG question asks for it.
    """
    if model is None:
        from core.llm.models import get_chat_model

        try:
            model = get_chat_model(settings, role="grader")
        except Exception:  # no reachable provider: nothing to build with now, said by the caller
            return None
    return start(settings, kb, model, collection)


def graph_state(settings: Settings, kb, collection: str) -> dict:
    """What ``collections`` says of a collection's graph: none, building, partial, ready or stale, with counts."""
    build = current(settings, collection)
    record = eg.stored_graph(settings, collection)
    if build is not None and build.running:
        return {"state": "building", "model": build.model, "chunks_read": build.done, "chunks": build.total}
    if record is None:
        return {"state": "none"}
    _, digest = eg.collection_chunks(kb, collection, record.get("max_chunks") or eg.GRAPH_MAX_CHUNKS)
    state = "stale" if record.get("digest") != digest else "ready" if record.get("complete") else "partial"
    return {"state": state, "model": record.get("model"), "entities": len(record.get("nodes") or []),
            "relations": len(record.get("edges") or []), "chunks_read": len(record.get("done") or []),
            "chunks": int(record.get("chunks") or 0)}


def state_line(state: dict) -> str:
    """One line of ``graph_state`` for the terminal."""
    if state["state"] == "none":
        return "graph: not built (Graph RAG's first question builds it; or ingest --graph)"
    counts = f"{state['chunks_read']}/{state['chunks']} chunks read"
    if state["state"] == "building":
        return f"graph: building with {state['model']}, {counts}"
    return f"graph: {state['state']}, {state['entities']} entities, {state['relations']} relations, {counts} ({state['model']})"
