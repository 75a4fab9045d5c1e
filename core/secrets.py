"""The one list of secret settings, and redaction of every form a key can take inside a text.

A key leaks in disguise: an error message quotes it escaped (``'Bearer tvly-abc\\n'``), URL-encoded
in a query string, or JSON-escaped in a response body. Masking only the exact string misses those,
so every text that may carry an error is passed through ``redact`` before it is stored or shown.
"""

from __future__ import annotations

import json
import re
from urllib.parse import quote, quote_plus

# provider -> the setting that holds its key (the sidebar offers these for typing)
PROVIDER_KEY_FIELDS = {"openai": "openai_api_key", "openai-compatible": "compat_api_key"}
SECRET_FIELDS = (*PROVIDER_KEY_FIELDS.values(), "tavily_api_key", "app_password")
MASK = "***"
# an Authorization header value, whatever the token is (a key we do not know, or one in an odd form)
_BEARER = re.compile(r"\b([Bb]earer)(\s+|%20|\+)(?!\*\*\*)[^\s'\"\\,;)\]}]+")


def clean_secret(value) -> str:
    """A key as it must be used: no surrounding whitespace (a pasted key often ends with a newline)."""
    return str(value or "").strip()


def secret_values(settings) -> list[str]:
    """Every non-empty secret of a Settings object (or of a plain list of strings)."""
    if settings is None:
        return []
    if isinstance(settings, (list, tuple, set)):
        return [s for s in settings if s]
    return [value for name in SECRET_FIELDS if (value := getattr(settings, name, ""))]


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
    return _redact(text, _all_forms(secrets))


def redact_all(value, secrets):
    """``redact`` applied to every string inside nested dicts, lists and tuples."""
    forms = _all_forms(secrets)

    def walk(item):
        if isinstance(item, str):
            return _redact(item, forms)
        if isinstance(item, dict):
            return {k: walk(v) for k, v in item.items()}
        if isinstance(item, (list, tuple)):
            return [walk(v) for v in item]
        return item

    return walk(value)


def _all_forms(secrets) -> list[str]:
    """Longest first: a form that contains another is replaced whole."""
    return sorted({f for s in secret_values(secrets) for f in _forms(s)}, key=len, reverse=True)


def _redact(text, forms: list[str]):
    if not isinstance(text, str) or not text:
        return text
    for form in forms:
        text = text.replace(form, MASK)
    return _BEARER.sub(lambda m: f"{m.group(1)}{m.group(2)}{MASK}", text)
