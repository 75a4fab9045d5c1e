# One image for the app replicas, the Chroma server and one-off CLI commands (compose.yaml, docs/DEPLOY.md).
FROM python:3.11-slim-bookworm
# llama-cpp-python (the embedded model) builds from source once: a compiler and cmake, about 8 minutes on 2 cores
RUN apt-get update && apt-get install -y --no-install-recommends build-essential cmake \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY requirements.txt .
RUN pip install --no-cache-dir -r requirements.txt
COPY . .
# Not root: the app and `chroma run` need no privileges. /data and /chroma exist in the image owned by the
# app's user, so the named volumes of compose.yaml start with that owner; the app keeps them 0700 (files 0600).
RUN useradd --create-home --uid 10001 --user-group rag \
    && mkdir -p /data /chroma && chown rag:rag /data /chroma && chmod 0700 /data /chroma
USER rag
ENV RAG_DATA_DIR=/data PYTHONUNBUFFERED=1
EXPOSE 8501
CMD ["streamlit", "run", "streamlit_app.py", "--server.port", "8501", "--server.address", "0.0.0.0", "--server.headless", "true", \
     "--server.fileWatcherType", "none"]
