"""UI strings of the sources (collection descriptions, the sidebar choice) and of question sets; merged into ui.i18n."""

# key: (English, Korean)
SOURCE_STRINGS = {
    "sources": ("Sources", "검색 대상"),
    "sources_help": ("The collections this page's runs may use (enabled collections only; the Knowledge base page "
                     "describes and switches them).",
                     "이 페이지의 실행이 쓸 컬렉션입니다 (켜진 컬렉션만; 설명과 켜기/끄기는 지식 베이스 페이지에서)."),
    "no_sources_chosen": ("None chosen: every enabled collection is used.",
                          "선택한 것이 없어 켜진 컬렉션을 모두 씁니다."),
    "no_sources": ("No collection is enabled: runs can only search the web or answer directly.",
                   "켜진 컬렉션이 없습니다. 웹 검색이나 바로 답변만 할 수 있습니다."),
    "display_name": ("Display name", "표시 이름"),
    "description": ("Description: which questions it answers", "설명: 어떤 질문에 답하는가"),
    "description_help": ("Routers, fan-out and agent tools choose a collection by this text: name its subject and the "
                          "kinds of questions it answers, in a sentence or two.",
                          "라우터, 병렬 검색, 에이전트 도구가 이 글로 컬렉션을 고릅니다. 주제와 답할 수 있는 질문의 종류를 "
                          "한두 문장으로 쓰세요."),
    "enabled": ("Offer it to the patterns", "패턴에 제공"),
    "suggest": ("Suggest a description", "설명 제안받기"),
    "suggest_failed": ("No suggestion: {error}", "제안을 받지 못했습니다: {error}"),
    "save_source": ("Save", "저장"),
    "source_saved": ("Saved the description of {collection}.", "{collection}의 설명을 저장했습니다."),
    "undescribed": ("No description yet: routers know it only by its name.",
                    "아직 설명이 없습니다. 라우터는 이름으로만 이 컬렉션을 압니다."),
    "off": ("off", "꺼짐"),
    "reserved_name": ("'web' and 'direct' are route names of the routers: choose another collection name.",
                      "'web'과 'direct'는 라우터의 경로 이름입니다. 다른 컬렉션 이름을 고르세요."),
    "question_set": ("Question set", "질문 세트"),
    "builtin_set": ("Built-in set (sample collections)", "기본 세트 (샘플 컬렉션)"),
    "upload_set": ("…or upload a JSONL question set", "…또는 JSONL 질문 세트 올리기"),
    "upload_set_help": ("One JSON object per line: question, sources (collection names; \"web\" for web search; "
                        "[] for a direct answer), facts (strings the answer should contain), answerable (true/false).",
                        "한 줄에 JSON 객체 하나: question, sources (컬렉션 이름, 웹 검색은 \"web\", 바로 답할 질문은 []), "
                        "facts (답에 들어가야 할 문자열), answerable (true/false)."),
    "set_unknown_sources": ("The set expects collections that do not exist here: {names}.",
                            "세트가 여기 없는 컬렉션을 기대합니다: {names}."),
    "frontier": ("Quality against cost", "품질 대비 비용"),
    "frontier_help": ("Each point is one pattern in one evaluation: up and to the left is better.",
                      "점 하나가 평가 하나의 패턴 하나입니다. 왼쪽 위일수록 좋습니다."),
    "score_axis": ("Score", "점수"),
    "cost_axis": ("Cost per question", "질문당 비용"),
    "download_csv": ("Download CSV", "CSV 내려받기"),
    "download_png": ("Download PNG", "PNG 내려받기"),
}
