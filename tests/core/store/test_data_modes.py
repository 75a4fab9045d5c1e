"""Every file the app writes under the data directory is 0600, in folders of its own that are 0700 (issue #36)."""

from __future__ import annotations

import os
import stat

from core.config import load_settings
from core.knowledge import entity_graph, hybrid
from core.knowledge.base import SAMPLES_DIR, KnowledgeBase
from core.store.checkpoint import get_checkpointer
from core.store.threads import get_registry
from core.studio import advise, compare, evaluate
from core.studio.question_set import save_question_set
from support.advise_support import ITEMS
from support.fakes import HashEmbeddings


def _mode(path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_every_file_the_app_writes_is_0600_in_0700_folders(tmp_path):
    """Into a data directory that already existed 0755 (and a ``keyword/`` an older version left 0755 with a 0644
    index), each kind of file the app writes: databases, Chroma, keyword indexes, graphs, question sets,
    comparisons, evaluations, advice and its run log. Chroma's own files sit in its 0700 folder."""
    old_umask = os.umask(0o022)  # what a server usually runs with: new files 0644 unless the app says otherwise
    try:
        data = tmp_path / "data"
        (data / "keyword").mkdir(parents=True)
        os.chmod(data, 0o755)
        os.chmod(data / "keyword", 0o755)
        (data / "keyword" / "docs.json").write_text("{}")
        os.chmod(data / "keyword" / "docs.json", 0o644)
        settings = load_settings(data_dir=str(data), provider="embedded")
        kb = KnowledgeBase(settings, HashEmbeddings())
        kb.ingest([SAMPLES_DIR / "restaurant_menu.md"], "docs")
        hybrid.search(kb, ["docs"], "스테이크", 3, "keyword")
        get_registry(settings).touch("t1", "basic", "q", "done")
        get_checkpointer(settings)
        entity_graph._write(entity_graph.graph_path(settings, "docs"), {"nodes": [], "edges": []})
        save_question_set(settings, "my-questions", ITEMS)
        compare.save_comparison({"id": "c1", "question": "q", "results": []}, settings)
        evaluate.save({"provider": "embedded", "items": []}, settings)
        advise.save_advice({"id": "a1", "report": {}}, settings)
        advise.RunStore(settings, "d1").add({"pattern": "basic", "id": "q1"})
    finally:
        os.umask(old_umask)
    assert _mode(data) == 0o755  # the data directory keeps the mode its owner gave it
    folders = {p.relative_to(data).parts[0] for p in data.iterdir() if p.is_dir()}
    assert {"keyword", "graphs", "question_sets", "comparisons", "evals", "advice", "chroma"} <= folders
    wrong = []
    for path in data.rglob("*"):
        inside_chroma = path.relative_to(data).parts[0] == "chroma" and path.name != "chroma"
        if path.is_dir() and not inside_chroma and _mode(path) != 0o700:
            wrong.append(f"{path.relative_to(data)}/ {_mode(path):o}")
        if path.is_file() and not inside_chroma and _mode(path) != 0o600:
            wrong.append(f"{path.relative_to(data)} {_mode(path):o}")
    assert wrong == []
