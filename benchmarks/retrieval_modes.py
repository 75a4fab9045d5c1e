"""Dense, keyword and hybrid retrieval compared: top-1 / top-3 hit rates, query latency, a 10,000-chunk check.

    python -m benchmarks.retrieval_modes [--data-dir DIR] [--part hits|latency|large|all] [--json]

Sets: our own Korean notes (benchmarks/corpus_ko, five files indexed with 160-character chunks so each
short section is one chunk: 158 chunks; questions in corpus_ko_questions.jsonl name an identifier, a
number or a name, or paraphrase the section, each with the one chunk that answers it) and the sample
corpora (the built-in question set's answerable questions, searched over all four collections; a hit
is a chunk of an expected collection holding one of the question's facts). The embedder is the
configured one (embedded multilingual-e5-small by default). ``large`` indexes 10,000 synthetic chunks
(random vectors: the query embedding and both indexes are real) and measures query time. A
measurement (printed), never a test: run latency parts on an idle machine.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from pathlib import Path

from core.config import load_settings
from core.knowledge import hybrid, korean_tokens
from core.knowledge.base import SAMPLE_COLLECTIONS, KnowledgeBase

HERE = Path(__file__).resolve().parent
CORPUS, QUESTIONS = HERE / "corpus_ko", HERE / "corpus_ko_questions.jsonl"
BUILTIN = HERE.parent / "core" / "evalsets" / "builtin.jsonl"
OWN = "bench_corpus_ko"
MODES = ("dense", "keyword", "hybrid")


def own_set(kb: KnowledgeBase) -> list[dict]:
    """Index the corpus when missing; each question with the test of its expected chunk."""
    if not kb.exists(OWN):
        small = KnowledgeBase(kb.settings.with_(chunk_size=160, chunk_overlap=0), kb.embeddings)
        small.ingest(sorted(CORPUS.glob("*.md")), OWN)
    cases = []
    for line in QUESTIONS.read_text(encoding="utf-8").splitlines():
        q = json.loads(line)
        cases.append({"question": q["question"], "kind": q["kind"], "collections": [OWN],
                      "hit": lambda d, q=q: d.metadata.get("source") == q["source"] and q["expect"] in d.page_content})
    return cases


def sample_set(kb: KnowledgeBase) -> list[dict]:
    kb.ensure_samples()
    cases = []
    for line in BUILTIN.read_text(encoding="utf-8").splitlines():
        q = json.loads(line)
        if not (q.get("answerable", True) and q.get("facts") and q.get("sources")) or "web" in q["sources"]:
            continue
        facts, wanted = [" ".join(f.split()) for f in q["facts"]], set(q["sources"])
        cases.append({"question": q["question"], "kind": q.get("category", "samples"), "collections": list(SAMPLE_COLLECTIONS),
                      "hit": lambda d, f=facts, w=wanted: d.metadata.get("collection") in w
                      and any(x in " ".join(d.page_content.split()) for x in f)})
    return cases


def hit_rates(kb: KnowledgeBase, cases: list[dict]) -> dict:
    """mode -> {"top1", "top3", "by_kind": {kind: [top1, top3, n]}} and each mode's query times (ms)."""
    out = {}
    for mode in MODES:
        top1 = top3 = 0
        kinds: dict[str, list[int]] = {}
        times = []
        for case in cases:
            kb.embed_query.cache_clear()  # each mode pays for embedding the query, as a new question does
            started = time.perf_counter()
            docs = hybrid.search(kb, case["collections"], case["question"], 3, mode).documents
            times.append((time.perf_counter() - started) * 1000)
            first, any3 = bool(docs) and case["hit"](docs[0]), any(case["hit"](d) for d in docs)
            top1, top3 = top1 + first, top3 + any3
            row = kinds.setdefault(case["kind"], [0, 0, 0])
            row[0], row[1], row[2] = row[0] + first, row[1] + any3, row[2] + 1
        out[mode] = {"top1": round(top1 / len(cases), 3), "top3": round(top3 / len(cases), 3), "n": len(cases),
                     "by_kind": kinds, "p50_ms": round(statistics.median(times), 1)}
    return out


def large_check(kb: KnowledgeBase, chunks: int = 10_000, queries: int = 50) -> dict:
    """Query p50 per mode over ``chunks`` synthetic chunks (indexed once, not timed)."""
    import numpy as np

    name = f"bench_synthetic_{chunks}"
    rng = random.Random(7)
    words = ["주문", "결제", "정산", "배송", "재고", "권한", "암호화", "휴가", "수당", "버전", "오류", "설정", "지연", "백업"]
    if not kb.exists(name):
        col = kb.client.get_or_create_collection(name, metadata={"hnsw:space": "cosine", "embedding_model": kb.model_id})
        dim = len(kb.embed_query("차원"))
        for start in range(0, chunks, 1000):
            ids = [f"syn-{i:05d}" for i in range(start, min(start + 1000, chunks))]
            texts = [f"{' '.join(rng.choices(words, k=12))}의 기본값은 {rng.randint(1, 99999)}이며 "
                     f"setting_{rng.randint(1, 5000)} 항목으로 바꾼다." for _ in ids]
            vectors = np.random.default_rng(start).normal(size=(len(ids), dim))
            col.add(ids=ids, documents=texts, embeddings=(vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).tolist(),
                    metadatas=[{"source": "synthetic.md", "page": 1, "chunk_index": 0, "chunk_id": i} for i in ids])
    hybrid.search(kb, [name], "주문 결제 setting_42", 3, "hybrid")  # builds the keyword index, loads Kiwi: not timed
    out = {}
    for mode in MODES:
        times = []
        for i in range(queries):
            query = f"{rng.choice(words)} {rng.choice(words)} setting_{i * 7}의 기본값은?"
            kb.embed_query.cache_clear()
            started = time.perf_counter()
            hybrid.search(kb, [name], query, 3, mode)
            times.append((time.perf_counter() - started) * 1000)
        out[mode] = {"p50_ms": round(statistics.median(times), 1), "chunks": chunks}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", default=str(HERE.parent / "data" / "bench-retrieval"))
    parser.add_argument("--part", choices=("hits", "latency", "large", "all"), default="hits")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    kb = KnowledgeBase(load_settings(data_dir=args.data_dir))
    report: dict = {"embedder": kb.model_id}
    if args.part in ("hits", "latency", "all"):
        started = time.perf_counter()
        korean_tokens.kiwi()
        report["kiwi_first_use_s"] = round(time.perf_counter() - started, 2)
        report["own"] = hit_rates(kb, own_set(kb))
        report["samples"] = hit_rates(kb, sample_set(kb))
        report["own_chunks"] = kb.info(OWN)["chunks"]
    if args.part in ("large", "all"):
        report["large"] = large_check(kb)
    if args.part == "hits":  # times taken on a busy machine say nothing: left out
        for name in ("own", "samples"):
            for row in report[name].values():
                row.pop("p50_ms")
    print(json.dumps(report, ensure_ascii=False, indent=None if args.json else 2))


if __name__ == "__main__":
    main()
