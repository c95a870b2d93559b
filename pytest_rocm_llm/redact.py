"""The one masking rule for credentials in command lines, environments and text we print or
store. No pytest in here.

A flag or environment variable is a secret by its NAME, cut into segments at ``-``, ``_``
and ``.``: its last segment is a credential word (``api-key``, ``HF_TOKEN``,
``--admin-api-key``), or a segment anywhere says secret or password
(``AWS_SECRET_ACCESS_KEY``, ``--ssl-keyfile-password``). Segments, not substrings, so the
engines' many token-count and tokenizer flags (``--max-total-tokens``, ``--tokenizer-path``)
and ``--kv-cache-dtype`` stay visible. A secret's value becomes ``***``; the same values are
then masked in free text (server logs echo their arguments, error messages quote them).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

MASK = "***"

# The name's last segment: what the thing is.
_LAST = frozenset({"key", "apikey", "token", "secret", "password", "passwd", "pwd",
                   "credential", "credentials", "auth"})
# Anywhere in the name: nothing but a credential is named so.
_ANY = frozenset({"secret", "secrets", "password", "passwd", "credential", "credentials"})
# "token" as a unit of text, not an access token: sglang's --bucket-time-to-first-token,
# --kt-max-deferred-experts-per-token.
_TEXT_TOKEN = frozenset({"per", "first", "last", "next", "bos", "eos", "pad", "unk", "sep",
                         "cls", "special", "stop", "start", "end"})
# A value shorter than this is not looked for in free text: masking every "1" or "abc" in a
# log would destroy it, and a credential that short is no credential anyway.
MIN_TEXT_SECRET = 4


def is_secret_name(name: str) -> bool:
    """``--api-key``, ``api-key``, ``HF_TOKEN``, ``AWS_SECRET_ACCESS_KEY``: True;
    ``--max-total-tokens``, ``--tokenizer-path``, ``--kv-cache-dtype``: False."""
    parts = [p for p in re.split(r"[-_.]+", name.lower()) if p]
    if not parts:
        return False
    if _ANY.intersection(parts):
        return True
    if parts[-1] == "token" and len(parts) > 1 and parts[-2] in _TEXT_TOKEN:
        return False
    return parts[-1] in _LAST


def _flag(word: str) -> bool:
    return word.startswith("--") and len(word) > 2


def _secret_words(argv: Sequence[str]) -> list[tuple[int, str]]:
    """(index, value) of every secret value in ``argv``: ``--flag=value`` words and the words
    after ``--flag`` up to the next ``--`` option (a flag may take several values)."""
    out: list[tuple[int, str]] = []
    hiding = False
    for i, word in enumerate(argv):
        if _flag(word):
            name, eq, value = word.partition("=")
            if eq:
                hiding = False
                if is_secret_name(name):
                    out.append((i, value))
            else:
                hiding = is_secret_name(word)
        elif hiding:
            out.append((i, word))
    return out


def redact_argv(argv: Sequence[str]) -> list[str]:
    out = list(argv)
    for i, _ in _secret_words(argv):
        word = out[i]
        out[i] = word.partition("=")[0] + "=" + MASK if _flag(word) else MASK
    return out


def redact_env(env: Mapping[str, str]) -> dict[str, str]:
    return {k: (MASK if is_secret_name(k) else v) for k, v in env.items()}


def secret_values(argv: Sequence[str] = (), env: Mapping[str, str] | None = None
                  ) -> tuple[str, ...]:
    """The secret values of a command line and an environment, longest first (so a secret
    that contains another is masked whole), without the ones too short to look for."""
    found = {v for _, v in _secret_words(argv)}
    found |= {v for k, v in (env or {}).items() if is_secret_name(k)}
    return tuple(sorted((v for v in found if len(v) >= MIN_TEXT_SECRET),
                        key=lambda v: (-len(v), v)))


def redact_text(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every occurrence of each secret value replaced by ``***``."""
    for s in sorted(secrets, key=len, reverse=True):
        if len(s) >= MIN_TEXT_SECRET:
            text = text.replace(s, MASK)
    return text
