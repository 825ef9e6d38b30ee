"""The two values the dashboard derives from ``public_url`` (spec §5): one home, in WebSettings."""

from __future__ import annotations

import pytest

from hq_apps.settings import WebSettings


def _settings(public_url: str) -> WebSettings:
    return WebSettings(public_url, "cid", "c-secret", b"s" * 32, "org", "team")


@pytest.mark.parametrize(
    ("public_url", "secure"),
    [
        ("https://hq.example", True),
        ("HTTPS://hq.example/", True),
        ("Https://hq.example", True),
        ("http://hq.example", False),
        ("http://https.example", False),
    ],
)
def test_secure_cookies_follow_the_scheme(public_url: str, secure: bool) -> None:
    assert _settings(public_url).secure_cookies is secure


@pytest.mark.parametrize("public_url", ["https://hq.example", "https://hq.example/"])
def test_oauth_redirect_url(public_url: str) -> None:
    assert _settings(public_url).oauth_redirect_url == "https://hq.example/auth/github/callback"
