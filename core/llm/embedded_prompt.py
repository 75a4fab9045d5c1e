"""What the embedded model reads: turns for its chat template, a transcript for a base model, tool protocol."""

from __future__ import annotations

import json
import re

from langchain_core.messages import AIMessage, BaseMessage, SystemMessage, ToolMessage

from core.prompts import escape_fences, neutralise_control_tokens


def message_text(message: BaseMessage) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") if isinstance(part, dict) else str(part) for part in content)


def prompt_text(message: BaseMessage) -> str:
    """A message's text as the model reads it, its chat-template control tokens made plain: llama.cpp parses special
    tokens in the rendered prompt, so ``<|im_end|>`` in a document, a web page or a question would end its turn."""
    return neutralise_control_tokens(message_text(message))


def to_chat_messages(messages: list[BaseMessage], tagged: bool = False) -> list[dict]:
    """LangChain messages -> strictly alternating user/assistant turns (Gemma's template demands it).

    Tool calls and tool results have no role of their own in the template, so they become text: JSON, or with
    ``tagged`` the ``<tool_call>`` / ``<tool_response>`` blocks Qwen2.5 was trained on (its own template
    renders a tool result as a user turn too).
    """
    system: list[str] = []
    turns: list[dict] = []
    for m in messages:
        if isinstance(m, SystemMessage):
            system.append(prompt_text(m))
            continue
        if isinstance(m, ToolMessage):
            role = "user"
            text = (f"<tool_response>\n{escape_fences(prompt_text(m))}\n</tool_response>" if tagged
                    else f"Tool result ({m.name or 'tool'}):\n{prompt_text(m)}")
        elif isinstance(m, AIMessage):
            calls = [{"name": c["name"], "arguments": c["args"]} for c in m.tool_calls]
            if tagged and calls:
                text = "\n".join([prompt_text(m)] * bool(prompt_text(m)) + [tagged_call(c) for c in calls])
            else:
                text = prompt_text(m) or (json.dumps({"tool_calls": calls}, ensure_ascii=False) if calls else "")
            role = "assistant"
        else:
            role, text = "user", prompt_text(m)
        text = neutralise_control_tokens(text)  # the calls' JSON too: a query may quote a document
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


def _call_variants(tools: list[dict]) -> list[dict]:
    """One JSON schema per tool: its name, and arguments of its parameters' schema."""
    return [
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


def tool_call_schema(tools: list[dict], allow_answer: bool, max_calls: int = 1) -> dict:
    """JSON schema for one turn: a list of calls to the given tools, or (optionally) an answer."""
    calls = {
        "type": "object",
        "properties": {"tool_calls": {"type": "array", "items": {"anyOf": _call_variants(tools)},
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


# ---------------------------------------------------------------- the tagged format Qwen2.5 was trained on

TAGGED_TOOLS = """# Tools

You may call one or more functions to assist with the user query.

You are provided with function signatures within <tools></tools> XML tags:
<tools>
{tools}
</tools>

For each function call, return a json object with function name and arguments within <tool_call></tool_call> \
XML tags:
<tool_call>
{{"name": <function-name>, "arguments": <args-json-object>}}
</tool_call>"""


def tagged_call(call: dict) -> str:
    """One call as the model writes it: ``<tool_call>`` JSON of its name and arguments ``</tool_call>``."""
    body = json.dumps({"name": call["name"], "arguments": call.get("args", call.get("arguments", {}))},
                      ensure_ascii=False)
    return f"<tool_call>\n{body}\n</tool_call>"


def tagged_tool_instructions(tools: list[dict]) -> str:
    """The tools as Qwen2.5's template lists them in its system turn."""
    # a description holds a collection's user-typed text: escaped, it cannot close <tools>
    return TAGGED_TOOLS.format(tools=escape_fences("\n".join(json.dumps(t, ensure_ascii=False) for t in tools)))


def tagged_call_grammar(tools: list[dict], allow_answer: bool, max_calls: int = 1) -> str:
    """GBNF for one turn in the tagged format: up to ``max_calls`` ``<tool_call>`` blocks, each naming an offered
    tool with its arguments' schema, or (optionally) an answer in plain text that does not start with a tag."""
    from core.llm.embedded_grammar import schema_to_gbnf  # imports llama.cpp: only where the model runs

    body = schema_to_gbnf({"anyOf": _call_variants(tools)})
    body = re.sub(r"^root ::=", "tool-call-json ::=", body, flags=re.M)
    more = f' ("\\n" tool-call-tagged){{0,{max_calls - 1}}}' if max_calls > 1 else ""
    rules = ['tool-call-tagged ::= "<tool_call>\\n" tool-call-json "\\n</tool_call>"',
             f"tool-calls ::= tool-call-tagged{more}"]
    if allow_answer:
        rules += ["root ::= tool-calls | free-answer", r"free-answer ::= [^<\x00] [^\x00]*"]
    else:
        rules.append("root ::= tool-calls")
    return body + "\n" + "\n".join(rules) + "\n"


def opening_grammar(openings: list[str]) -> str:
    """GBNF for a plain-text reply that starts with one of ``openings`` (then anything): the caller decides
    what the answer is about, the model still writes all of it. A literal is escaped for GBNF."""
    def literal(text: str) -> str:
        return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'

    return f"root ::= ({' | '.join(literal(t) for t in openings)}) [^\\x00]*\n"
