"""Canonical JSON (spec §1.3.4): sorted keys, no whitespace, Go's HTML escaping, byte size."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hq_domain import canonical

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=20,
)


def test_sorted_keys_and_no_whitespace() -> None:
    assert canonical.dumps({"b": 1, "a": [1, 2, {"d": None, "c": True}]}) == (
        '{"a":[1,2,{"c":true,"d":null}],"b":1}'
    )


@pytest.mark.parametrize(
    ("text", "escaped"),
    [
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("&", "\\u0026"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
    ],
)
def test_html_escaping(text: str, escaped: str) -> None:
    assert canonical.dumps(text) == f'"{escaped}"'
    assert canonical.size(text) == 8
    assert canonical.dumps(text, html_escape=False) == json.dumps(text, ensure_ascii=False)


def test_control_characters_are_escaped() -> None:
    assert canonical.dumps("\x01") == '"\\u0001"'
    assert canonical.size("\x01") == 8
    assert canonical.dumps("\n") == '"\\n"'


def test_non_ascii_is_kept_as_utf8() -> None:
    assert canonical.dumps("é") == '"é"'
    assert canonical.size("é") == 4  # quotes + two bytes
    assert canonical.size("😀") == 6


def test_escaping_applies_inside_keys() -> None:
    assert canonical.dumps({"<": 1}) == '{"\\u003c":1}'


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, {"a": math.nan}])
def test_nan_and_infinity_are_rejected(bad: object) -> None:
    with pytest.raises(ValueError):
        canonical.dumps(bad)


def test_size_counts_lone_surrogates_without_crashing() -> None:
    assert canonical.size("\ud800") == 5


@given(json_values)
def test_roundtrip_and_size_is_byte_length(value: object) -> None:
    text = canonical.dumps(value)
    assert json.loads(text) == value
    assert canonical.size(value) == len(text.encode("utf-8"))
    assert canonical.dumps(json.loads(text)) == text  # a fixed point: canonical form
    for ch in "<>&\u2028\u2029":
        assert ch not in text


@given(st.dictionaries(st.text(max_size=8), st.integers(), min_size=1, max_size=8))
def test_keys_come_out_sorted(obj: dict[str, int]) -> None:
    decoded = json.loads(canonical.dumps(obj), object_pairs_hook=list)
    keys = [k for k, _ in decoded]
    assert keys == sorted(keys)


@given(st.dictionaries(st.text(max_size=8), st.integers(), max_size=8))
def test_key_order_of_input_is_irrelevant(obj: dict[str, int]) -> None:
    reversed_obj = dict(reversed(list(obj.items())))
    assert canonical.dumps(reversed_obj) == canonical.dumps(obj)


@given(st.text(alphabet="<>&a\u2028é", max_size=40))
def test_size_of_escapable_text(text: str) -> None:
    n_escaped = sum(text.count(c) for c in "<>&\u2028")
    other = len(
        text.replace("<", "").replace(">", "").replace("&", "").replace("\u2028", "").encode()
    )
    assert canonical.size(text) == 2 + 6 * n_escaped + other
