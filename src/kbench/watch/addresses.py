"""What a mail's headers may hold: one checked address per recipient, and text that cannot
break a line or carry a control character.

A commit's author is outside text: ``git commit --author 'x <evil@example.org>, victim@example.com, <y>'``
is a valid commit, and pasted into ``To:`` it names three recipients. An address is
therefore parsed on its own (``email.utils.getaddresses``), accepted only when it is exactly
one plain ``local@domain`` (a dot-atom at a host name), and written by the ``email`` package
as an ``Address``, which quotes or RFC 2047-encodes the display name. Any other header text
has its control characters written as escapes (``kbench.contract.text.printable``).
"""

from __future__ import annotations

import re
from email.headerregistry import Address
from email.utils import getaddresses

from kbench.contract.text import has_control, printable, shown

_ATOM = r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+"
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
ADDR_SPEC = re.compile(rf"{_ATOM}(?:\.{_ATOM})*@{_LABEL}(?:\.{_LABEL})*")
"""A plain address: a dot-atom local part at a host name (no quoted local parts, no comments)."""
MAX_ADDRESS = 254


class BadAddress(ValueError):
    """Text that is not exactly one plain mail address."""


def header_text(text: str) -> str:
    """``text`` for an unstructured header (a subject): one line, control characters escaped."""
    return printable(text)


def recipient(text: str) -> Address:
    """The one address ``text`` names (``Name <a@b.org>`` or ``a@b.org``); BadAddress otherwise."""
    if has_control(text):
        raise BadAddress(f"{shown(text)} holds a control character or a line break: give one address")
    found = getaddresses([text])
    if len(found) != 1 or not found[0][1]:
        raise BadAddress(f"{shown(text)} is not one mail address")
    name, addr = found[0]
    if len(addr) > MAX_ADDRESS or not ADDR_SPEC.fullmatch(addr) or addr not in text:
        raise BadAddress(f"{shown(text)} is not one plain mail address (local@domain)")
    return Address(display_name=name, addr_spec=addr)


def author_address(name: str, email: str) -> Address | None:
    """A commit author's address from git's name and email fields, or None when the email is
    not one plain address (the name, whatever it holds, becomes a quoted display name)."""
    if len(email) > MAX_ADDRESS or not ADDR_SPEC.fullmatch(email):
        return None
    return Address(display_name=printable(name), addr_spec=email)

