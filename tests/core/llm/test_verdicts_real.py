"""Verdict probabilities on the real embedded models: the logits read are the prompt's last ones, and Qwen
turns an irrelevant document away that its written verdict called relevant."""

import numpy as np
import pytest
from langchain_core.documents import Document
from langchain_core.messages import HumanMessage, SystemMessage

from core.llm import graders
from core.llm.embedded_llm import EmbeddedChatModel, _llama_lock, get_llama
from core.llm.verdicts import word_variants, written_verdicts

pytestmark = pytest.mark.real_model

QUESTION = "스테이크 메뉴의 가격은 얼마인가요?"
STEAK = Document(page_content="시그니처 스테이크: 가격 ₩35,000. 미디엄 레어로 구워 드립니다.", metadata={"source": "menu.md"})
PARKING = Document(page_content="주차 안내: 건물 지하 주차장을 2시간 무료로 이용하실 수 있습니다.",
                   metadata={"source": "info.md"})


def test_the_probabilities_are_read_from_the_prompts_last_logits():
    model = EmbeddedChatModel(model_name="gemma-3-270m")
    messages = [SystemMessage("Answer with one word."), HumanMessage("Is the sky blue? Answer yes or no.")]
    reply = model.bind(verdict_words=["yes", "no"]).invoke(messages)
    read = reply.response_metadata["verdict_probabilities"]
    assert reply.usage_metadata["output_tokens"] <= 1  # one token, nothing decoded after it
    with _llama_lock:  # the context still holds the prompt's last logits: the same softmax, by hand
        llama = get_llama(model.model_file())
        row = np.ctypeslib.as_array(llama._ctx.get_logits_ith(-1), shape=(llama.n_vocab(),)).astype(np.float64)
        starts = {w: {llama.tokenize(f.encode(), add_bos=False, special=False)[0] for f in word_variants(w)}
                  for w in ("yes", "no")}
    firsts = {w: ids - starts["no" if w == "yes" else "yes"] for w, ids in starts.items()}
    probs = np.exp(row - row.max())
    probs /= probs.sum()
    mass = {w: probs[list(ids)].sum() for w, ids in firsts.items()}
    assert read["probabilities"]["yes"] == pytest.approx(mass["yes"] / (mass["yes"] + mass["no"]), abs=1e-4)
    assert not firsts["yes"] & firsts["no"]  # no token counts for both


def test_qwen_judges_an_irrelevant_document_not_relevant_though_it_writes_yes():
    model = EmbeddedChatModel(model_name="qwen2.5-coder-1.5b-instruct")
    read = graders.grade_documents(model, QUESTION, [STEAK, PARKING], 1)
    assert [o.method for o in read] == ["probability", "probability"]
    assert read[0].p > read[1].p
    assert [o.value.relevant for o in read] == ["yes", "no"], [o.p for o in read]
    with written_verdicts():  # what the same model writes when asked for its verdict as JSON
        written = graders.grade_documents(model, QUESTION, [PARKING], 1)
    assert written[0].method == "text"
