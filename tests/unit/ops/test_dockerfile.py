"""A small, documented Dockerfile lint (hadolint is not packaged for this machine).

Rules: multi-stage; every base image pinned by a tag that is not ``latest`` (ARG defaults
resolved); the runtime stage runs as the non-root 65532; OCI version/revision labels come from
the VERSION/COMMIT build args; uv installs the locked, non-dev dependencies; the entrypoint
script exists; the build context (.dockerignore) keeps what the build copies and drops secrets.
"""

from __future__ import annotations

import fnmatch
import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
TEXT = (ROOT / "Dockerfile").read_text()


def instructions() -> list[tuple[str, str]]:
    """(KEYWORD, arguments) with line continuations joined and comments dropped."""
    joined = re.sub(r"\\\n", " ", TEXT)
    out = []
    for line in joined.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            keyword, _, rest = line.partition(" ")
            out.append((keyword.upper(), rest.strip()))
    return out


def stages() -> list[list[tuple[str, str]]]:
    result: list[list[tuple[str, str]]] = []
    for keyword, rest in instructions():
        if keyword == "FROM":
            result.append([])
        if result:
            result[-1].append((keyword, rest))
    return result


def global_args() -> dict[str, str]:
    args = {}
    for keyword, rest in instructions():
        if keyword == "FROM":
            break
        if keyword == "ARG" and "=" in rest:
            name, _, value = rest.partition("=")
            args[name] = value
    return args


def resolve(image: str, args: dict[str, str]) -> str:
    return re.sub(r"\$\{(\w+)\}", lambda m: args[m.group(1)], image)


def test_multi_stage_with_named_stages() -> None:
    froms = [rest for keyword, rest in instructions() if keyword == "FROM"]
    assert len(froms) >= 2
    assert all(re.search(r"\sAS\s+\w", f, re.IGNORECASE) for f in froms)


def test_base_images_are_pinned_and_not_latest() -> None:
    args = global_args()
    stage_names = set()
    for keyword, rest in instructions():
        if keyword != "FROM":
            continue
        image, _, name = resolve(rest, args).partition(" AS ")
        image = image.strip()
        if image not in stage_names:
            assert ":" in image.rsplit("/", 1)[-1], f"{image} has no tag"
            assert not image.endswith(":latest"), image
        stage_names.add(name.strip())


def test_runtime_stage_runs_as_non_root_65532() -> None:
    runtime = stages()[-1]
    users = [rest for keyword, rest in runtime if keyword == "USER"]
    assert users and users[-1] == "65532:65532"
    assert any("--uid 65532" in rest and "saveweb" in rest for k, rest in runtime if k == "RUN")
    assert any("--gid 65532 saveweb" in rest for k, rest in runtime if k == "RUN")


def test_labels_carry_version_and_revision_from_build_args() -> None:
    runtime = stages()[-1]
    args = {rest.partition("=")[0] for keyword, rest in runtime if keyword == "ARG"}
    assert {"VERSION", "COMMIT"} <= args
    labels = " ".join(rest for keyword, rest in runtime if keyword == "LABEL")
    assert 'org.opencontainers.image.revision="${COMMIT}"' in labels
    assert 'org.opencontainers.image.version="${VERSION}"' in labels


def test_runtime_contract() -> None:
    runtime = dict((k, r) for k, r in stages()[-1] if k in ("EXPOSE", "ENTRYPOINT", "CMD"))
    assert runtime == {
        "EXPOSE": "8080",
        "ENTRYPOINT": '["docker-entrypoint.sh"]',
        "CMD": '["serve"]',
    }
    copies = [rest for keyword, rest in stages()[-1] if keyword == "COPY"]
    assert any("docker/entrypoint.sh /usr/local/bin/docker-entrypoint.sh" in c for c in copies)
    assert (ROOT / "docker" / "entrypoint.sh").is_file()


def test_uv_installs_locked_production_dependencies_into_app_venv() -> None:
    build = " ".join(
        rest for stage in stages()[:-1] for keyword, rest in stage if keyword in ("RUN", "ENV")
    )
    assert "uv sync --frozen --no-dev" in build
    assert "UV_PROJECT_ENVIRONMENT=/app/.venv" in build
    assert "/app/.venv/bin" in " ".join(rest for k, rest in stages()[-1] if k == "ENV")


def test_the_three_commands_are_console_scripts() -> None:
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert {"tracker", "hqctl", "source"} <= set(scripts)


def _ignored(path: str, patterns: list[str]) -> bool:
    ignored = False
    for pattern in patterns:
        negate = pattern.startswith("!")
        pat = pattern.lstrip("!").rstrip("/")
        parts = path.split("/")
        prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
        if any(
            fnmatch.fnmatch(p, pat) or fnmatch.fnmatch(p, pat.removeprefix("**/")) for p in prefixes
        ):
            ignored = not negate
    return ignored


def test_dockerignore_keeps_build_inputs_and_drops_secrets() -> None:
    patterns = [
        line.strip()
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    copied = [
        "pyproject.toml",
        "uv.lock",
        "README.md",
        "src/hq_apps/cli/ops.py",
        "docker/entrypoint.sh",
    ]
    for path in copied:
        assert not _ignored(path, patterns), path
    for path in (
        ".env",
        "secrets/github-client.secret",
        "data/postgres/PG_VERSION",
        ".git/HEAD",
        ".venv/bin/python",
    ):
        assert _ignored(path, patterns), path
