"""A fixed question set and a stand-in runner for the advise tests (also imported by the process they kill)."""

ITEMS = [
    {"id": "q1", "question": "누비라 30일 정기권은 얼마인가요?", "sources": ["bikes"], "facts": ["5,000원"],
     "answerable": True, "category": "single", "kind": "single", "lang": "ko"},
    {"id": "q2", "question": "How many colonies does the apiary keep?", "sources": ["bees"], "facts": ["24"],
     "answerable": True, "category": "single", "kind": "single", "lang": "en"},
    {"id": "q3", "question": "누비라 전기자전거 이용권은 얼마인가요?", "sources": ["bikes"], "facts": [],
     "answerable": False, "category": "unanswerable", "kind": "unanswerable", "lang": "ko"},
    {"id": "q4", "question": "Who is the head beekeeper?", "sources": ["bees"], "facts": [],
     "answerable": False, "category": "unanswerable", "kind": "unanswerable", "lang": "en"},
]


def fake_run(calls, declines=("careful",)):
    """Every pattern answers with the facts; the patterns in ``declines`` decline unanswerable questions."""
    def run_one(pattern, question, settings):
        calls.append((pattern, question))
        item = next(i for i in ITEMS if i["question"] == question)
        decline = not item["answerable"] and pattern in declines
        answer = "" if decline else (" ".join(item["facts"]) or "It is 7,000원.")
        return {"answer": answer, "termination_reason": "no_relevant_documents" if decline else "answered",
                "llm_calls": 2 if pattern == "careful" else 1, "tokens": 40, "ms": 3000 if pattern == "careful" else 1000,
                "sources": [], "searched": item["sources"],  # what route accuracy is read from (the run's state)
                "trace": [{"kind": "tool", "grader": "retriever", "target": ",".join(item["sources"])}],
                "thread_id": f"{pattern}-{item['id']}", "verification": {"ms": 500, "llm_calls": 1, "tokens": 9}}
    return run_one
