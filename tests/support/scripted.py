"""A scripted chat model for deterministic graph tests.

Each call pops the next scripted reply: a string (plain answer), an AIMessage (e.g. with
tool_calls), a dict (structured output, serialised as JSON), or an Exception (raised).
``with_structured_output`` parses the next reply into the schema, like a real provider would.
An ``Endless`` reply never closes its JSON: it writes until the call's ``max_tokens`` and says "length".
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from typing import Any, ClassVar

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import RunnableLambda
from pydantic import BaseModel, PrivateAttr

ENDLESS = "scripted-endless"


class Endless:
    """A reply that opens a JSON string and never closes it: cut off at the call's token limit, as providers do."""

    def __init__(self, start: str = '{"queries": ["'):
        self.start = start

    def message(self, limit: int) -> AIMessage:
        return AIMessage(content=self.start + "and more " * limit,
                         response_metadata={"finish_reason": "length", "model_name": ENDLESS},
                         usage_metadata={"input_tokens": 10, "output_tokens": limit, "total_tokens": 10 + limit})


class ScriptedChatModel(BaseChatModel):
    replies: list = []
    max_tokens: int | None = None  # the output limit; a structured call sets its budget here (core.llm.budgets)
    unlimited: int = 512  # where an Endless reply stops when nothing set a limit (the run's max_tokens)
    # optional: called before each reply with its prompt; a test holds a reply there on a gate (threading.Event,
    # Barrier) and returns 0, or returns seconds to sleep where a real process must look slow (tests/support/scripted_server.py)
    delay: Callable[[list[BaseMessage]], float] | None = None
    # optional: choose the reply from the prompt instead of the queue (for concurrent graders)
    responder: Callable[[list[BaseMessage]], Any] | None = None
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)
    _calls: list = PrivateAttr(default_factory=list)
    _limits: list = PrivateAttr(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "scripted"

    @property
    def calls(self) -> list[list[BaseMessage]]:
        return self._calls

    @property
    def limits(self) -> list[int | None]:
        """The output limit each call was made with, in call order."""
        return self._limits

    def _next(self, messages: list[BaseMessage]):
        if self.delay is not None:
            time.sleep(self.delay(messages))
        with self._lock:
            self._calls.append(messages)
            self._limits.append(self.max_tokens)
            if self.responder is not None:
                reply = self.responder(messages)
            elif self.replies:
                reply = self.replies.pop(0)
            else:
                raise AssertionError("ScriptedChatModel ran out of replies")
        if isinstance(reply, Exception):
            raise reply
        if isinstance(reply, Endless):
            return reply.message(self.max_tokens or self.unlimited)
        if isinstance(reply, dict):
            return AIMessage(content=json.dumps(reply, ensure_ascii=False))
        if isinstance(reply, str):
            return AIMessage(content=reply)
        return reply

    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        message = self._next(messages)
        if message.response_metadata.get("model_name") != ENDLESS:  # an endless reply counts what it wrote
            message.usage_metadata = {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _stream(self, messages, stop=None, run_manager=None, **kwargs):
        message = self._next(messages)
        if message.tool_calls or not isinstance(message.content, str):
            yield ChatGenerationChunk(message=AIMessageChunk(content=message.content, tool_calls=message.tool_calls))
            return
        words = message.content.split(" ")
        for i, word in enumerate(words):
            token = word + " "
            last = i == len(words) - 1  # the finish reason (e.g. "length") travels on the last chunk, as providers send it
            chunk = ChatGenerationChunk(message=AIMessageChunk(  # an endless reply's usage too: what it wrote
                content=token, response_metadata=message.response_metadata if last else {},
                usage_metadata=message.usage_metadata if last and message.usage_metadata else None))
            if run_manager:
                run_manager.on_llm_new_token(token, chunk=chunk)
            yield chunk

    def bind_tools(self, tools, **kwargs):
        return self

    def with_structured_output(self, schema, *, include_raw: bool = False, **kwargs):
        def parse(message: AIMessage):
            data = json.loads(message.content)
            if isinstance(schema, type) and issubclass(schema, BaseModel):
                return schema.model_validate(data)
            return data

        def parse_with_raw(message: AIMessage) -> dict:  # as real providers do: the error travels, not raised
            try:
                return {"raw": message, "parsed": parse(message), "parsing_error": None}
            except Exception as exc:
                return {"raw": message, "parsed": None, "parsing_error": exc}

        return self | RunnableLambda(parse_with_raw if include_raw else parse)


class ProbabilityChatModel(ScriptedChatModel):
    """A scripted model that also gives verdict probabilities, as the embedded model does.

    ``probabilities(messages, words) -> {word: p}`` answers every ``bind(verdict_words=...)`` call (a dict
    or None: None is a reply without probabilities); other calls take the scripted replies as usual.
    """

    verdict_probabilities: ClassVar[bool] = True
    probabilities: Callable[[list[BaseMessage], list[str]], Any] | None = None

    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        words = kwargs.get("verdict_words")
        if not words:
            return super()._generate(messages, stop, run_manager, **kwargs)
        with self._lock:
            self._calls.append(messages)
        given = self.probabilities(messages, list(words)) if self.probabilities else None
        meta = {"finish_reason": "length"}  # as llama.cpp says of its one decoded token (max_tokens=1)
        if given is not None:
            total = sum(given.get(w, 0.0) for w in words) or 1.0
            meta["verdict_probabilities"] = {"probabilities": {w: given.get(w, 0.0) / total for w in words},
                                             "mass": total}
        message = AIMessage(content=max(words, key=lambda w: (given or {}).get(w, 0.0)), response_metadata=meta,
                            usage_metadata={"input_tokens": 10, "output_tokens": 1, "total_tokens": 11})
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _stream(self, messages, stop=None, run_manager=None, **kwargs):
        if not kwargs.get("verdict_words"):  # a run streams every call it can: a verdict is one chunk
            yield from super()._stream(messages, stop, run_manager, **kwargs)
            return
        message = self._generate(messages, stop, run_manager, **kwargs).generations[0].message
        yield ChatGenerationChunk(message=AIMessageChunk(content=message.content, usage_metadata=message.usage_metadata,
                                                         response_metadata=message.response_metadata))
