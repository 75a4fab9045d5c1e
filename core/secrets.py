"""The one list of secret settings, and redaction of every form a key can take inside a text.

A key leaks in disguise: an error message quotes it escaped (``'Bearer tvly-abc\\n'``), URL-encoded
in a query string, or JSON-escaped in a response body. Masking only the exact string misses those,
so every text that may carry an error is passed through ``redact`` before it is stored or shown.
"""

from __future__ import annotations

import json
import re
import threading
from urllib.parse import quote, quote_plus, unquote, urlsplit, urlunsplit

# provider -> the setting that holds its key (the sidebar offers these for typing)
PROVIDER_KEY_FIELDS = {"openai": "openai_api_key", "openai-compatible": "compat_api_key"}
KEY_FIELDS = (*PROVIDER_KEY_FIELDS.values(), "tavily_api_key")  # API keys: sent to servers, redacted from texts
# the app password is masked where settings are shown, but never redacted from answers: a common word
# ("steak") would be mangled everywhere, and the *** in an export would tell a reader what the password is
SECRET_FIELDS = (*KEY_FIELDS, "app_password")
MIN_KEY_CHARS = 8  # a shorter "key" is refused: redacting it would mangle every text (a key "a")
# settings that are URLs of shared servers: shown and stored with their password masked, the password redacted
URL_FIELDS = ("database_url", "chroma_url")
MASK = "***"
# an Authorization header value, whatever the token is (a key we do not know, or one in an odd form)
_BEARER = re.compile(r"\b([Bb]earer)(\s+|%20|\+)(?!\*\*\*)([^\s'\"\\,;)\]}]+)")
_TOKEN_CHARS = r"[\w-]"  # what continues a token: a form followed or preceded by one is part of a longer word
LONG_TOKEN = 20  # a Bearer value this long (or with a digit) is a token, not an English word


def clean_secret(value) -> str:
    """A key as it must be used: no surrounding whitespace (a pasted key often ends with a newline)."""
    return str(value or "").strip()


def refused_key_message(name: str) -> str:
    """What to tell the person who gave the key setting ``name`` a value too short to be a key."""
    return f"{name.upper()} is refused: a key has at least {MIN_KEY_CHARS} characters; set the real key, or leave it empty"


def key_problem(name: str, value: str) -> str:
    """Why ``value`` cannot be the key ``name`` (too short), or '' when it can (or is empty)."""
    value = clean_secret(value)
    return refused_key_message(name) if 0 < len(value) < MIN_KEY_CHARS else ""


def secret_values(settings) -> list[str]:
    """Every non-empty secret to redact from texts: the API keys and URL passwords (not the app password)."""
    if settings is None:
        return []
    if isinstance(settings, (list, tuple, set)):
        return [s for s in settings if s]
    keys = [value for name in KEY_FIELDS if (value := getattr(settings, name, "")) and not key_problem(name, value)]
    return keys + [password for name in URL_FIELDS if (password := url_password(getattr(settings, name, "")))]


def url_password(url: str) -> str:
    """The password inside ``scheme://user:password@host/...`` (decoded), or ''."""
    try:
        return unquote(urlsplit(str(url or "")).password or "")
    except ValueError:
        return ""


def mask_url(url: str) -> str:
    """``url`` with its password replaced by *** (what may be shown, logged or stored)."""
    url = str(url or "")
    try:
        parts = urlsplit(url)
    except ValueError:
        return MASK if url else ""
    if parts.password is None:
        return url
    host = parts.hostname or ""
    host = f"[{host}]" if ":" in host else host
    netloc = f"{parts.username or ''}:{MASK}@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def _forms(secret: str) -> set[str]:
    """The ways a key shows up inside a message: raw, stripped, escaped, quoted, URL-encoded."""
    forms = set()
    for base in {secret, secret.strip(), "".join(secret.split())}:
        if not base:
            continue
        forms |= {base, json.dumps(base)[1:-1], repr(base)[1:-1], base.encode("unicode_escape").decode("ascii"),
                  quote(base, safe=""), quote_plus(base)}
    return {f for f in forms if f}


def redact(text, secrets) -> str:
    """``text`` with every form of every secret, and any Authorization token, replaced by ***.

    ``secrets`` is a Settings object or a list of key values.
    """
    return _redact(text, _secrets_pattern(secrets))


def redact_all(value, secrets):
    """``redact`` applied to every string inside nested dicts, lists and tuples."""
    pattern = _secrets_pattern(secrets)

    def walk(item):
        if isinstance(item, str):
            return _redact(item, pattern)
        if isinstance(item, dict):
            return {k: walk(v) for k, v in item.items()}
        if isinstance(item, (list, tuple)):
            return [walk(v) for v in item]
        return item

    return walk(value)


_remembered: set[str] = set()  # every key a run of this process used (the server's, and keys visitors typed)
_remembered_pattern: list = [None]
_remembered_lock = threading.Lock()


def remember_secrets(settings) -> None:
    """Note the keys a run uses, so that whatever the run stores (checkpoints) is redacted of them too."""
    values = set(secret_values(settings))
    with _remembered_lock:
        if not values <= _remembered:
            _remembered.update(values)
            _remembered_pattern[0] = _secrets_pattern(sorted(_remembered))


def redact_remembered(value):
    """``redact_all`` with every remembered key: what goes into a store shared by all runs."""
    with _remembered_lock:
        pattern = _remembered_pattern[0]
    return _walk(value, pattern)


def _walk(item, pattern):
    """Every string inside ``item`` redacted (dicts, lists, tuples, and messages' content) — a copy, never in place."""
    if isinstance(item, str):
        return _redact(item, pattern)
    if isinstance(item, dict):
        return {k: _walk(v, pattern) for k, v in item.items()}
    if isinstance(item, (list, tuple)):
        return type(item)(_walk(v, pattern) for v in item) if type(item) in (list, tuple) else item
    content = getattr(item, "content", None)
    if isinstance(content, (str, list)) and hasattr(item, "model_copy"):  # a LangChain message
        return item.model_copy(update={"content": _walk(content, pattern)})
    return item


def _secrets_pattern(secrets) -> re.Pattern | None:
    """The pattern of every form of every secret, longest first: a form that contains another is replaced whole."""
    return _pattern(sorted({f for s in secret_values(secrets) for f in _forms(s)}, key=len, reverse=True))


def _token_shaped(value: str) -> bool:
    """A Bearer value that looks like a credential (a digit, or long), not an English word ("bonds")."""
    return any(c.isdigit() for c in value) or len(value) >= LONG_TOKEN


def _bearer(match: re.Match) -> str:
    scheme, space, value = match.groups()
    return f"{scheme}{space}{MASK}" if _token_shaped(value) else match.group(0)


def _pattern(forms: list[str]) -> re.Pattern | None:
    """One regex of every form, each only where it is a whole token (not inside a longer word)."""
    if not forms:
        return None
    alternatives = "|".join(re.escape(f) for f in forms)  # longest first: a form containing another wins
    # a key right after a percent-escape ("...%3Dsk-abc", a URL inside a URL) starts a token all the same
    return re.compile(f"(?:(?<!{_TOKEN_CHARS})|(?<=%[0-9A-Fa-f]{{2}}))(?:{alternatives})(?!{_TOKEN_CHARS})")


def _redact(text, pattern: re.Pattern | None):
    if not isinstance(text, str) or not text:
        return text
    if pattern is not None:
        text = pattern.sub(MASK, text)
    return _BEARER.sub(_bearer, text)
