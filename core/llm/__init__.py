"""Chat models per provider, structured output, the embedded llama.cpp adapter, embeddings, graders."""
