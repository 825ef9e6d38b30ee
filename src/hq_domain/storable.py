"""What PostgreSQL cannot store: U+0000 in text or jsonb.

Every client text that is stored (job fields, outcome and error fields, receipts, client
versions) is refused with a 400 when it holds one; the reference's insert fails with a 500.
"""

from __future__ import annotations

NUL = "\x00"


def holds_nul(value: object) -> bool:
    """Whether a decoded JSON value holds U+0000 in any string or object key (walked without
    recursion; callers bound the depth first)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if NUL in item:
                return True
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return False
