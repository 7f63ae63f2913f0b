"""What a message may show of an OpenAI-compatible client's endpoint: its base URL without a user name
and password, and never the API key or that password (a server's error body may echo the key it got).
The embedding client and the LLM client mask their messages with it."""

from __future__ import annotations

import base64
from urllib.parse import unquote, urlsplit, urlunsplit


def url_password(url: str) -> tuple[str, ...]:
    """The password of ``url`` (``http://user:pass@host``), or its user name when it has no password (a
    token, ``http://<token>@host``), as written and decoded, and the user info as it goes on the wire: an HTTP client sends it as ``Authorization: Basic base64(user:pass)`` (httpx and
    requests do), which a server that refuses it may echo as it echoes a key."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return ()
    user, password = parts.username or "", parts.password or ""
    wire = {base64.b64encode(f"{u}:{p}".encode()).decode() for u in (user, unquote(user))
            for p in (password, unquote(password))}
    # a user name without a password is a token written where a user goes (``https://<token>@host``, as
    # GitHub and Hugging Face take one): a secret as a password is, echoed back by a server that refuses it
    secret = password or (user if parts.password is None else "")
    return (*((secret, unquote(secret)) if secret else ()), *sorted(wire))


def basic_auth_hint(url: str, setting: str, key_setting: str) -> str | None:
    """What to check when a server refused (401, 403) a client whose base URL holds ``user:password@``:
    the HTTP client sends them as ``Authorization: Basic`` in place of the key, so "check the key" sent the
    operator to a key the server never got. None when ``url`` has no user info."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return None
    return (f"the user name and password in {setting} went as HTTP Basic auth in place of the key; check "
            f"them, or remove them from {setting} and give the key in the variable {key_setting} names")


def without_url_userinfo(url: str) -> str:
    """``url`` without ``user:password@``: what a message may show."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]))


#: how deep :meth:`Masked.cause` looks down an exception's chain (its ``__cause__`` and ``__context__``)
CHAIN_DEPTH = 8


class Masked:
    """The secrets of a client that reaches ``base_url`` with ``key`` (None: no key of the operator's,
    only a placeholder): :meth:`mask` writes them ``***``; ``url`` is the base URL a message shows."""

    def __init__(self, key: str | None, base_url: str) -> None:
        self.url = without_url_userinfo(base_url)
        self._secrets = sorted({s for s in (key, *url_password(base_url)) if s and len(s) >= 4},
                               key=len, reverse=True)

    def mask(self, text: object) -> str:
        """``text`` with the API key and the base URL's password masked."""
        out = str(text)
        for secret in self._secrets:
            out = out.replace(secret, "***")
        return out

    def cause(self, exc: BaseException | None) -> BaseException | None:
        """``exc`` to chain to an error of ours, or None when its text, or that of an exception under it,
        holds a secret (a traceback, as a log or a LangSmith run records it, shows the whole chain)."""
        cur: BaseException | None = exc
        for _ in range(CHAIN_DEPTH):
            if cur is None:
                return exc
            if self.mask(cur) != str(cur):
                return None
            cur = cur.__cause__ or (None if cur.__suppress_context__ else cur.__context__)
        return exc if cur is None else None
