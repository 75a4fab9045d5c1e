"""Structured output and tool calling, negotiated per OpenAI-compatible endpoint and model.

Servers differ: llama-cpp-python's server answers HTTP 500 to ``json_schema``, LM Studio refuses
``json_object``, some servers ignore ``tools``. For an ``openai-compatible`` model the methods are
tried in order — ``json_schema``, ``json_object`` with the schema in the prompt, function calling,
plain prompted JSON with validation — and the first the server accepts is remembered for that
endpoint and model for the life of the process (``describe`` words it for ``doctor`` and the sidebar).
A server that ignores ``tools`` gets its tool calls emulated with structured output, and every reply
made that way carries a notice the run's trace shows. Other providers use their own
``with_structured_output``.
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass, field

import openai
from langchain_core.exceptions import ModelRefusalError, OutputParserException
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.runnables import Runnable, RunnableLambda
from langchain_core.utils.function_calling import convert_to_openai_tool
from langchain_openai import ChatOpenAI
from pydantic import BaseModel

from core.llm.budgets import ReplyCutOff, cut_off, token_budget
from core.llm.tool_text import looks_like_tool_call, refused_call, repair_json, tool_calls_in_text

METHODS = ("json_schema", "json_object", "function_calling", "prompt")
# a provider that declines to answer, or an answer cut off or filtered: the grader's fallback applies
REFUSALS = (ModelRefusalError, openai.LengthFinishReasonError, openai.ContentFilterFinishReasonError)
TOOLS_IGNORED = "the server ignores tools: tool calls are emulated with structured output"
# what a server answers to a request shape it does not support (a missing model is not one: that fails the run)
_REQUEST_REFUSED = (openai.BadRequestError, openai.UnprocessableEntityError, openai.InternalServerError)


class MethodRefused(Exception):
    """The server does not honour this structured-output method (it said so, or ignored it)."""


@dataclass
class Endpoint:
    """What one endpoint and model were found to honour."""

    method: str | None = None  # the structured-output method that worked
    refused: dict[str, str] = field(default_factory=dict)  # method -> why it was dropped
    tools: str = "unknown"  # native | ignored | unknown
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def candidates(self) -> list[str]:
        return [self.method] if self.method else [m for m in METHODS if m not in self.refused]


_endpoints: dict[tuple[str, str], Endpoint] = {}
_endpoints_lock = threading.Lock()


def endpoint(model: ChatOpenAI) -> Endpoint:
    key = (str(model.openai_api_base or "").rstrip("/"), model.model_name)
    with _endpoints_lock:
        return _endpoints.setdefault(key, Endpoint())


def forget_endpoints() -> None:
    """Forget what was learnt (a server was restarted with other options)."""
    with _endpoints_lock:
        _endpoints.clear()


def describe(model: ChatOpenAI) -> list[str]:
    """What was learnt about the endpoint, in words for ``doctor`` and the sidebar."""
    state = endpoint(model)
    lines = [f"structured output: {state.method or 'not negotiated yet'}"
             + "".join(f"; {m} dropped ({why})" for m, why in state.refused.items())]
    lines.append({"native": "tool calling: native", "ignored": f"tool calling: {TOOLS_IGNORED}",
                  "unknown": "tool calling: not probed yet"}[state.tools])
    return lines


# ---------------------------------------------------------------- structured output


def structured(model, schema: type[BaseModel], budget: int | None = None) -> Runnable:
    """A runnable from messages to a ``schema`` instance, allowed ``budget`` tokens (default: the schema's).

    Negotiated for OpenAI-compatible servers. A reply cut off at the budget raises ``ReplyCutOff``.
    """
    model, budget = with_budget(model, budget or token_budget(schema))
    meta = {"metadata": {"rag_budget": budget}} if budget else {}  # the trace words a cut-off reply with it
    if isinstance(model, CompatChatModel):
        return RunnableLambda(lambda messages, config: _negotiated(model, schema, messages, config),
                              name=f"structured_{schema.__name__}").with_config(**meta)
    inner = model.with_structured_output(schema, include_raw=True).with_config(**meta)

    def call(messages, config):
        try:
            result = inner.invoke(messages, config)
        except openai.LengthFinishReasonError:  # OpenAI's parse API raises where others set finish_reason
            raise ReplyCutOff(budget or 0, schema.__name__) from None
        return _parsed(result, budget, schema)

    return RunnableLambda(call, name=f"structured_{schema.__name__}")


_LIMIT_FIELDS = ("max_tokens", "num_predict", "max_output_tokens")  # OpenAI and ours, Ollama, Google
_REASONING = re.compile(r"^(o\d|gpt-5)", re.I)


def with_budget(model, budget: int) -> tuple:
    """The model limited to ``budget`` output tokens, and the budget (None where it cannot be or must not be set).

    A reasoning model spends hidden tokens before its reply, so it keeps its own limit: a budget sized for the
    visible JSON would leave it nothing to answer with.
    """
    name = str(getattr(model, "model_name", None) or getattr(model, "model", None) or "")
    if _REASONING.match(name) or getattr(model, "reasoning_effort", None) or getattr(model, "reasoning", None):
        return model, None
    fields = getattr(type(model), "model_fields", {})
    for field_name in _LIMIT_FIELDS:
        if field_name in fields:
            return model.model_copy(update={field_name: budget}), budget
    return model, None


def _parsed(result, budget: int | None, schema: type[BaseModel]):
    """The parsed value of an ``include_raw`` result; a cut-off reply or a parse failure raises."""
    if not (isinstance(result, dict) and {"raw", "parsed", "parsing_error"} <= result.keys()):
        return result  # a model whose structured output ignores include_raw
    if cut_off(result["raw"]):
        raise ReplyCutOff(_written(result["raw"], budget), schema.__name__)
    if result["parsing_error"] is not None:
        raise result["parsing_error"]
    if result["parsed"] is None:
        raise OutputParserException(f"no structured reply: {str(result['raw'].content)[:200]}")
    return result["parsed"]


def _written(message, budget: int | None) -> int:
    """Tokens the cut-off reply holds: what the provider counted, else the budget it stopped at."""
    usage = getattr(message, "usage_metadata", None) or {}
    return int(usage.get("output_tokens") or budget or 0)


def _negotiated(model: CompatChatModel, schema: type[BaseModel], messages, config):
    state = endpoint(model)
    messages = _as_messages(messages)
    for method in state.candidates():
        try:
            value = _METHODS[method](model, schema, messages, config)
        except MethodRefused as exc:
            with state.lock:  # a visitor's server: its status only, never its body (it may be an internal page)
                state.refused[method] = str(exc)[:160] if model.echo_errors else str(exc).split(":")[0]
                if state.method == method:
                    state.method = None
            continue
        with state.lock:
            state.method = state.method or method
        return value
    raise OutputParserException("the server honours none of the structured-output methods: "
                                + "; ".join(f"{m}: {why}" for m, why in state.refused.items()))


def _as_messages(messages) -> list[BaseMessage]:
    if isinstance(messages, str):
        return [HumanMessage(messages)]
    return list(messages)


def _call(bound, messages, config) -> AIMessage:
    budget = ((config or {}).get("metadata") or {}).get("rag_budget")
    try:
        message = bound.invoke(messages, config)
    except _REQUEST_REFUSED as exc:
        raise MethodRefused(f"HTTP {getattr(exc, 'status_code', '?')}: {_short(exc)}") from None
    except openai.LengthFinishReasonError:
        raise ReplyCutOff(budget or 0) from None
    if budget and cut_off(message):  # not a refused method: the reply reached its budget (the fallback applies)
        raise ReplyCutOff(_written(message, budget))
    return message


def _short(exc: Exception) -> str:
    return " ".join(str(exc).split())[:120]


def _with_schema_note(messages: list[BaseMessage], schema: type[BaseModel]) -> list[BaseMessage]:
    """The schema as the last thing the model reads (it varies per grader, so it stays out of the shared prefix)."""
    note = ("Reply with one JSON object only, matching this JSON schema:\n"
            + json.dumps(schema.model_json_schema(), ensure_ascii=False))
    last = messages[-1]
    if isinstance(last, HumanMessage) and isinstance(last.content, str):
        return messages[:-1] + [HumanMessage(last.content + "\n\n" + note)]
    return messages + [HumanMessage(note)]


def _validated(schema: type[BaseModel], message: AIMessage, data) -> BaseModel:
    if message.additional_kwargs.get("refusal"):
        raise OutputParserException(f"the model refused: {message.additional_kwargs['refusal']}")
    if data is None:
        raise OutputParserException(f"not JSON: {str(message.content)[:200]}", llm_output=str(message.content))
    return schema.model_validate(data)


def _json_schema(model, schema, messages, config):
    fmt = {"type": "json_schema", "json_schema": {"name": schema.__name__, "schema": schema.model_json_schema()}}
    message = _call(ChatOpenAI.bind(model, response_format=fmt), messages, config)
    data = repair_json(str(message.content))
    if data is None and not message.additional_kwargs.get("refusal"):
        raise MethodRefused("the reply was not JSON: the server ignores json_schema")
    return _validated(schema, message, data)


def _json_object(model, schema, messages, config):
    fmt = {"type": "json_object", "schema": schema.model_json_schema()}  # llama.cpp servers constrain to it
    message = _call(ChatOpenAI.bind(model, response_format=fmt), _with_schema_note(messages, schema), config)
    data = repair_json(str(message.content))
    if data is None and not message.additional_kwargs.get("refusal"):
        raise MethodRefused("the reply was not JSON: the server ignores json_object")
    return _validated(schema, message, data)


def _function_calling(model, schema, messages, config):
    tool = convert_to_openai_tool(schema)
    name = tool["function"]["name"]
    message = _call(ChatOpenAI.bind_tools(model, [tool], tool_choice=name), messages, config)
    if message.tool_calls:
        return schema.model_validate(message.tool_calls[0]["args"])
    calls = tool_calls_in_text(str(message.content), [tool])
    if calls:
        return schema.model_validate(calls[0]["args"])
    raise MethodRefused("no tool call came back: the server ignores tools")


def _prompt(model, schema, messages, config):
    message = _call(ChatOpenAI.bind(model), _with_schema_note(messages, schema), config)
    return _validated(schema, message, repair_json(str(message.content)))


_METHODS = {"json_schema": _json_schema, "json_object": _json_object, "function_calling": _function_calling,
            "prompt": _prompt}


class _Probe(BaseModel):
    answer: str


def negotiate_endpoint(model: CompatChatModel) -> Endpoint:
    """Find the structured-output method and tool support now (doctor, "test connection"); a few small calls."""
    state = endpoint(model)
    try:
        structured(model, _Probe).invoke([HumanMessage("Reply with the word yes in the field answer.")])
    except (OutputParserException, ValueError):
        pass  # a weak model may garble the probe; the method that carried it is still known
    probe_tools(model)
    return state


# ---------------------------------------------------------------- tool calling


def probe_tools(model: CompatChatModel) -> str:
    """Ask once per endpoint whether tool calls come back (a forced call to a tiny tool)."""
    state = endpoint(model)
    if state.tools != "unknown":
        return state.tools
    tool = {"type": "function", "function": {"name": "get_time", "description": "Tell the current time.",
                                             "parameters": {"type": "object", "properties": {}}}}
    reply = None
    for choice in ("required", "auto"):  # some servers reject "required"
        try:
            reply = ChatOpenAI.bind_tools(model, [tool], tool_choice=choice).invoke(
                [HumanMessage("Call the get_time tool now.")])
            break
        except _REQUEST_REFUSED:
            continue
    native = bool(reply and reply.tool_calls)
    with state.lock:
        state.tools = "native" if native else "ignored"
    return state.tools


def _checked_calls(tools: list[dict]):
    """A reply with no native call but a call written as text: parsed into a tool call, or refused."""

    def check(message: AIMessage) -> AIMessage:
        if message.tool_calls or not looks_like_tool_call(str(message.content)):
            return message
        calls = tool_calls_in_text(str(message.content), tools)
        if calls:
            return message.model_copy(update={"content": "", "tool_calls": calls})
        return message.model_copy(update={"content": "", "invalid_tool_calls": [
            refused_call(str(message.content), "a tool call written as text that names no available tool")]})

    return RunnableLambda(check)


def _emulated(model: CompatChatModel, tools: list[dict], tool_choice, parallel: bool) -> Runnable:
    """Tool calls as structured output, for a server that ignores ``tools``."""
    from core.llm.embedded_prompt import tool_call_schema, tool_instructions

    names = [t["function"]["name"] for t in tools]
    if isinstance(tool_choice, str) and tool_choice in names:
        tools = [t for t in tools if t["function"]["name"] == tool_choice]
    allow_answer = tool_choice in (None, "auto")
    schema_dict = tool_call_schema(tools, allow_answer, 3 if parallel else 1)

    def turn_schema(schema: dict, _cls) -> None:
        schema.clear()
        schema.update(schema_dict)

    class ToolTurn(BaseModel):  # any JSON object passes: the calls are checked against the tools below
        model_config = {"extra": "allow", "json_schema_extra": turn_schema}

    def call(messages, config) -> AIMessage:
        msgs = [HumanMessage(tool_instructions(tools, allow_answer))] + _as_messages(messages)
        # the model call inside carries the notice, so the run's trace (core.runtime.trace.UsageCallback) shows it
        config = {**config, "metadata": {**(config.get("metadata") or {}), "rag_notices": [TOOLS_IGNORED]}}
        notices = {"notices": [TOOLS_IGNORED]}
        try:
            turn = _negotiated(model, ToolTurn, msgs, config).model_dump()
        except (*REFUSALS, OutputParserException, ValueError) as exc:  # cut off or garbled: refused, not an answer
            return AIMessage("", invalid_tool_calls=[refused_call(str(exc), f"no usable tool call: {_short(exc)}")],
                             response_metadata=notices)
        answer = turn.get("answer")
        if isinstance(answer, str) and not looks_like_tool_call(answer):
            return AIMessage(answer, response_metadata=notices)
        text = json.dumps(turn, ensure_ascii=False)
        calls = tool_calls_in_text(text, tools)
        if calls:
            return AIMessage("", tool_calls=calls, response_metadata=notices)
        return AIMessage("", invalid_tool_calls=[refused_call(text, "no usable tool call")], response_metadata=notices)

    return RunnableLambda(call, name="emulated_tools")


class CompatChatModel(ChatOpenAI):
    """ChatOpenAI for an OpenAI-compatible server whose capabilities are negotiated, not assumed."""

    echo_errors: bool = True  # False for a URL a visitor typed: what it refused is said without its error body

    def _get_request_payload(self, input_, *, stop=None, **kwargs) -> dict:
        payload = super()._get_request_payload(input_, stop=stop, **kwargs)
        # OpenAI renamed max_tokens; llama.cpp's servers and older vLLM ignore the new name and would then
        # generate until the context is full
        if "max_completion_tokens" in payload:
            payload["max_tokens"] = payload.pop("max_completion_tokens")
        return payload

    def bind_tools(self, tools, *, tool_choice=None, parallel_tool_calls: bool | None = None, **kwargs):
        formatted = [convert_to_openai_tool(t) for t in tools]
        if tool_choice in ("any", True):
            tool_choice = "required"
        if probe_tools(self) == "ignored":
            return _emulated(self, formatted, tool_choice, bool(parallel_tool_calls))
        extra = {"parallel_tool_calls": parallel_tool_calls} if parallel_tool_calls is not None else {}
        return super().bind_tools(formatted, tool_choice=tool_choice, **extra, **kwargs) | _checked_calls(formatted)

    def with_structured_output(self, schema, **kwargs):
        return structured(self, schema)
