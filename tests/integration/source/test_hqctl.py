"""``hqctl`` against a real tracker (``create_app`` + MemoryStore under uvicorn), spec §4.2."""

from __future__ import annotations

import io
import json
import os
import sys
from collections.abc import Iterator

import httpx
import pytest
import zstandard

from hq_adapters.admin_client import AdminClient, ApiError, ClientError
from hq_adapters.memory import MemoryStore
from hq_apps.cli.hqctl import run
from hq_domain.clock import SystemClock
from hq_domain.ids import default_job_id
from tests.integration.client.harness import Admin, LiveTracker


@pytest.fixture(scope="module")
def tracker() -> Iterator[LiveTracker]:
    async def make_store():
        return MemoryStore(SystemClock())

    live = LiveTracker(make_store).start()
    yield live
    live.stop()


@pytest.fixture(scope="module")
def admin(tracker: LiveTracker) -> Iterator[Admin]:
    a = Admin(tracker)
    yield a
    a.close()


@pytest.fixture
def conn(tracker: LiveTracker, tmp_path) -> list[str]:
    token = tmp_path / "token"
    token.write_text(tracker.token + "\n")
    os.chmod(token, 0o600)
    return ["--url", tracker.url, "--allow-http", "--machine-token-file", str(token)]


def stdin_bytes(monkeypatch, data: bytes) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))


def test_enqueue_values_external_id(admin, conn, monkeypatch, capsys) -> None:
    admin.put_project("ext", identity_mode="external_id")
    stdin_bytes(monkeypatch, b"https://example.org/\r\n\n   \nhttps://a/ b\nhttps://example.org/\n")
    assert (
        run(["enqueue", "-project-id", "ext", *conn, "--batch-size", "2", "--progress-every", "1"])
        == 0
    )
    out, err = capsys.readouterr()
    assert json.loads(out) == {
        "project_id": "ext",
        "identity_mode": "external_id",
        "submitted": 3,
        "inserted": 2,
        "batches": 2,
    }
    assert out.startswith('{"project_id":"ext","identity_mode":"external_id",')
    assert err == "batches=1 submitted=2 inserted=2\nbatches=2 submitted=3 inserted=2\n"
    jobs = admin.client.get("/api/v1/admin/projects/ext/jobs").json()["jobs"]
    assert [j["id"] for j in jobs] == [
        "j1_92f50438a02ab171b6735678275a2f9db233d4c88e301a0243886c2679ce7070",
        default_job_id("seed", "https://a/ b"),
    ]


def test_enqueue_jsonl_and_type(admin, conn, monkeypatch, capsys, tmp_path) -> None:
    admin.put_project("uv", identity_mode="unique_value")
    src = tmp_path / "in.jsonl"
    src.write_bytes(b'{"value":"a","random_key":-5,"attr":{"k":1}}\n{"value":"b","type":"asset"}\n')
    assert (
        run(["enqueue", "--project-id", "uv", *conn, "--input", str(src), "--format", "jsonl"]) == 0
    )
    assert json.loads(capsys.readouterr().out)["inserted"] == 2
    job = admin.job(
        "uv", admin.client.get("/api/v1/admin/projects/uv/jobs").json()["jobs"][0]["job_id"]
    )
    assert job["random_key"] == -5 and job["attr"] == {"k": 1}
    src.write_bytes(b'{"value":"c","id":"x"}\n')
    assert (
        run(["enqueue", "--project-id", "uv", *conn, "--input", str(src), "--format", "jsonl"]) == 1
    )
    assert capsys.readouterr().err == (
        "enqueue: line 1: project identity mode unique_value rejects job id\n"
    )
    stdin_bytes(monkeypatch, b"v1\n")
    assert run(["enqueue", "--project-id", "uv", *conn, "--type", "asset"]) == 0
    assert json.loads(capsys.readouterr().out)["inserted"] == 1


def test_enqueue_local_validation_errors(admin, conn, monkeypatch, capsys) -> None:
    admin.put_project("none1", identity_mode="none")
    stdin_bytes(monkeypatch, b"ok\n\n" + b"x" * 8193 + b"\n")
    assert run(["enqueue", "--project-id", "none1", *conn]) == 1
    assert capsys.readouterr().err == (
        "enqueue: line 3: value must be valid UTF-8 and at most 8192 bytes\n"
    )
    stdin_bytes(monkeypatch, b"\n \n")
    assert run(["enqueue", "--project-id", "none1", *conn]) == 1
    assert capsys.readouterr().err == "enqueue: input contains no jobs\n"
    stdin_bytes(monkeypatch, b"a\nb\nc\n")
    assert run(["enqueue", "--project-id", "none1", *conn, "--max-jobs", "2"]) == 1
    assert capsys.readouterr().err == "enqueue: input exceeds max jobs\n"
    stdin_bytes(monkeypatch, b'{"value":"a","nope":1}\n')
    assert run(["enqueue", "--project-id", "none1", *conn, "--format", "jsonl"]) == 1
    assert capsys.readouterr().err == 'enqueue: line 1: unknown field "nope"\n'
    assert admin.project("none1")["job_counts"]["todo"] == 0
    assert run(["enqueue", "--project-id", "missing", *conn]) == 1
    assert capsys.readouterr().err.startswith("enqueue: get project: HTTP 404 not_found:")


def test_enqueue_batch_failure_midway(admin, conn, monkeypatch, capsys) -> None:
    admin.put_project("mid", identity_mode="external_id")
    admin.client.post(
        "/api/v1/admin/projects/mid/jobs", json={"jobs": [{"id": "clash", "value": "first"}]}
    )
    lines = [json.dumps({"value": f"v{i}"}) for i in range(25)]
    lines[21] = json.dumps({"id": "clash", "value": "second"})
    stdin_bytes(monkeypatch, ("\n".join(lines) + "\n").encode())
    assert (
        run(
            [
                "enqueue",
                "--project-id",
                "mid",
                *conn,
                "--format",
                "jsonl",
                "--batch-size",
                "10",
                "--progress-every",
                "0",
            ]
        )
        == 1
    )
    out, err = capsys.readouterr()
    assert out == ""
    assert err == (
        "enqueue: batch 3 failed after 20 submitted jobs: HTTP 409 identity_conflict: "
        "job identity already exists with a different spec\n"
    )
    assert admin.project("mid")["job_counts"]["todo"] == 21


def test_token_file_permissions(tracker, tmp_path, capsys) -> None:
    token = tmp_path / "t"
    token.write_text(tracker.token)
    os.chmod(token, 0o640)
    assert (
        run(
            [
                "enqueue",
                "--project-id",
                "p",
                "--url",
                tracker.url,
                "--allow-http",
                "--machine-token-file",
                str(token),
            ]
        )
        == 1
    )
    assert "permissions must not allow group or other access; run: chmod 600" in capsys.readouterr().err


def test_url_rules(tracker, conn, capsys, monkeypatch) -> None:
    token_args = conn[-2:]
    assert run(["whoami", "--url", tracker.url, *token_args]) == 1
    assert "https" in capsys.readouterr().err
    for bad in ("https://u:p@h", "https://h/path", "https://h/?q=1", "https://h/#f"):
        assert run(["whoami", "--url", bad, *token_args]) == 1, bad
    capsys.readouterr()
    monkeypatch.setenv("HQ_URL", tracker.url)
    monkeypatch.setenv("HQ_MACHINE_TOKEN_FILE", token_args[1])
    assert run(["whoami", "--allow-http", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"user_id": "sdk-admin"}
    assert run(["whoami", "--allow-http", "--timeout", "0s"]) == 1
    assert capsys.readouterr().err == "whoami: --timeout must be positive\n"


def make_source(lines: list[str]) -> bytes:
    return zstandard.ZstdCompressor().compress(("\n".join(lines) + "\n").encode())


def test_enqueue_source_file_and_stdin(admin, conn, monkeypatch, capsys, tmp_path) -> None:
    admin.put_project("src", identity_mode="unique_value")
    data = make_source([json.dumps({"value": f"s{i}"}) for i in range(2500)])
    path = tmp_path / "s.zst"
    path.write_bytes(data)
    assert run(["enqueue-source", "--project-id", "src", *conn, "--input", str(path)]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got == {
        "project_id": "src",
        "jobs": 2500,
        "inserted": 2500,
        "uncompressed_bytes": got["uncompressed_bytes"],
    }
    assert got["uncompressed_bytes"] == len(
        zstandard.ZstdDecompressor().decompressobj().decompress(data)
    )
    stdin_bytes(monkeypatch, data)
    assert run(["enqueue-source", "--project-id", "src", *conn, "--input", "-"]) == 0
    assert json.loads(capsys.readouterr().out)["inserted"] == 0


def test_source_route_errors(admin, tracker) -> None:
    admin.put_project("src2", identity_mode="none")
    url = "/api/v1/admin/projects/src2/source"
    bad = make_source(['{"value":"a"}'] * 1500 + ['{"id":"x"}'])
    r = admin.client.post(url, content=bad, headers={"Content-Type": "application/zstd"})
    assert r.status_code == 400
    assert r.json()["error"]["code"] == "invalid_job"
    assert (
        r.json()["error"]["message"]
        == 'source format: line 1501: required field "value" is missing'
    )
    assert admin.project("src2")["job_counts"]["todo"] == 1000
    r = admin.client.post(url, content=bad, headers={"Content-Type": "application/json"})
    assert r.status_code == 415
    assert r.json()["error"]["message"] == "source body must be application/zstd"
    assert "no-store" in r.headers["cache-control"]
    r = httpx.post(tracker.url + url, content=bad, headers={"Content-Type": "application/zstd"})
    assert r.status_code == 401  # auth is checked before the content type
    empty = zstandard.ZstdCompressor().compress(b"\n\n")
    r = admin.client.post(
        "/api/v1/admin/projects/unknown/source",
        content=empty,
        headers={"Content-Type": "application/octet-stream"},
    )
    assert r.status_code == 200
    assert r.json() == {"project_id": "unknown", "jobs": 0, "inserted": 0, "uncompressed_bytes": 2}
    r = admin.client.post(
        "/api/v1/admin/projects/unknown/source",
        content=make_source(['{"value":"a"}']),
        headers={"Content-Type": "application/zstd"},
    )
    assert (r.status_code, r.json()["error"]["code"]) == (404, "not_found")
    r = admin.client.post(url, content=b"garbage", headers={"Content-Type": "application/zstd"})
    assert r.status_code == 400 and r.json()["error"]["message"].startswith("source format: zstd:")


def test_enqueue_source_error_reporting(admin, conn, capsys, tmp_path) -> None:
    admin.put_project("arch", status="archived", identity_mode="none")
    path = tmp_path / "a.zst"
    path.write_bytes(make_source(['{"value":"a"}']))
    assert run(["enqueue-source", "--project-id", "arch", *conn, "--input", str(path)]) == 1
    assert capsys.readouterr().err == (
        "enqueue-source: HTTP 409 project_not_active: archived project cannot accept jobs\n"
    )


def test_admin_commands(admin, conn, capsys) -> None:
    assert (
        run(
            [
                "projects",
                "put",
                "--project-id",
                "adm",
                *conn,
                "--identity-mode",
                "none",
                "--dispatch-qps",
                "2.5",
                "--client-versions",
                "b,a",
                "--json",
            ]
        )
        == 0
    )
    doc = json.loads(capsys.readouterr().out)
    assert doc["client_versions"] == ["a", "b"] and doc["dispatch_qps"] == 2.5
    admin.enqueue("adm", 5)
    assert run(["projects", "list", *conn]) == 0
    table = capsys.readouterr().out
    assert table.splitlines()[0].split()[:3] == ["ID", "STATUS", "IDENTITY"]
    assert any(line.startswith("adm ") for line in table.splitlines())
    assert run(["projects", "get", "--project-id", "adm", *conn]) == 0
    shown = capsys.readouterr().out
    assert "todo=5" in shown
    # issue 14: percent done, rate and ETA from the progress route (no history yet)
    assert "percent_done  0.0%" in shown and "rate          unknown" in shown
    assert "eta           unknown" in shown and "resets        unknown" in shown
    assert run(["jobs", "list", "--project-id", "adm", *conn, "--limit", "2", "--json"]) == 0
    page = json.loads(capsys.readouterr().out)
    assert len(page["jobs"]) == 2 and page["next_after_job_id"] == page["jobs"][1]["job_id"]
    assert (
        run(["jobs", "list", "--project-id", "adm", *conn, "--limit", "2", "--all", "--json"]) == 0
    )
    jobs = json.loads(capsys.readouterr().out)["jobs"]
    assert len(jobs) == 5
    first = jobs[0]["job_id"]
    assert run(["jobs", "get", "--project-id", "adm", "--job-id", str(first), *conn]) == 0
    assert "https://example.com/0" in capsys.readouterr().out
    assert run(["jobs", "requeue", "--project-id", "adm", "--job-id", str(first), *conn]) == 1
    assert capsys.readouterr().err == (
        "jobs requeue: HTTP 400 invalid_request: job is not failed or reset_exhausted\n"
    )
    assert run(["jobs", "delete", "--project-id", "adm", "--job-id", str(first), *conn]) == 0
    assert admin.project("adm")["job_counts"]["todo"] == 4
    assert (
        run(["users", "put", "--user-id", "w1", "--status", "active", "--roles", "worker", *conn])
        == 0
    )
    assert run(["tokens", "rotate", "--user-id", "w1", *conn, "--json"]) == 0
    capsys.readouterr()
    assert run(["tokens", "get", "--user-id", "w1", *conn]) == 0
    assert capsys.readouterr().out.startswith("hq_")
    assert run(["users", "list", *conn]) == 0
    assert "w1" in capsys.readouterr().out
    assert run(["tokens", "revoke", "--user-id", "w1", *conn]) == 0
    assert run(["tokens", "get", "--user-id", "w1", *conn]) == 1
    assert "machine token not found" in capsys.readouterr().err
    assert run(["users", "delete", "--user-id", "w1", *conn]) == 0
    assert run(["projects", "delete", "--project-id", "adm", "--yes", *conn]) == 0
    assert run(["projects", "get", "--project-id", "adm", *conn]) == 1


def _client_with(handler) -> AdminClient:
    return AdminClient("https://hq.test", "tok", transport=httpx.MockTransport(handler))


@pytest.mark.parametrize(
    ("headers", "body", "needle"),
    [
        ({"content-type": "application/json"}, b'{"user_id":"a"}', "no-store"),
        (
            {"cache-control": "no-store", "content-type": "text/plain"},
            b'{"user_id":"a"}',
            "application/json",
        ),
        (
            {"cache-control": "No-Store", "content-type": "application/json"},
            b'{"user_id":"a","x":1}',
            "invalid response",
        ),
        (
            {"cache-control": "no-store", "content-type": "application/json"},
            b'{"user_id":"a"} {}',
            "invalid response",
        ),
        (
            {"cache-control": "no-store", "content-type": "application/json"},
            b"{}",
            "invalid response",
        ),
        (
            {"cache-control": "no-store", "content-type": "application/json"},
            b" " * (8 << 20) + b"{}",
            "exceeds",
        ),
    ],
)
def test_client_rejects_bad_responses(headers, body, needle) -> None:
    client = _client_with(lambda req: httpx.Response(200, headers=headers, content=body))
    with pytest.raises(ClientError, match=needle):
        client.whoami()


def test_client_error_envelope_and_good_response() -> None:
    env = b'{"error":{"code":"not_found","message":"project not found","retryable":false,"retry_after_ms":0,"details":{}}}\n'
    h = {"cache-control": "no-store, no-cache, max-age=0", "content-type": "application/json"}
    client = _client_with(lambda req: httpx.Response(404, headers=h, content=env))
    with pytest.raises(ApiError) as info:
        client.get_project("p")
    assert (info.value.status, info.value.code) == (404, "not_found")

    def ok(req: httpx.Request) -> httpx.Response:
        assert req.headers["authorization"] == "Bearer tok"
        assert req.headers["accept"] == "application/json"
        assert "x-savewebhq-client-version" not in req.headers
        return httpx.Response(
            200,
            headers={**h, "content-type": "application/json; charset=utf-8"},
            content=b'{"user_id":"me"}\n',
        )

    assert _client_with(ok).whoami().user_id == "me"


def test_source_route_project_id_rules(admin) -> None:
    empty = zstandard.ZstdCompressor().compress(b"")
    one = make_source(['{"value":"a"}'])
    h = {"Content-Type": "application/zstd"}
    r = admin.client.post("/api/v1/admin/projects/bad%20id/source", content=empty, headers=h)
    assert (r.status_code, r.json()["jobs"]) == (200, 0)
    r = admin.client.post("/api/v1/admin/projects/bad%20id/source", content=one, headers=h)
    assert r.status_code == 400
    assert r.json()["error"]["message"] == "invalid project or job batch"
