"""What the embedded model reads: turns for its chat template, a transcript for a base model, tool protocol."""

from __future__ import annotations

import json

from langchain_core.messages import AIMessage, BaseMessage, SystemMessage, ToolMessage


def message_text(message: BaseMessage) -> str:
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
            system.append(message_text(m))
            continue
        if isinstance(m, ToolMessage):
            role, text = "user", f"Tool result ({m.name or 'tool'}):\n{message_text(m)}"
        elif isinstance(m, AIMessage):
            calls = [{"name": c["name"], "arguments": c["args"]} for c in m.tool_calls]
            text = message_text(m) or (json.dumps({"tool_calls": calls}, ensure_ascii=False) if calls else "")
            role = "assistant"
        else:
            role, text = "user", message_text(m)
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
