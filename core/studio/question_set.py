"""Question sets for evaluation: JSONL files, one question per line, over the user's own collections.

Each line is a JSON object:
  question    (required) the question as a user would ask it
  sources     collection names a good run searches ("web" for web search); [] = none (a direct answer)
  facts       strings the answer should contain (spaces and case are ignored)
  answerable  false when the collections cannot answer it and the right run declines (default true)
  id, category, lang   optional; an id is made from the line number, a category from the sources
  kind, provenance     optional, written by core.studio.question_gen: the kind of question (single,
                       two_chunks, cross_collection, unanswerable, small_talk) and where it came from
                       ([{"collection", "file", "chunk_id"}])
The built-in set over the sample corpora is one such file: ``core/evalsets/builtin.jsonl``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

BUILTIN = Path(__file__).resolve().parent.parent / "evalsets" / "builtin.jsonl"
MAX_QUESTIONS = 2000
MAX_BYTES = 2_000_000


class QuestionSetError(ValueError):
    """The file is not a usable question set; the message names the line and what is wrong."""


def _strings(value, field: str, where: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise QuestionSetError(f"{where}: {field!r} must be a list of strings")
    return [v.strip() for v in value if v.strip()]


def _item(data, n: int, where: str) -> dict:
    if not isinstance(data, dict):
        raise QuestionSetError(f"{where}: expected a JSON object, got {type(data).__name__}")
    question = data.get("question")
    if not isinstance(question, str) or not question.strip():
        raise QuestionSetError(f"{where}: 'question' is missing or empty")
    answerable = data.get("answerable", True)
    if not isinstance(answerable, bool):
        raise QuestionSetError(f"{where}: 'answerable' must be true or false")
    sources = list(dict.fromkeys(_strings(data.get("sources"), "sources", where)))
    category = data.get("category") or ("unanswerable" if not answerable else "+".join(sources) or "direct")
    item = {"id": str(data.get("id") or f"q{n:03d}"), "question": " ".join(question.split()), "sources": sources,
            "facts": _strings(data.get("facts"), "facts", where), "answerable": answerable,
            "category": str(category), "lang": str(data.get("lang") or "")}
    if data.get("kind"):
        item["kind"] = str(data["kind"])
    if data.get("provenance"):
        item["provenance"] = _provenance(data["provenance"], where)
    return item


def _provenance(value, where: str) -> list[dict]:
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise QuestionSetError(f"{where}: 'provenance' must be a list of objects")
    return [{key: str(v.get(key) or "") for key in ("collection", "file", "chunk_id")} for v in value]


def dump_question_set(items: list[dict]) -> str:
    """The JSONL text of a set (what parse_question_set reads back)."""
    keys = ("id", "question", "sources", "facts", "answerable", "category", "lang", "kind", "provenance")
    return "".join(json.dumps({k: item[k] for k in keys if k in item}, ensure_ascii=False) + "\n" for item in items)


def parse_question_set(text: str, name: str = "questions") -> list[dict]:
    """Parse and check a JSONL question set; blank lines and lines starting with # are skipped."""
    if len(text.encode("utf-8")) > MAX_BYTES:
        raise QuestionSetError(f"{name}: larger than {MAX_BYTES // 1_000_000} MB; split it into smaller sets")
    items: list[dict] = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        where = f"{name} line {n}"
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            raise QuestionSetError(f"{where}: not valid JSON ({exc.msg}); each line must be one JSON object") from None
        except RecursionError:  # "[[[[..." 100,000 deep: the parser's recursion, not a crash of the page
            raise QuestionSetError(f"{where}: nested too deeply to be a question; each line must be one JSON object "
                                   "with a \"question\"") from None
        items.append(_item(data, n, where))
    if not items:
        raise QuestionSetError(f"{name}: no questions found (one JSON object per line, each with a \"question\")")
    if len(items) > MAX_QUESTIONS:
        raise QuestionSetError(f"{name}: {len(items)} questions; at most {MAX_QUESTIONS} per set")
    seen: set[str] = set()
    for item in items:
        if item["id"] in seen:
            raise QuestionSetError(f"{name}: the id {item['id']!r} is used twice")
        seen.add(item["id"])
    return items


def load_question_set(path: Path | str = BUILTIN) -> list[dict]:
    """Read and check the set in ``path``; never more than MAX_BYTES + 1 bytes are read (``/dev/zero`` ends)."""
    path = Path(path)
    try:
        with path.open("rb") as fh:
            data = fh.read(MAX_BYTES + 1)
        if len(data) > MAX_BYTES:  # before decoding: an endless file is refused at the limit, not at MemoryError
            raise QuestionSetError(f"{path.name}: larger than {MAX_BYTES // 1_000_000} MB; split it into smaller sets")
        text = data.decode("utf-8-sig")
    except OSError as exc:
        raise QuestionSetError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    except UnicodeDecodeError:
        raise QuestionSetError(f"{path.name}: not UTF-8 text; save it as UTF-8 and try again") from None
    return parse_question_set(text, path.name)


def count_problem(count: int, settings) -> str | None:
    """Why a set of ``count`` questions may not be written (RAG_MAX_SET_QUESTIONS), or None; 0 means no bound."""
    limit = int(getattr(settings, "max_set_questions", 0) or 0)
    if limit > 0 and count > limit:
        return (f"refused: {count:,} questions would pass the limit of {limit:,} questions per set "
                "(RAG_MAX_SET_QUESTIONS); ask for fewer")
    return None


def runs_problem(questions: int, patterns: int, settings) -> str | None:
    """Why ``questions`` x ``patterns`` runs may not start as one evaluation or advice (RAG_MAX_SET_RUNS), or None."""
    limit, runs = int(getattr(settings, "max_set_runs", 0) or 0), questions * patterns
    if limit > 0 and runs > limit:
        return (f"refused: {questions:,} questions x {patterns:,} patterns = {runs:,} runs would pass the limit of "
                f"{limit:,} runs per evaluation or advice (RAG_MAX_SET_RUNS); choose fewer questions or patterns")
    return None


def refuse_runs(questions: int, patterns: int, settings) -> None:
    """Raise QuestionSetError with runs_problem's line when the runs are past the limit."""
    problem = runs_problem(questions, patterns, settings)
    if problem:
        raise QuestionSetError(problem)


def unknown_sources(items: list[dict], known: list[str]) -> list[str]:
    """Source names the set expects that are not collections here (their route checks will fail)."""
    names = set(known) | {"web"}
    return sorted({s for item in items for s in item["sources"] if s not in names})


def spread(items: list[dict], limit: int | None) -> list[dict]:
    """At most ``limit`` items taken in turn from each category (in file order), so a short run
    still covers every kind of question; ``None`` or 0 keeps them all."""
    if not limit:
        return list(items)
    queues: dict[str, list[dict]] = {}
    for item in items:
        queues.setdefault(item["category"], []).append(item)
    picked: list[dict] = []
    while len(picked) < limit and any(queues.values()):
        for queue in queues.values():
            if queue and len(picked) < limit:
                picked.append(queue.pop(0))
    return picked


# ---------------------------------------------------------------- saved sets (data dir, or the shared database)


def set_file_name(name: str) -> str:
    """A safe file name for a set the user named: letters, digits, dot, dash; ends in .jsonl."""
    stem = re.sub(r"[^\w.-]+", "-", name.strip()).strip(".-")[:60].removesuffix(".jsonl") or "questions"
    return f"{stem}.jsonl"


def save_question_set(settings, name: str, items: list[dict], replace: bool = False) -> str:
    """Save a set under ``<data dir>/question_sets/`` (or in the shared database); returns its file name.

    A name already taken gets the next free ``-2``, ``-3``... (another visitor's "my-questions" is never
    replaced without a word); ``replace=True`` writes over it, except in read-only mode, where nobody's set is.
    """
    import os

    from core.store import saved_records
    from core.store.files import private_folder, write_private

    file = set_file_name(name)
    text = dump_question_set(items)
    parse_question_set(text, file)  # what is saved can be read back: an edit that broke a line is refused here
    replace = replace and not getattr(settings, "read_only", False)
    if saved_records.in_database(settings):
        taken = set(saved_question_sets(settings))
        file = file if replace else _free_name(file, lambda candidate: candidate not in taken)
        saved_records.save(settings, "question_set", file, {"jsonl": text})
        return file
    folder = private_folder(settings.data_path, "question_sets")

    def claim(candidate: str) -> bool:  # O_EXCL: of two visitors saving one name at once, one gets the next name
        try:
            os.close(os.open(folder / candidate, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
        except FileExistsError:
            return False
        return True

    file = file if replace else _free_name(file, claim)
    write_private(folder / file, text)
    return file


def _free_name(file: str, free) -> str:
    """``file``, or ``stem-2.jsonl``, ``stem-3.jsonl``... the first that ``free`` accepts."""
    stem = file.removesuffix(".jsonl")
    candidates = (file if n == 1 else f"{stem}-{n}.jsonl" for n in range(1, 10_000))
    return next(candidate for candidate in candidates if free(candidate))


def saved_question_sets(settings) -> list[str]:
    """The file names of the saved sets, sorted."""
    from core.store import saved_records

    if saved_records.in_database(settings):
        return sorted(name for name, _record in saved_records.listed(settings, "question_set"))
    folder = settings.data_path / "question_sets"
    return sorted(p.name for p in folder.glob("*.jsonl")) if folder.is_dir() else []


def load_saved_question_set(settings, file: str) -> list[dict]:
    from core.store import saved_records

    if file != set_file_name(file):
        raise QuestionSetError(f"{file}: not a saved set name")
    if saved_records.in_database(settings):
        record = saved_records.load(settings, "question_set", file)
        if record is None:
            raise QuestionSetError(f"no saved set {file!r}")
        return parse_question_set(record["jsonl"], file)
    return load_question_set(settings.data_path / "question_sets" / file)
