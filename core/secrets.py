"""The one list of secret settings, and redaction of every form a key can take inside a text.

A key leaks in disguise: an error message quotes it escaped (``'Bearer tvly-abc\\n'``), URL-encoded
in a query string, or JSON-escaped in a response body. Masking only the exact string misses those,
so every text that may carry an error is passed through ``redact`` before it is stored or shown.
"""

from __future__ import annotations

import json
import re
from urllib.parse import quote, quote_plus, unquote, urlsplit, urlunsplit

# provider -> the setting that holds its key (the sidebar offers these for typing)
PROVIDER_KEY_FIELDS = {"openai": "openai_api_key", "openai-compatible": "compat_api_key"}
SECRET_FIELDS = (*PROVIDER_KEY_FIELDS.values(), "tavily_api_key", "app_password")
# settings that are URLs of shared servers: shown and stored with their password masked, the password redacted
URL_FIELDS = ("database_url", "chroma_url")
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
    keys = [value for name in SECRET_FIELDS if (value := getattr(settings, name, ""))]
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
