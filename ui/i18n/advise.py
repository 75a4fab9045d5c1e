"""UI strings of "Which pattern for my documents?": generating question sets and advising; merged into ui.i18n."""

# key: (English, Korean)
ADVISE_STRINGS = {
    "gen_title": ("Generate questions from your collections", "컬렉션에서 질문 만들기"),
    "gen_help": ("Answer first: each question's answer is picked from a chunk (a figure with its unit, a name, a "
                 "defining phrase), the model in the sidebar writes a question for it in the chunk's language, and the "
                 "question is kept when a search finds its chunk and the model, answering from that chunk, gives the "
                 "same answer back. Each line below is one question written: kept, or dropped and why.",
                 "답을 먼저 고릅니다. 청크에서 답(단위가 붙은 수치, 이름, 정의하는 구절)을 하나 고르면 사이드바의 모델이 "
                 "청크의 언어로 그 답을 묻는 질문을 쓰고, 검색이 그 청크를 찾고 모델이 그 청크로 답해 같은 답이 나올 때만 "
                 "질문을 남깁니다. 아래 줄 하나가 쓴 질문 하나입니다: 남겼는지, 버렸다면 왜인지."),
    "gen_collections": ("Collections", "컬렉션"),
    "gen_count": ("Questions", "질문 수"),
    "gen_run": ("Generate", "만들기"),
    "gen_stop": ("Stop", "중지"),
    "gen_running": ("Writing questions… {kept}/{wanted}", "질문 쓰는 중… {kept}/{wanted}"),
    "gen_eta": ("about {seconds} s left (measured on this model so far)",
                "남은 시간 약 {seconds}초 (이 모델에서 지금까지 잰 속도)"),
    "gen_done": ("Kept {kept} of {attempts} written questions in {seconds} s, {calls} model calls ({per_kept} per "
                 "kept question, at most {bound}). Dropped: {dropped}.",
                 "쓴 질문 {attempts}개 중 {kept}개를 {seconds}초 만에 남겼습니다. 모델 호출 {calls}번 (남긴 질문당 "
                 "{per_kept}번, 최대 {bound}번). 버린 이유: {dropped}."),
    "gen_stopped": ("Stopped: the questions written so far are kept.", "중지했습니다. 지금까지 쓴 질문은 남깁니다."),
    "gen_none": ("Choose at least one collection.", "컬렉션을 하나 이상 고르세요."),
    "gen_table": ("Edit, delete or add questions before saving (facts separated by |).",
                  "저장하기 전에 질문을 고치거나 지우거나 더하세요 (사실은 |로 구분)."),
    "gen_chunk": ("Source chunk of", "원문 청크:"),
    "gen_set_name": ("Set name", "세트 이름"),
    "gen_save": ("Save the set", "세트 저장"),
    "gen_saved": ("Saved as {file}.", "{file}(으)로 저장했습니다."),
    "gen_download": ("Download JSONL", "JSONL 내려받기"),
    "gen_invalid": ("This set cannot be saved: {error}", "이 세트는 저장할 수 없습니다: {error}"),
    "advise_title": ("Advise: which pattern for my documents?", "추천: 내 문서에는 어떤 패턴?"),
    "advise_help": ("Runs a saved set through the chosen patterns in the background (leave the page, it goes on; "
                    "a stopped advice continues where it stopped) and recommends the cheapest pattern within a margin "
                    "of the best quality.",
                    "저장한 세트를 고른 패턴으로 백그라운드에서 실행합니다 (페이지를 떠나도 계속되고, 중지한 추천은 멈춘 곳부터 "
                    "이어 갑니다). 최고 품질에서 허용 폭 안에 드는 가장 저렴한 패턴을 추천합니다."),
    "advise_set": ("Question set", "질문 세트"),
    "advise_undescribed": ("{names} has no description, and routers and agents choose collections by theirs: its "
                           "questions may go to the web or a direct answer. Describe it on the Knowledge base page "
                           "(or let the model suggest one) before advising.",
                           "{names}에는 설명이 없습니다. 라우터와 에이전트는 설명을 보고 컬렉션을 고르므로 이 컬렉션의 질문이 "
                           "웹이나 직접 답변으로 갈 수 있습니다. 추천을 받기 전에 지식 베이스 페이지에서 설명을 쓰거나 모델에게 "
                           "제안받으세요."),
    "advise_no_sets": ("No saved question set yet: generate one above.", "저장된 질문 세트가 없습니다. 위에서 만드세요."),
    "advise_budget": ("Time budget (minutes; 0 = no limit)", "시간 예산 (분, 0 = 제한 없음)"),
    "advise_estimates": ("Measured on this model, for this set: {figures}.", "이 모델에서 잰 값, 이 세트 기준: {figures}."),
    "advise_unmeasured": ("No timing measured on this model yet: the first runs measure it (on two cores the built-in "
                          "Qwen model took 40–150 s per question and pattern).",
                          "이 모델의 실행 시간을 아직 재지 않았습니다. 첫 실행이 잽니다 "
                          "(코어 2개에서 내장 Qwen 모델은 질문·패턴마다 40–150초가 걸렸습니다)."),
    "advise_run": ("Advise", "추천 실행"),
    "advise_past": ("Advices", "추천 기록"),
    "advise_progress": ("{done} of {total} runs", "실행 {total}개 중 {done}개"),
    "advise_status": ("Status: {status}", "상태: {status}"),
    "advice_running": ("running", "실행 중"),
    "advice_done": ("done", "완료"),
    "advice_stopped": ("stopped", "중지됨"),
    "advice_interrupted": ("interrupted", "중단됨"),
    "advice_failed": ("failed", "실패"),
    "advise_continue": ("Continue", "이어서 실행"),
    "advise_recommended": ("Recommended: {pattern}", "추천: {pattern}"),
    "advise_rule": ("The rule", "추천 규칙"),
    "advise_frontier": ("Quality against seconds per question (recommended point circled)",
                        "질문당 초 대비 품질 (추천 패턴에 원 표시)"),
    "advise_questions": ("Question by question (quality per pattern; open a run's trace from the links)",
                         "질문별 결과 (패턴별 품질, 링크에서 실행 추적 열기)"),
    "advise_download_md": ("Download report (Markdown)", "보고서 내려받기 (Markdown)"),
    "advise_download_csv": ("Download table (CSV)", "표 내려받기 (CSV)"),
    "advise_make_png": ("Chart as PNG", "차트를 PNG로"),
    "advise_png_failed": ("The chart cannot be rendered to PNG here; its own menu (⋯) saves it from the browser.",
                          "여기서는 차트를 PNG로 그릴 수 없습니다. 차트 메뉴(⋯)에서 브라우저로 저장하세요."),
    "policy_title": ("Auto's policy", "Auto의 정책"),
    "policy_intro": ("The pattern Auto runs for each kind of question over these collections: the winner of that kind "
                     "in your latest advice for them (quality first; within the margin, the fewest seconds), or the "
                     "default policy where no advice holds enough questions of the kind.",
                     "이 컬렉션들에 대한 질문 종류마다 Auto가 실행하는 패턴입니다. 이 컬렉션들에 대한 가장 최근 추천 기록에서 그 "
                     "종류를 이긴 패턴(품질 우선, 허용 폭 안에서는 가장 빠른 패턴)이며, 그 종류의 질문이 충분한 추천 기록이 "
                     "없으면 기본 정책을 따릅니다."),
    "policy_collections": ("Collections in play", "사용할 컬렉션"),
    "policy_none": ("Choose at least one collection to see the policy for it.",
                    "정책을 보려면 컬렉션을 하나 이상 고르세요."),
    "policy_kind": ("kind of question", "질문 종류"),
    "policy_pattern": ("pattern", "패턴"),
    "policy_quality": ("quality", "품질"),
    "policy_seconds": ("seconds per question", "질문당 초"),
    "policy_questions": ("questions behind it", "근거 질문 수"),
    "policy_date": ("advice of", "추천 날짜"),
    "policy_default": ("default policy", "기본 정책"),
    "policy_why": ("why", "이유"),
    "policy_no_sets": ("No saved question set asks about these collections only: generate one on the Evaluation page "
                       "to measure the policy.",
                       "이 컬렉션들만 묻는 저장된 질문 세트가 없습니다. 정책을 재려면 평가 페이지에서 세트를 만드세요."),
    "policy_set": ("Question set to measure it on", "정책을 잴 질문 세트"),
    "policy_refresh": ("Refresh the policy", "정책 새로 고치기"),
    "policy_refresh_help": ("Runs a fresh advice over {patterns} in the background (every run made again).",
                            "{patterns}로 새 추천을 백그라운드에서 실행합니다 (모든 실행을 다시 합니다)."),
    "policy_started": ("Advice started: follow it on the Evaluation page; the policy changes when it is done.",
                       "추천을 시작했습니다. 평가 페이지에서 진행을 볼 수 있고, 끝나면 정책이 바뀝니다."),
    "policy_behind": ("Measured by advice {ids}.", "근거 추천 기록: {ids}."),
}
