"""The ``tracker`` CLI without a database: flags, env, secret files, web settings, errors."""

from __future__ import annotations

import base64
import json
import os
import stat
from pathlib import Path

import pytest

from hq_apps.cli import common, tracker
from hq_domain.users import Role


def _secret(tmp_path: Path, name: str, text: str, mode: int = 0o600) -> str:
    path = tmp_path / name
    path.write_text(text)
    path.chmod(mode)
    return str(path)


def _last_error(capsys: pytest.CaptureFixture[str]) -> dict[str, str]:
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("{")]
    doc = json.loads(lines[-1])
    assert doc["level"] == "ERROR" and doc["msg"] == "tracker stopped"
    return doc


@pytest.mark.parametrize("argv", [[], ["nope"]])
def test_usage_exit_1(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert tracker.run(argv) == 1
    err = capsys.readouterr().err
    assert err.startswith(tracker.USAGE + "\n")
    assert '"msg":"tracker stopped"' in err


@pytest.mark.parametrize("argv", [["-h"], ["serve", "-h"], ["migrate", "--help"]])
def test_help_exits_0(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """D9: help is help (the reference exits 1 here)."""
    assert tracker.run(argv) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith("Usage: tracker") and captured.err == ""


def test_unknown_flag_is_an_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert tracker.run(["migrate", "--bogus", "1"]) == 1
    assert "bogus" in _last_error(capsys)["error"]


def test_serve_requires_a_database_url(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("HQ_DATABASE_URL", raising=False)
    assert tracker.run(["serve"]) == 1
    assert "database" in _last_error(capsys)["error"]


def test_partial_web_config_is_rejected(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HQ_DATABASE_URL", "postgresql://nowhere/db")
    monkeypatch.setenv("HQ_OAUTH_ADMIN_ORG", "saveweb")
    assert tracker.run(["serve", "-listen", "127.0.0.1:0"]) == 1
    assert "web administration requires" in _last_error(capsys)["error"]


def test_web_settings_all_or_nothing(tmp_path: Path) -> None:
    assert tracker.web_settings("", "", "", "", "", "") is None
    gh = _secret(tmp_path, "gh", "gh-secret\n")
    web_secret = base64.urlsafe_b64encode(os.urandom(32)).rstrip(b"=").decode()
    web = _secret(tmp_path, "web", web_secret + "\n")
    s = tracker.web_settings("https://hq.example/", "cid", gh, web, "org", "team")
    assert s is not None
    assert s.github_client_secret == "gh-secret" and len(s.web_session_secret) == 32
    assert s.oauth_redirect_url == "https://hq.example/auth/github/callback"
    with pytest.raises(common.CliError, match="GitHub client ID"):
        tracker.web_settings("https://hq.example", "", gh, web, "org", "team")
    short = _secret(
        tmp_path, "short", base64.urlsafe_b64encode(os.urandom(31)).rstrip(b"=").decode()
    )
    with pytest.raises(common.CliError, match="32 bytes"):
        tracker.web_settings("https://hq.example", "cid", gh, short, "org", "team")


@pytest.mark.parametrize("mode", [0o640, 0o604, 0o660, 0o644])
def test_secret_file_must_be_private(tmp_path: Path, mode: int) -> None:
    path = _secret(tmp_path, "s", "token", mode)
    with pytest.raises(common.CliError, match="group or other"):
        common.read_secret_file(path)


@pytest.mark.parametrize(
    ("text", "ok"),
    [("  tok \n", True), ("", False), (" \n", False), ("x" * 1024, True), ("x" * 1025, False)],
)
def test_secret_file_length(tmp_path: Path, text: str, ok: bool) -> None:
    path = _secret(tmp_path, "s", text, 0o400)
    if ok:
        assert common.read_secret_file(path) == text.strip()
    else:
        with pytest.raises(common.CliError, match="invalid secret"):
            common.read_secret_file(path)


@pytest.mark.parametrize(
    ("url", "ok"),
    [
        ("https://hq.example", True), ("http://localhost:8080/", True),
        ("ftp://hq.example", False), ("https://", False), ("https://hq.example/x", False),
        ("https://hq.example/?a=1", False), ("https://hq.example/#f", False),
    ],
)  # fmt: skip
def test_public_url_rules(url: str, ok: bool) -> None:
    if ok:
        assert common.validate_public_url(url) == url
    else:
        with pytest.raises(common.CliError):
            common.validate_public_url(url)


@pytest.mark.parametrize(
    ("text", "value"),
    [("", None), ("  ", None), ("2.5", 2.5), ("1e-300", 1e-300), ("1e300", 1e300),
     ("0", "err"), ("-1", "err"), ("NaN", "err"), ("Inf", "err"), ("x", "err")],
)  # fmt: skip
def test_qps_parsing(text: str, value: object) -> None:
    if value == "err":
        with pytest.raises(common.CliError):
            common.parse_qps(text, "--dispatch-qps")
    else:
        assert common.parse_qps(text, "--dispatch-qps") == value


def test_roles_parsing() -> None:
    assert tracker.parse_roles("worker") == [Role.WORKER]
    assert tracker.parse_roles(" admin , worker,admin") == [Role.ADMIN, Role.WORKER]
    with pytest.raises(common.CliError, match='unknown role "root"'):
        tracker.parse_roles("admin,root")
    with pytest.raises(common.CliError, match='unknown role ""'):
        tracker.parse_roles("admin,")


def test_listen_and_go_flags() -> None:
    assert common.parse_listen(":8080") == ("0.0.0.0", 8080)
    assert common.parse_listen("127.0.0.1:9") == ("127.0.0.1", 9)
    assert common.parse_listen("[::1]:80") == ("::1", 80)
    with pytest.raises(common.CliError):
        common.parse_listen("8080")
    assert common.go_style_flags(["serve", "-listen", ":1", "-database-url=x", "-h", "--", "-x"]) == [
        "serve", "--listen", ":1", "--database-url=x", "-h", "--", "-x",
    ]  # fmt: skip


def test_web_keygen(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "web.secret"
    assert tracker.run(["web-keygen", "-out", str(out)]) == 0
    text = out.read_text()
    assert text.endswith("\n") and len(text) == 44
    assert len(common.decode_web_secret(text.strip())) == 32
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    assert tracker.run(["web-keygen", "--out", str(out)]) == 1
    assert out.read_text() == text
    assert tracker.run(["web-keygen"]) == 1
    _last_error(capsys)


def test_put_project_rejects_bad_qps_before_connecting(capsys: pytest.CaptureFixture[str]) -> None:
    code = tracker.run(
        [
            "put-project",
            "--database-url",
            "postgresql://127.0.0.1:1/x",
            "--project-id",
            "p",
            "--dispatch-qps",
            "NaN",
        ]
    )
    assert code == 1
    assert "dispatch-qps" in _last_error(capsys)["error"]


def test_serve_metrics_listen_flag_and_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """--metrics-listen / HQ_METRICS_LISTEN reach the settings; empty means no metrics."""
    seen: list[object] = []

    def fake_run(coro) -> None:  # type: ignore[no-untyped-def]
        coro.close()

    def fake_serve(settings, host, port):  # type: ignore[no-untyped-def]
        seen.append(settings.metrics_listen)

        async def nothing() -> None:
            return None

        return nothing()

    monkeypatch.setattr(tracker.wiring, "run", fake_run)
    monkeypatch.setattr(tracker.wiring, "serve", fake_serve)
    monkeypatch.setenv("HQ_DATABASE_URL", "postgresql://nowhere/db")
    assert tracker.run(["serve", "-listen", "127.0.0.1:0", "-metrics-listen", "127.0.0.1:9108"]) == 0
    monkeypatch.setenv("HQ_METRICS_LISTEN", "127.0.0.1:9200")
    assert tracker.run(["serve", "-listen", "127.0.0.1:0"]) == 0
    monkeypatch.delenv("HQ_METRICS_LISTEN")
    assert tracker.run(["serve", "-listen", "127.0.0.1:0"]) == 0
    assert seen == [("127.0.0.1", 9108), ("127.0.0.1", 9200), None]
    assert tracker.run(["serve", "-listen", "127.0.0.1:0", "-metrics-listen", "nope"]) == 1
