"""Scripted replies chosen by which prompt is asking, so concurrent graders stay deterministic.

    script = Script(router={"route": "restaurant_menu"}, answer="₩35,000 [1]")
    llm = ScriptedChatModel(responder=script)

A value is one reply (always), a list (one per call, the last repeats) or a callable(messages).
``script.log`` lists the roles in call order.
"""

import re
import threading

from core import prompts
from core.prompts import claims as C
from core.prompts import workflow as P

ROLES = {
    "router": P.ROUTER_SYSTEM,
    "sources": P.MULTI_ROUTER_SYSTEM,
    "complexity": P.COMPLEXITY_SYSTEM,
    "decompose": P.DECOMPOSE_SYSTEM,
    "synthesise": P.SYNTHESISE_SYSTEM,
    "retrieval": P.RETRIEVAL_NEED_SYSTEM,
    "kind": P.KIND_SYSTEM,
    "relevance": (P.RELEVANCE_SYSTEM, P.NUMBERED_RELEVANCE_SYSTEM),
    "crag": P.CRAG_SYSTEM,
    "strip": (P.STRIP_SYSTEM, P.STRIP_ONE_SYSTEM),
    "grounded": P.HALLUCINATION_SYSTEM,
    "usefulness": (P.USEFULNESS_SYSTEM, P.USEFUL_SYSTEM),
    "rewrite": P.REWRITE_VECTOR_SYSTEM,
    "web_rewrite": P.REWRITE_WEB_SYSTEM,
    "fusion": P.FUSION_QUERIES_SYSTEM,
    "answer": prompts.ANSWER_SYSTEM,
    "direct": prompts.DIRECT_SYSTEM,
    "contextualize": prompts.CONTEXTUALIZE_SYSTEM,
    "claim": C.CLAIM_SYSTEM,
    "claims": C.CLAIMS_SYSTEM,
}


def role_of(messages) -> str:
    system, last = str(messages[0].content), str(messages[-1].content)
    # the graders share one system text, and a check of an answer starts as the answer did: the task at the
    # end names the check
    if system == P.GRADER_SYSTEM or (system.startswith(prompts.ANSWER_SYSTEM[:60]) and "Task: " in last):
        system = last.rsplit("Task: ", 1)[-1]
    for role, prompt in ROLES.items():
        if any(system.startswith(p.split("{")[0][:60]) for p in (prompt if isinstance(prompt, tuple) else (prompt,))):
            return role
    raise AssertionError(f"unknown prompt: {system[:80]!r}")


def judged_document(messages) -> str:
    """The document a per-document grader judges: in its message, or named "document [n]" of its system text."""
    numbered = re.search(r"document \[(\d+)\]", str(messages[-1].content))
    if not numbered:
        return str(messages[-1].content)
    n = int(numbered.group(1))
    block = str(messages[0].content).split("<documents>", 1)[1].rsplit("</documents>", 1)[0]
    return re.split(r"\n\n(?=\[\d+\] )", block.strip("\n"))[n - 1]


class Script:
    def __init__(self, **replies):
        unknown = set(replies) - set(ROLES)
        assert not unknown, unknown
        self.replies = {k: (list(v) if isinstance(v, list) else v) for k, v in replies.items()}
        self.log: list[str] = []
        self.prompts: dict[str, list] = {}
        self.lock = threading.Lock()

    def __call__(self, messages):
        role = role_of(messages)
        with self.lock:
            self.log.append(role)
            self.prompts.setdefault(role, []).append(messages)
            if role not in self.replies:
                raise AssertionError(f"no scripted reply for {role}")
            value = self.replies[role]
            if isinstance(value, list):
                value = value.pop(0) if len(value) > 1 else value[0]
        return value(messages) if callable(value) else value

    def count(self, role: str) -> int:
        return self.log.count(role)
