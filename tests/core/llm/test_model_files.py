"""Assembling a GGUF from part packages: once, streamed, sha256-checked, with clear messages.

The mechanics run on small part packages written into tmp_path (real files, real imports); the last
test checks the installed Qwen parts themselves.
"""

import hashlib
import sys

import pytest

from core.llm.model_files import QWEN_CODER_1_5B, ModelFileError, SplitGGUF, embedded_model

PARTS = [b"GGUF" + bytes(range(256)) * 40, b"second part " * 3000, b"last"]


@pytest.fixture
def split(tmp_path, monkeypatch):
    """Three part packages ``tmpmodel_partN/data/partNN.bin`` importable from tmp_path."""
    root = tmp_path / "site"
    for n, data in enumerate(PARTS, 1):
        pkg = root / f"tmpmodel_part{n}"
        (pkg / "data").mkdir(parents=True)
        (pkg / "__init__.py").write_text("")
        (pkg / "data" / f"part{n:02d}.bin").write_bytes(data)
    monkeypatch.syspath_prepend(str(root))
    whole = b"".join(PARTS)
    spec = SplitGGUF("tiny.gguf", len(whole), hashlib.sha256(whole).hexdigest(), "tmpmodel-part{n}",
                     "tmpmodel_part{n}", len(PARTS), "0.1")
    yield spec, root
    for n in range(1, len(PARTS) + 1):
        sys.modules.pop(f"tmpmodel_part{n}", None)


def test_parts_are_assembled_once_with_progress_and_a_hash_marker(split, tmp_path):
    spec, _ = split
    cache = tmp_path / "cache"
    seen = []
    path = spec.ensure(cache, lambda done, total: seen.append((done, total)))
    assert path.read_bytes() == b"".join(PARTS)
    assert seen[-1] == (spec.size, spec.size) and [d for d, _ in seen] == sorted(d for d, _ in seen)
    assert spec.ready(cache)
    stamp = path.stat().st_mtime_ns
    again = []
    assert spec.ensure(cache, lambda done, total: again.append(done)) == path
    assert again == [] and path.stat().st_mtime_ns == stamp  # intact: not assembled (nor hashed) again
    assert not list(cache.glob("*.partial"))


def test_a_changed_file_is_assembled_again(split, tmp_path):
    spec, _ = split
    cache = tmp_path / "cache"
    path = spec.ensure(cache)
    path.write_bytes(b"x" * spec.size)  # same size, other bytes: the marker no longer matches its mtime
    assert not spec.ready(cache)
    assert spec.ensure(cache).read_bytes() == b"".join(PARTS)


def test_a_missing_part_is_named_with_the_command_that_installs_it(split, tmp_path):
    spec, root = split
    (root / "tmpmodel_part2" / "data" / "part02.bin").unlink()
    with pytest.raises(ModelFileError, match=r"part 2 of 3 is installed but .* is missing: "
                                             r"pip install --force-reinstall tmpmodel-part2==0.1"):
        spec.ensure(tmp_path / "cache")
    sys.modules.pop("tmpmodel_part3", None)
    missing = SplitGGUF(**{**spec.__dict__, "module": "nomodel_part{n}", "package": "nomodel-part{n}"})
    with pytest.raises(ModelFileError, match=r"part 1 of 3 of tiny.gguf is missing: pip install nomodel-part1==0.1"):
        missing.ensure(tmp_path / "cache")
    assert not (tmp_path / "cache" / "tiny.gguf").exists()


def test_a_hash_mismatch_is_refused_and_nothing_is_left_behind(split, tmp_path):
    spec, root = split
    (root / "tmpmodel_part3" / "data" / "part03.bin").write_bytes(b"LAST")  # same size, other bytes
    cache = tmp_path / "cache"
    with pytest.raises(ModelFileError, match=r"expected .* bytes and .*reinstall with pip install --force-reinstall"):
        spec.ensure(cache)
    assert not (cache / "tiny.gguf").exists() and not list(cache.glob(".*partial"))


def test_unknown_embedded_model_lists_the_choices():
    assert embedded_model("gemma-3-270m-q4_k_m").name == "gemma-3-270m"  # the older name still works
    with pytest.raises(ModelFileError, match="choose one of qwen2.5-coder-1.5b-instruct, gemma-3-270m"):
        embedded_model("llama-70b")


def test_the_installed_qwen_parts_are_complete():
    paths = QWEN_CODER_1_5B.part_paths()
    assert len(paths) == 22 and [p.name for p in paths[:2]] == ["part01.bin", "part02.bin"]
    assert sum(p.stat().st_size for p in paths) == QWEN_CODER_1_5B.size == 1_117_320_768
