"""Which model-server URLs a browser visitor may make the server call (custom endpoints).

A typed URL makes the *server* send requests, so it must not become a way into the server's own
network: it is http(s) with a host and a path only (no query, fragment or user info, which would let
the visitor choose the path the probes append to), and, unless the operator allows it, every address
its host name resolves to must be public (no loopback, link-local, private or reserved address).
"""

from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlsplit

UNRESOLVED = "the host name could not be resolved"


def url_problem(url: str) -> str:
    """Why ``url`` is not a plain http(s) base URL, or '' when it is."""
    if any(c.isspace() or ord(c) < 32 or c == "\\" for c in url):
        return "the URL contains spaces, control characters or backslashes"
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises on a malformed port
    except ValueError:
        return "the URL cannot be parsed"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return "the URL must start with http:// or https:// and name a host"
    if "?" in url or "#" in url:
        return "the URL may not have a query (?) or a fragment (#)"
    if "@" in parts.netloc:
        return "the URL may not carry a user name or password (user@host)"
    return ""


NAT64 = ipaddress.ip_network("64:ff9b::/96")  # RFC 6052's well-known prefix: the last 32 bits are an IPv4 address
LOCAL_NAT64 = ipaddress.ip_network("64:ff9b:1::/48")  # RFC 8215, local use: a private network's translator
IPV4_COMPATIBLE = ipaddress.ip_network("::/96")  # deprecated ::a.b.c.d, still routed by some stacks


def embedded_ipv4(ip: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses an IPv6 address carries: mapped, 6to4, Teredo's client, NAT64, IPv4-compatible.

    Python calls 64:ff9b::a00:1 and 2002:a9fe:a9fe::1 global, yet a translator sends them to 10.0.0.1 and
    169.254.169.254: each form is checked as the address it embeds.
    """
    found = [ip.ipv4_mapped, ip.sixtofour, ip.teredo[1] if ip.teredo else None]
    if ip in NAT64 or (ip in IPV4_COMPATIBLE and int(ip) > 1):  # :: and ::1 are not IPv4 addresses
        found.append(ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF))
    return [v4 for v4 in found if v4 is not None]


def _blocked(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%", 1)[0])  # an IPv6 scope ("fe80::1%eth0") is not part of the address
    if isinstance(ip, ipaddress.IPv6Address):
        if ip in LOCAL_NAT64:
            return True
        inner = embedded_ipv4(ip)
        if inner:
            return any(_blocked(str(v4)) for v4 in inner)
    return not ip.is_global or ip.is_multicast


def resolved_addresses(host: str) -> list[str]:
    """Every address the host name resolves to (an IP literal is its own address)."""
    infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    return sorted({info[4][0] for info in infos})


def address_problem(url: str) -> str:
    """Why the host of ``url`` is not a public address (each resolved address is checked), or ''."""
    host = urlsplit(url).hostname or ""
    try:
        addresses = resolved_addresses(host)
    except (OSError, UnicodeError):
        return UNRESOLVED
    if not addresses or any(_blocked(a) for a in addresses):
        return ("the host is a loopback, link-local or private address (or resolves to one); this server does not "
                "call those for visitors (RAG_ALLOW_PRIVATE_ENDPOINTS)")
    return ""


def typed_endpoint_problem(url: str, allow_private: bool) -> str:
    """Why a visitor's typed base URL is refused, or '' when the server may call it."""
    return url_problem(url) or ("" if allow_private else address_problem(url))
