"""What graph nodes read and write: the run context, trace events, review payloads."""
