"""Form decoding and rendering helpers (spec §5.1, §5.4)."""

from __future__ import annotations

import json

import pytest
from litestar.datastructures import FormMultiDict

from hq_apps.web import forms
from hq_apps.web.render import _bar, format_ts


def _form(**fields: str) -> FormMultiDict:
    return FormMultiDict(fields)


def test_timestamps_render_as_iso_8601_utc() -> None:
    assert format_ts(0) == "1970-01-01T00:00:00Z"
    assert format_ts(1_700_000_000) == "2023-11-14T22:13:20Z"
    assert format_ts(None) == "—"


def test_status_bar_is_proportional() -> None:
    parts = _bar({"todo": 1, "wip": 0, "done": 3, "failed": 0, "reset_exhausted": 0})
    assert parts == [("todo", 1, 25.0), ("done", 3, 75.0)]
    assert _bar({"todo": 0}) == []


def test_client_versions_split_trim_and_validate() -> None:
    assert forms.client_versions(" b \n\n a\r\n") == ("a", "b")
    assert forms.client_versions("") == ()
    with pytest.raises(forms.FormError, match="Client versions are invalid"):
        forms.client_versions("a\na")
    with pytest.raises(forms.FormError, match="Client versions are invalid"):
        forms.client_versions("x" * 129)
    with pytest.raises(forms.FormError, match="Client versions are invalid"):
        forms.client_versions("\n".join(f"v{i}" for i in range(65)))


def test_project_put_defaults_and_errors() -> None:
    put = forms.project_put(_form(status="active"), "p", None, 0, with_identity=True)
    assert put.dispatch_qps is None and put.max_jobs_per_claim is None and put.client_versions == ()
    put = forms.project_put(
        _form(status="draining", dispatch_qps="1e-300", max_resets="0"), "p", None, 0, with_identity=True
    )
    assert put.dispatch_qps == 1e-300 and put.max_resets == 0
    for bad in ({"dispatch_qps": "0"}, {"dispatch_qps": "nan"}, {"max_resets": "x"},
                {"max_jobs_per_claim": "257"}, {"status": "gone"}, {"identity_mode": "weird"}):
        fields = {"status": "active", **bad}
        with pytest.raises(forms.FormError, match="Project policy is invalid"):
            forms.project_put(_form(**fields), "p", None, 0, with_identity=True)
    with pytest.raises(forms.FormError, match="Project policy is invalid"):
        forms.project_put(_form(status="active"), "bad id", None, 0, with_identity=True)


def test_job_batch_rules() -> None:
    specs = forms.job_batch(json.dumps([{"value": "v", "random_key": -1, "attr": {"a": 1}, "hops": 2}]))
    assert specs[0].random_key == -1 and specs[0].attr == {"a": 1} and specs[0].hops == 2
    assert len(forms.job_batch(json.dumps([{"value": "v"}] * 256))) == 256
    for bad in ("[]", "{}", "[1]", "x", json.dumps([{"value": "v"}] * 257),
                json.dumps([{"value": "v", "extra": 1}]), json.dumps([{"value": ""}]),
                json.dumps([{"value": "v", "random_key": 2**31}]), '[{"value": "v", "attr": {"x": NaN}}]',
                json.dumps([{"value": "v", "hops": 1.5}])):
        with pytest.raises(forms.FormError, match="Job batch is invalid"):
            forms.job_batch(bad)
