import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

# No real key may leak into a test run, and no test may reach a provider by accident.
for _name in ("OPENAI_API_KEY", "TAVILY_API_KEY", "RAG_PROVIDER", "RAG_MODEL"):
    os.environ.pop(_name, None)
# The suite runs the real embedded model as the fast Gemma 3 270M (subprocesses inherit this); the
# tests of the default, Qwen2.5-Coder 1.5B (about ten times slower), name it explicitly.
os.environ["RAG_EMBEDDED_MODEL"] = "gemma-3-270m"
# Every finished run's answer is claim-checked (core.patterns.answer_review). By rules only here, so a scripted
# model's replies and call counts stay the pattern's own; the tests of the model check ask for it by name.
os.environ["RAG_VERIFY_CLAIMS"] = "rules"
# Indexing a collection starts Graph RAG's extraction with the configured grader (the real embedded model here);
# off, so an upload in a page test runs no model. The tests of builds at ingest switch it on.
os.environ["RAG_GRAPH_AT_INGEST"] = "0"

# The embedded e5 model embeds each text once (its vectors do not depend on the batch): tests/support/embedding_cache.py.
from support import embedding_cache  # noqa: E402

embedding_cache.install()


@pytest.fixture
def settings(tmp_path):
    from core.config import load_settings

    return load_settings(data_dir=str(tmp_path / "data"), provider="embedded")


@pytest.fixture(scope="session")
def sample_data_dir(tmp_path_factory):
    """A data directory with the sample corpora indexed once for the whole session (real e5, real Chroma)."""
    from core.config import load_settings
    from core.knowledge.base import KnowledgeBase

    path = tmp_path_factory.mktemp("sample-data")
    KnowledgeBase(load_settings(data_dir=str(path))).ensure_samples()
    return path


@pytest.fixture
def sample_settings(sample_data_dir):
    from core.config import load_settings

    return load_settings(data_dir=str(sample_data_dir), provider="embedded")


def pytest_addoption(parser):
    parser.addoption("--tier", choices=("all", "light", "heavy"), default="all",
                     help="heavy: the tests that start a real model, a server or a browser (they share ports, "
                          "models and CPU, so they run one at a time); light: the rest (safe on every core)")


def pytest_configure(config):
    config.addinivalue_line("markers", "blocked_types_expected: the test loads a checkpoint with a forbidden type")


SERVER_FIXTURES = {"postgres_cluster", "database_url", "chroma_server"}  # each starts a real server
HEAVY = ("real_model", "server", "browser")


def pytest_collection_modifyitems(config, items):
    """Tiers by what a test starts (bash scripts/test.sh runs the light tier on every core, then the heavy one
    alone): browser tests by their file, team back ends by the fixtures that start them; real_model is marked
    on the tests themselves. ``--tier`` keeps one tier and composes with ``-m``."""
    for item in items:
        if item.path.name.startswith("test_browser"):
            item.add_marker("browser")
        if item.get_closest_marker("teams") or SERVER_FIXTURES & set(item.fixturenames):
            item.add_marker("server")
    tier = config.getoption("--tier")
    if tier == "all":
        return
    keep, drop = [], []
    for item in items:
        heavy = any(item.get_closest_marker(name) for name in HEAVY)
        (keep if heavy == (tier == "heavy") else drop).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


# ---------------------------------------------------------------- team back ends (issue #14): real servers


@pytest.fixture(scope="session")
def postgres_cluster():
    """A throw-away PostgreSQL cluster for the session; a missing PostgreSQL fails the test (never skips it)."""
    from support.shared_servers import PostgresCluster

    try:
        cluster = PostgresCluster()
    except RuntimeError as exc:
        pytest.fail(str(exc))
    yield cluster
    cluster.stop()


@pytest.fixture(scope="session")
def chroma_server():
    """A throw-away `chroma run` server for the session."""
    from support.shared_servers import ChromaServer

    try:
        server = ChromaServer()
    except RuntimeError as exc:
        pytest.fail(str(exc))
    yield server
    server.stop()


@pytest.fixture
def database_url(postgres_cluster):
    """A fresh database on the session's cluster: each test starts empty."""
    return postgres_cluster.new_database()


@pytest.fixture
def chroma_url(chroma_server):
    chroma_server.clear()
    return chroma_server.url


@pytest.fixture
def team_settings(tmp_path, database_url, chroma_url):
    """Settings of a replica in a team deployment: Postgres + Chroma server, a data directory of its own."""
    from core.config import load_settings

    return load_settings(data_dir=str(tmp_path / "replica"), provider="embedded", database_url=database_url,
                         chroma_url=chroma_url)


@pytest.fixture(autouse=True)
def checkpoints_load_whole(request):
    """Every checkpoint a test reads back loads under the allow-list (core.store.checkpoint): no type is blocked."""
    from langgraph.checkpoint.serde.event_hooks import register_serde_event_listener

    blocked = []
    unregister = register_serde_event_listener(blocked.append)
    yield
    unregister()
    if not request.node.get_closest_marker("blocked_types_expected"):
        assert not blocked, f"checkpoint types outside the allow-list (add them to core.store.checkpoint): {blocked}"
