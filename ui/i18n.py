"""UI strings in English and Korean; the language comes from the browser locale, then the sidebar switch."""

from __future__ import annotations

import streamlit as st

from ui.i18n_advise import ADVISE_STRINGS
from ui.i18n_grading import GRADING_STRINGS
from ui.i18n_retrieval import RETRIEVAL_STRINGS
from ui.i18n_sources import SOURCE_STRINGS

LANGUAGES = {"ko": "한국어", "en": "English"}

# key: (English, Korean)
STRINGS = {
    "app_title": ("Agentic RAG Studio", "Agentic RAG Studio"),
    "app_intro": ("Pick a pattern, chat, and watch every decision the graph makes.",
                  "패턴을 고르고 대화하면서 그래프가 내리는 모든 결정을 확인하세요."),
    "language": ("Language", "언어"),
    "settings": ("Model settings", "모델 설정"),
    "provider": ("Provider", "제공자"),
    "model": ("Model", "모델"),
    "model_help": ("Pick from the list the server reports, or type a name.",
                   "서버가 알려 준 목록에서 고르거나 이름을 입력하세요."),
    "model_free_help": ("The server did not answer with a model list: type the model name.",
                        "서버에서 모델 목록을 받지 못했습니다. 모델 이름을 입력하세요."),
    "base_url": ("Base URL", "기본 URL"),
    "api_key": ("API key (kept in memory only)", "API 키 (메모리에만 보관)"),
    "base_url_help": ("A URL you change here is sent only the key you type below, never the server's key.",
                      "여기서 바꾼 URL에는 아래에 입력한 키만 보내며, 서버의 키는 보내지 않습니다."),
    "key_too_short": ("This key is refused: a key has at least {n} characters. Paste the whole key, or leave the field empty.",
                      "이 키는 사용하지 않습니다. 키는 {n}자 이상입니다. 키 전체를 붙여 넣거나 비워 두세요."),
    "url_refused": ("This URL is not used ({reason}); the configured server is used instead.",
                    "이 URL은 사용하지 않습니다 ({reason}). 설정된 서버를 대신 사용합니다."),
    "password": ("Password", "비밀번호"),
    "enter": ("Enter", "입장"),
    "wrong_password": ("Wrong password.", "비밀번호가 틀렸습니다."),
    "locked_out": ("Too many wrong passwords from your address: wait {seconds} s before the next try "
                   "(this try was not checked).",
                   "이 주소에서 비밀번호가 여러 번 틀렸습니다. {seconds}초 뒤에 다시 시도하세요 "
                   "(이번 입력은 확인하지 않았습니다)."),
    "read_only_threads": ("Read-only mode: threads cannot be renamed or deleted here.",
                          "읽기 전용 모드: 여기서는 스레드 이름을 바꾸거나 삭제할 수 없습니다."),
    "read_only_kb": ("Read-only mode: uploads, deletions and re-indexing are switched off.",
                     "읽기 전용 모드: 업로드, 삭제, 재색인이 꺼져 있습니다."),
    "upload_limits": ("At most {mb} MB, {pages} PDF pages and {chars:,} characters per file.",
                      "파일당 최대 {mb} MB, PDF {pages}쪽, {chars:,}자까지 올릴 수 있습니다."),
    "duplicate_uploads": ("Two uploaded files are named {name}: rename one.",
                          "업로드한 파일 중 두 개의 이름이 {name}(으)로 같습니다. 하나의 이름을 바꾸세요."),
    "temperature": ("Temperature", "온도"),
    "max_tokens": ("Max tokens", "최대 토큰"),
    "grader_model": ("Grader model (optional, cheaper)", "평가용 모델 (선택, 더 저렴한 모델)"),
    "grader_help": ("Routers and graders use this model; empty = the main model.",
                    "라우터와 평가기가 이 모델을 씁니다. 비우면 기본 모델을 씁니다."),
    "retrieval": ("Retrieval and retry limits", "검색 및 재시도 한도"),
    "k": ("Documents retrieved (k)", "검색 문서 수 (k)"),
    "max_rewrites": ("Max question rewrites", "질문 재작성 최대 횟수"),
    "max_generations": ("Max regenerations", "답변 재생성 최대 횟수"),
    "max_iterations": ("Max agent iterations", "에이전트 최대 반복 횟수"),
    "variant": ("Variant", "변형"),
    "review": ("Pause for review before answering", "답변 전에 검토를 위해 일시 정지"),
    "review_unsupported": ("This pattern has no review step.", "이 패턴에는 검토 단계가 없습니다."),
    "web_search": ("Web search", "웹 검색"),
    "web_ok": ("configured (Tavily)", "사용 가능 (Tavily)"),
    "web_off": ("unavailable: set TAVILY_API_KEY", "사용 불가: TAVILY_API_KEY를 설정하세요"),
    "test_connection": ("Test connection", "연결 테스트"),
    "embedded_notice": (
        "**Built-in model.** `{model}` runs offline on this machine's CPU. {about} For real quality choose "
        "**openai** (set `OPENAI_API_KEY`), **ollama** (`ollama serve`, `ollama pull qwen2.5:7b`) or "
        "**openai-compatible** (LM Studio, llama.cpp server, vLLM at a base URL) in the sidebar.",
        "**내장 모델입니다.** `{model}` 모델이 이 컴퓨터의 CPU에서 오프라인으로 실행됩니다. {about} 제대로 된 품질을 "
        "원하면 사이드바에서 **openai** (`OPENAI_API_KEY` 설정), **ollama** (`ollama serve`, `ollama pull qwen2.5:7b`) "
        "또는 **openai-compatible** (LM Studio, llama.cpp server, vLLM의 기본 URL)을 선택하세요."),
    "about_qwen": ("A 1.5B instruction-tuned model: it follows the patterns, but slowly on a small CPU and "
                   "with simple answers.",
                   "15억 파라미터의 지시 학습 모델이라 패턴을 따르지만, 작은 CPU에서는 느리고 답변이 단순합니다."),
    "about_gemma": ("A tiny 270M base model: fast, but its verdicts are often wrong and its answers weak; "
                    "use it to watch the mechanics quickly.",
                    "2억 7천만 파라미터의 아주 작은 기본 모델이라 빠르지만 판정이 자주 틀리고 답변 품질이 낮습니다. "
                    "동작 과정을 빠르게 살펴볼 때 쓰세요."),
    "embedded_k": ("Documents the built-in model reads (at most)", "내장 모델이 읽는 문서 수 (최대)"),
    "embedded_doc_chars": ("Characters of each document it reads", "문서마다 읽는 글자 수"),
    "caps_help": ("Prompt reading dominates on a small CPU: fewer, shorter documents answer sooner.",
                  "작은 CPU에서는 프롬프트를 읽는 시간이 대부분이라 문서를 적고 짧게 주면 더 빨리 답합니다."),
    "prompt_cache": ("Prompt cache: {used} of {cap} MB, {n} prompts kept; {skipped} of {sent} prompt tokens "
                     "were not read again",
                     "프롬프트 캐시: {cap} MB 중 {used} MB, 프롬프트 {n}개 보관; 프롬프트 토큰 {sent}개 중 {skipped}개는 "
                     "다시 읽지 않았습니다"),
    "prompt_cache_off": ("Prompt cache: off (RAG_EMBEDDED_CACHE_MB=0)", "프롬프트 캐시: 꺼짐 (RAG_EMBEDDED_CACHE_MB=0)"),
    "prompt_cache_help": ("The built-in model keeps what it read of recent prompts and restores it when the next "
                          "prompt starts the same way (documents graded, then answered from, then checked are read "
                          "once). The server sets its size with RAG_EMBEDDED_CACHE_MB.",
                          "내장 모델은 최근 프롬프트를 읽은 상태를 보관했다가 다음 프롬프트가 같은 내용으로 시작하면 "
                          "되살립니다(평가하고, 답하고, 검증하는 문서를 한 번만 읽음). 크기는 서버의 "
                          "RAG_EMBEDDED_CACHE_MB로 정합니다."),
    "preparing_model": ("Preparing the built-in model (once)", "내장 모델 준비 중 (한 번만)"),
    "model_failed": ("The built-in model cannot be prepared: {error}", "내장 모델을 준비할 수 없습니다: {error}"),
    "threads": ("Conversations", "대화"),
    "new_chat": ("New chat", "새 대화"),
    "no_threads": ("No conversations yet.", "아직 대화가 없습니다."),
    "rename": ("Rename", "이름 바꾸기"),
    "title": ("Title", "제목"),
    "delete": ("Delete", "삭제"),
    "confirm_delete": ("Really delete", "정말 삭제"),
    "status_running": ("running", "실행 중"),
    "status_done": ("done", "완료"),
    "status_waiting": ("waiting for review", "검토 대기"),
    "status_cancelled": ("cancelled (left before it finished)", "취소됨 (끝나기 전에 떠남)"),
    "status_interrupted": ("interrupted (the server stopped)", "중단됨 (서버가 멈춤)"),
    "status_failed": ("failed", "실패"),
    "ask": ("Ask a question", "질문을 입력하세요"),
    "running": ("Running…", "실행 중…"),
    "queued": ("Queued (#{place} in line): {running} runs are going, the most this server runs at once.",
               "대기 중 ({place}번째): 이 서버가 한 번에 실행하는 최대치인 {running}개가 실행 중입니다."),
    "after_node": ("Running… finished {node}", "실행 중… {node} 완료"),
    "run_done": ("Finished: {reason}", "완료: {reason}"),
    "run_paused": ("Paused for review", "검토를 위해 일시 정지됨"),
    "run_failed": ("Stopped by an error", "오류로 중단됨"),
    "try_again": ("Try again", "다시 시도"),
    "draft_kept": ("Your question was not sent: it is back in the box below; edit it and send again.",
                   "질문이 전송되지 않았습니다. 아래 입력란에 다시 넣어 두었으니 고쳐서 다시 보내세요."),
    "send": ("Send", "보내기"),
    "sources": ("Sources", "출처"),
    "no_sources": ("No documents were cited in this run.", "이 실행에서 인용된 문서가 없습니다."),
    "page": ("page", "페이지"),
    "score": ("score", "점수"),
    "trace": ("Trace", "추적"),
    "verdicts": ("Decisions and verdicts", "결정과 판정"),
    "no_trace": ("No decisions were recorded.", "기록된 결정이 없습니다."),
    "reasons": ("Retries and rewrites, in order", "재시도와 재작성 (순서대로)"),
    "counters": ("Counters", "카운터"),
    "usage": ("LLM calls, tokens and time per node", "노드별 LLM 호출, 토큰, 시간"),
    "llm_calls": ("LLM calls", "LLM 호출"),
    "tokens": ("Tokens", "토큰"),
    "ms": ("ms", "ms"),
    "path": ("Path", "경로"),
    "graph": ("Graph", "그래프"),
    "graph_legend": ("Highlighted: the nodes and edges this run went through.",
                     "강조 표시: 이번 실행이 지나간 노드와 간선."),
    "export": ("Export", "내보내기"),
    "export_json": ("Download JSON", "JSON 다운로드"),
    "export_md": ("Download Markdown", "Markdown 다운로드"),
    "stopped": ("Stopped", "종료 사유"),
    "others_thread": ("Read-only: this is another visitor's conversation. You can read it; a question you ask "
                      "starts a conversation of your own.",
                      "읽기 전용: 다른 방문자의 대화입니다. 읽을 수는 있고, 질문하면 내 대화가 새로 시작됩니다."),
    "waiting_review": ("This run is waiting for your review.", "이 실행은 검토를 기다리고 있습니다."),
    "edited_in_review": ("✏️ Edited in review; first asked: {question}", "✏️ 검토 중 수정됨; 처음 질문: {question}"),
    "review_title": ("Review", "검토"),
    "review_intro": ("Runs paused for a human decision, oldest first.", "사람의 결정을 기다리는 실행 (오래된 순)."),
    "no_reviews": ("Nothing is waiting for review.", "검토 대기 중인 실행이 없습니다."),
    "paused_at": ("paused", "일시 정지"),
    "waits_docs": ("waits for a document review", "문서 검토 대기"),
    "waits_tools": ("waits for a tool-call approval", "도구 호출 승인 대기"),
    "question": ("Question", "질문"),
    "keep": ("keep", "유지"),
    "approve": ("Approve", "승인"),
    "reject": ("Reject", "거절"),
    "reretrieve": ("Re-retrieve with this question", "이 질문으로 다시 검색"),
    "edit": ("Run edited calls", "수정한 호출 실행"),
    "reject_message": ("Message (with Reject)", "메시지 (거절 시)"),
    "tool_args": ("Arguments of {name} (JSON)", "{name}의 인자 (JSON)"),
    "bad_json": ("The arguments are not valid JSON: {error}", "인자가 올바른 JSON이 아닙니다: {error}"),
    "same_question": ("Edit the question first, or use Approve.", "먼저 질문을 고치거나 승인을 누르세요."),
    "resumed": ("Resumed {pattern}: {reason}", "{pattern} 재개: {reason}"),
    "open_chat": ("Open the conversation", "대화 열기"),
    "continue_chat": ("Continue in chat", "채팅에서 이어가기"),
    "progress": ("{node}: {step} {subject}, {done} of {total}", "{node}: {step} {subject}, {total}개 중 {done}개"),
    "progress_extract_graph": ("Waiting for the {subject} knowledge graph: {done} of {total} chunks read",
                               "{subject} 지식 그래프를 기다리는 중: 청크 {total}개 중 {done}개 읽음"),
    "graph_wait": ("Wait for the graph", "그래프 기다리기"),
    "graph_wait_help": ("When a collection's graph is still being built: on, the question waits for the whole graph; "
                        "off, it answers from what is built and says so.",
                        "컬렉션의 그래프를 아직 만드는 중일 때: 켜면 질문이 그래프가 다 만들어질 때까지 기다리고, "
                        "끄면 지금까지 만든 부분으로 답하며 그렇다고 알려 줍니다."),
    "graph_building": ("Graph RAG graph: extracting with {model}, {done} of {total} chunks",
                       "Graph RAG 그래프: {model}(으)로 추출하는 중, 청크 {total}개 중 {done}개"),
    "graph_ready": ("Graph RAG graph ({model}): {nodes} entities, {edges} relations from {chunks} chunks",
                    "Graph RAG 그래프 ({model}): 청크 {chunks}개에서 개체 {nodes}개, 관계 {edges}개"),
    "graph_partial": ("Graph RAG graph ({model}), partly built: {done} of {chunks} chunks, {nodes} entities, "
                      "{edges} relations", "Graph RAG 그래프 ({model}), 일부만 만듦: 청크 {chunks}개 중 {done}개, "
                                           "개체 {nodes}개, 관계 {edges}개"),
    "graph_stale": ("out of date: the collection changed since", "오래됨: 그 뒤 컬렉션이 바뀌었습니다"),
    "graph_none": ("No Graph RAG graph yet.", "아직 Graph RAG 그래프가 없습니다."),
    "graph_build": ("Build the graph", "그래프 만들기"),
    "graph_failed": ("The graph was not built: {error}", "그래프를 만들지 못했습니다: {error}"),
    "graph_no_model": ("No model to extract the graph of {collection} with: Graph RAG's first question on it starts "
                       "the build.", "{collection}의 그래프를 추출할 모델이 없습니다. Graph RAG에서 처음 물을 때 "
                                     "만들기 시작합니다."),
    "kb_title": ("Knowledge base", "지식 베이스"),
    "kb_intro": ("Collections the patterns retrieve from.", "패턴이 검색하는 컬렉션입니다."),
    "indexing_samples": ("Indexing the sample documents (first use)…", "샘플 문서를 색인하는 중 (처음 한 번)…"),
    "samples_failed": ("The sample documents could not be indexed: {error}", "샘플 문서를 색인하지 못했습니다: {error}"),
    "collections": ("Collections", "컬렉션"),
    "chunks": ("chunks", "청크"),
    "embedding_model": ("embedding model", "임베딩 모델"),
    "documents": ("documents", "문서"),
    "delete_doc": ("Delete document", "문서 삭제"),
    "delete_collection": ("Delete collection", "컬렉션 삭제"),
    "deleted": ("Deleted {what}.", "{what}을(를) 삭제했습니다."),
    "preview": ("Chunk preview", "청크 미리보기"),
    "upload": ("Add documents", "문서 추가"),
    "files": ("Files (.pdf, .txt, .md)", "파일 (.pdf, .txt, .md)"),
    "collection": ("Collection", "컬렉션"),
    "new_collection": ("New collection…", "새 컬렉션…"),
    "new_collection_name": ("Name of the new collection", "새 컬렉션 이름"),
    "chunk_size": ("Chunk size", "청크 크기"),
    "chunk_overlap": ("Chunk overlap", "청크 겹침"),
    "index": ("Index", "색인"),
    "indexed": ("{source}: {n} chunks added to {collection}", "{source}: 청크 {n}개를 {collection}에 추가"),
    "bad_name": ("Collection names use 3–63 letters, digits, '.', '_' or '-', starting and ending with a letter or "
                 "digit.", "컬렉션 이름은 영문자·숫자·'.'·'_'·'-' 3–63자이며 영문자나 숫자로 시작하고 끝나야 합니다."),
    "no_files": ("Choose at least one file.", "파일을 하나 이상 고르세요."),
    "retrieval_test": ("Retrieval test", "검색 테스트"),
    "query": ("Query", "검색어"),
    "search": ("Search", "검색"),
    "embedder": ("Embedding model for the whole app", "앱 전체의 임베딩 모델"),
    "embedder_needs_key": ("OpenAI embeddings need your own OpenAI key: type it in the sidebar (OpenAI provider). "
                           "Until then the configured embedder stays in use.",
                           "OpenAI 임베딩에는 본인의 OpenAI 키가 필요합니다. 사이드바(OpenAI 제공자)에 입력하세요. "
                           "그때까지는 설정된 임베딩 모델을 그대로 씁니다."),
    "embedding_provider": ("Embedding provider", "임베딩 제공자"),
    "mismatch": ("Indexed with {stored}; the app now embeds with {current}. Re-index it to search it.",
                 "{stored}(으)로 색인되었습니다. 지금 앱은 {current}(으)로 임베딩합니다. 검색하려면 다시 색인하세요."),
    "reindex": ("Re-index with {current}", "{current}(으)로 다시 색인"),
    "reindexed": ("Re-indexed {collection}: {n} chunks.", "{collection} 다시 색인 완료: 청크 {n}개."),
    "home_model": ("Active model", "사용 중인 모델"),
    "start": ("Start", "시작"),
    "no_page": ("No page yet", "아직 페이지 없음"),
    "patterns": ("Patterns", "패턴"),
    "compare_title": ("Compare patterns", "패턴 비교"),
    "compare_intro": ("One question through several patterns at once: compare their answers, paths and costs.",
                      "질문 하나를 여러 패턴에 동시에 실행해 답변, 경로, 비용을 비교합니다."),
    "compare_run": ("Compare", "비교하기"),
    "empty_question": ("Type a question first.", "먼저 질문을 입력하세요."),
    "no_patterns": ("Choose at least one pattern.", "패턴을 하나 이상 고르세요."),
    "waiting": ("Waiting for its first step…", "첫 단계를 기다리는 중…"),
    "run_figures": ("{calls} LLM calls · {tokens} tokens · {seconds} s", "LLM 호출 {calls}회 · 토큰 {tokens} · {seconds}초"),
    "no_result": ("This run left no result.", "이 실행은 결과를 남기지 않았습니다."),
    "still_running": ("Still running: the result appears here when the run ends.",
                      "아직 실행 중입니다. 실행이 끝나면 결과가 여기에 나타납니다."),
    "comparison_running": ("This comparison is still running in the background; finished runs are shown.",
                           "이 비교는 백그라운드에서 아직 실행 중입니다. 끝난 실행만 표시됩니다."),
    "refresh": ("Refresh", "새로 고침"),
    "past_comparisons": ("Past comparisons", "이전 비교"),
    "choose_comparison": ("Open a past comparison", "이전 비교 열기"),
    "choose_options": ("Choose options", "선택하세요"),
    "comparison_broken": ("This comparison could not be read: {error}", "이 비교를 읽을 수 없습니다: {error}"),
    "metrics": ("Metrics across patterns", "패턴별 지표"),
    "wall_time": ("Wall time (s)", "실행 시간 (초)"),
    "eval_title": ("Evaluation", "평가"),
    "eval_intro": ("Scores of the shipped question set per pattern and model, from saved evaluation runs.",
                   "저장된 평가 실행에서 가져온, 패턴과 모델별 질문 세트 점수입니다."),
    "eval_demo": ("Scores depend on the model: the built-in one (Qwen2.5-Coder 1.5B by default, Gemma 3 270M as the "
                  "fast option) is small, so connect OpenAI, Ollama or LM Studio in the sidebar for scores that say "
                  "more about the patterns than about the model.",
                  "점수는 모델에 따라 달라집니다. 내장 모델(기본 Qwen2.5-Coder 1.5B, 빠른 선택지 Gemma 3 270M)은 작으니, "
                  "모델이 아니라 패턴을 비교하려면 사이드바에서 OpenAI, Ollama 또는 LM Studio를 연결하세요."),
    "no_reports": ("No evaluation saved yet: start one below, or run `python -m core eval`.",
                   "저장된 평가가 아직 없습니다. 아래에서 시작하거나 `python -m core eval`을 실행하세요."),
    "reports": ("Evaluations to compare", "비교할 평가"),
    "choose_reports": ("Choose at least one evaluation.", "평가를 하나 이상 고르세요."),
    "eval_summary": ("Summary per evaluation and pattern", "평가·패턴별 요약"),
    "eval_chart": ("Key-fact rate and route accuracy per pattern", "패턴별 핵심 사실 비율과 경로 정확도"),
    "drill_down": ("Question by question", "질문별 결과"),
    "report": ("Evaluation", "평가"),
    "pattern": ("Pattern", "패턴"),
    "terminations": ("Why the runs stopped", "실행 종료 사유"),
    "eval_start": ("Run an evaluation", "평가 실행"),
    "eval_start_help": ("Each question runs once per pattern with the model chosen in the sidebar. {timing}",
                        "사이드바에서 고른 모델로 질문마다 패턴별로 한 번씩 실행합니다. {timing}"),
    "eval_timing": ("Measured on this model: {figures} per question.", "이 모델에서 잰 질문당 시간: {figures}."),
    "eval_limit": ("Questions (N, taken in turn from each category)", "질문 수 (N개, 범주마다 차례로)"),
    "category": ("Category", "범주"),
    "all_categories": ("all", "전체"),
    "eval_run": ("Run and save", "실행하고 저장"),
    "eval_running": ("Evaluating…", "평가 중…"),
    "eval_saved": ("Saved the evaluation as {file}.", "평가를 {file}(으)로 저장했습니다."),
    "eval_failed": ("The evaluation could not run: {error}", "평가를 실행하지 못했습니다: {error}"),
    # navigation
    "home": ("Home", "홈"),
    "nav_knowledge": ("Knowledge", "지식"),
    "thread_missing": ("This conversation does not exist (it may have been deleted). A new chat is open.",
                       "이 대화는 존재하지 않습니다 (삭제되었을 수 있습니다). 새 대화를 열었습니다."),
    "thread_elsewhere": ("This conversation belongs to {pattern}.", "이 대화는 {pattern}의 대화입니다."),
    "open_there": ("Open it there", "그 페이지에서 열기"),
    # what a run can claim
    "citations_unknown": ("Citation {markers} points to no listed source ({n} listed).",
                          "인용 {markers}에 해당하는 출처가 목록에 없습니다 (출처 {n}개)."),
    "verify_claims": ("Check each sentence", "문장마다 확인"),
    "verify_claims_help": ("After every answer, each sentence is checked against the run's documents "
                           "(RAG_VERIFY_CLAIMS). model: rules check numbers, dates and names in the supporting passage, "
                           "then the model judges up to RAG_CLAIM_CHECKS sentences (a few seconds each on the built-in "
                           "model). rules: the rules only, no model call. off: no check.",
                           "답변마다 문장을 이번 실행의 문서와 대조합니다 (RAG_VERIFY_CLAIMS). model: 규칙이 뒷받침 구절의 "
                           "숫자·날짜·이름을 확인하고, 모델이 최대 RAG_CLAIM_CHECKS개 문장을 판단합니다 (내장 모델에서 문장당 "
                           "몇 초). rules: 규칙만, 모델 호출 없음. off: 확인 안 함."),
    "citations_none": ("No citations: the answer names none of its sources.",
                       "인용 없음: 답변이 출처를 밝히지 않았습니다."),
    "citations_ok": ("Citations {markers} match the listed sources.", "인용 {markers}이(가) 목록의 출처와 일치합니다."),
    "truncated": ("The answer was cut off at the token limit (max tokens): raise it in the sidebar.",
                  "답변이 토큰 한도(최대 토큰)에서 잘렸습니다. 사이드바에서 한도를 늘리세요."),
    "truncated_some": ("{cut} of {calls} answer generations in {node} were cut off at the token limit (max tokens).",
                       "{node}의 답변 생성 {calls}회 중 {cut}회가 토큰 한도(최대 토큰)에서 잘렸습니다."),
    "budget_used": ("{used} of {limit} {what} used", "{what} {limit}회 중 {used}회 사용"),
    "budget_rewrites": ("rewrites", "재작성"),
    "budget_regenerations": ("regenerations", "재생성"),
    "budget_steps": ("steps", "단계"),
    "col_node": ("node", "노드"),
    "col_kind": ("kind", "종류"),
    "col_grader": ("grader", "평가기"),
    "col_target": ("target", "대상"),
    "col_verdict": ("verdict", "판정"),
    "col_score": ("score", "점수"),
    "col_p": ("p vs threshold", "확률 대 기준값"),
    "col_reason": ("reason", "이유"),
    # compare: the slow patterns
    "slow_patterns": ("Pre-selected: the fast patterns. Slow ones (minutes on the built-in model), add them if you "
                      "want: {slow}.",
                      "빠른 패턴만 미리 골랐습니다. 느린 패턴(내장 모델에서 몇 분)은 원하면 추가하세요: {slow}."),
    "slow_calls": ("up to {n} LLM calls", "LLM 호출 최대 {n}회"),
}
STRINGS.update(SOURCE_STRINGS)
STRINGS.update(ADVISE_STRINGS)
STRINGS.update(RETRIEVAL_STRINGS)
STRINGS.update(GRADING_STRINGS)

KINDS_KO = {"route": "경로", "verdict": "판정", "retry": "재시도", "rewrite": "재작성", "tool": "도구",
            "interrupt": "검토", "stop": "종료", "error": "오류", "info": "정보"}


def default_language() -> str:
    """Korean for a Korean browser, English otherwise."""
    locale = getattr(st.context, "locale", None) or ""
    return "ko" if str(locale).lower().startswith("ko") else "en"


def current_language() -> str:
    return (st.session_state.get("prefs") or {}).get("lang") or default_language()


def t(key: str, **values) -> str:
    """The UI string for ``key`` in the current language."""
    english, korean = STRINGS[key]
    text = korean if current_language() == "ko" else english
    return text.format(**values) if values else text


def core_text(text) -> str:
    """A message core wrote in English (trace reason, verdict, termination message), in the UI language."""
    from ui.i18n_trace import to_korean

    text = "" if text is None else str(text)
    return to_korean(text) if current_language() == "ko" else text


def pattern_description(pattern) -> str:
    """The pattern's own two lines, in the UI language (English where it declares no Korean)."""
    return (pattern.description_ko or pattern.description) if current_language() == "ko" else pattern.description


def outcome_text(status: str) -> str:
    from core.run.outcome import outcome_label
    from ui.i18n_trace import OUTCOMES_KO

    return OUTCOMES_KO.get(status, outcome_label(status)) if current_language() == "ko" else outcome_label(status)


def kind_label(kind: str) -> str:
    return KINDS_KO.get(kind, kind) if current_language() == "ko" else kind


def termination_label(reason: str) -> str:
    """Why a run stopped, in the UI language, as the pattern declared the reason (the id for an unknown one)."""
    from core.patterns import termination_reasons

    declared = termination_reasons().get(reason or "")
    if declared is None:
        return reason or "-"
    return declared.ko if current_language() == "ko" else declared.en
