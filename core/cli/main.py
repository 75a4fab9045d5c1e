"""Command line: python -m core doctor | ingest | collections | search | ask | resume | steps | fork | threads
| prune | eval | bench | patterns | verify | grade | calibrate | migrate | questions | advise. Each group of
commands is a module of core.cli; this one only dispatches."""

from __future__ import annotations

import argparse
import sys

from core.cli import admin, advise, grading, knowledge, runs, studio
from core.config import PROVIDERS, load_settings

GROUPS = (admin, knowledge, runs, studio, advise, grading)
# these also take --provider / --model after the command
LATE_OPTIONS = ("ask", "resume", "fork", "eval", "verify", "questions", "advise", "grade", "calibrate")


def build_parser() -> tuple[argparse.ArgumentParser, dict]:
    """The parser of every command, and command -> handler."""
    parser = argparse.ArgumentParser(prog="python -m core", description="Agentic RAG Studio command line")
    parser.add_argument("--provider", choices=PROVIDERS, help="chat-model provider (default: automatic)")
    parser.add_argument("--model", help="chat model name (embedded: qwen2.5-coder-1.5b-instruct or gemma-3-270m)")
    parser.add_argument("--data-dir", help="where collections, checkpoints and threads are stored")
    sub = parser.add_subparsers(dest="command", required=True)
    handlers: dict = {}
    for group in GROUPS:
        handlers.update(group.register(sub))
    for name in LATE_OPTIONS:
        sub.choices[name].add_argument("--provider", choices=PROVIDERS, dest="provider_late")
        sub.choices[name].add_argument("--model", dest="model_late")
    return parser, handlers


def main(argv: list[str] | None = None) -> int:
    from core.llm.models import ProviderError
    from core.llm.thresholds import parse_overrides

    parser, handlers = build_parser()
    args = parser.parse_args(argv)
    provider = getattr(args, "provider_late", None) or args.provider
    model = getattr(args, "model_late", None) or args.model
    settings = load_settings(provider=provider, model=model, data_dir=args.data_dir)
    try:
        parse_overrides(settings.grader_thresholds)
    except ValueError as exc:  # checked once here, not as a failure of the first model call
        sys.stderr.write(f"error: RAG_GRADER_THRESHOLDS: {exc}\n")
        return 2
    try:
        return handlers[args.command](settings, args)
    except ProviderError as exc:  # e.g. an unknown embedded model, or a model part missing
        sys.stderr.write(f"error: {exc}\n")
        return 2
