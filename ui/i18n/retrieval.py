"""UI strings of retrieval: the mode setting, each chunk's ranks, the Knowledge page's retrieval view; merged into ui.i18n."""

# key: (English, Korean)
RETRIEVAL_STRINGS = {
    "retrieval_mode": ("Retrieval", "검색 방식"),
    "retrieval_mode_help": ("Hybrid fuses embedding (dense) search and keyword (BM25 over Korean morphemes) search by "
                            "their ranks; it finds exact terms, identifiers and numbers that embeddings miss.",
                            "하이브리드는 임베딩(밀집) 검색과 키워드 검색(한국어 형태소 위의 BM25)을 순위로 합칩니다. "
                            "임베딩이 놓치는 정확한 용어, 식별자, 숫자를 찾습니다."),
    "mode_hybrid": ("Hybrid (dense + keyword)", "하이브리드 (밀집 + 키워드)"),
    "mode_dense": ("Dense (embeddings)", "밀집 (임베딩)"),
    "mode_keyword": ("Keyword (BM25)", "키워드 (BM25)"),
    "list_dense": ("Dense", "밀집"),
    "list_keyword": ("Keyword", "키워드"),
    "list_fused": ("Fused (RRF)", "결합 (RRF)"),
    "rank_line": ("{name} #{rank} ({score})", "{name} {rank}위 ({score})"),
    "not_listed": ("{name} –", "{name} –"),
    "query_tokens": ("Keyword tokens of the query (highlighted below): {tokens}",
                     "검색어의 키워드 토큰 (아래에 강조): {tokens}"),
    "no_query_tokens": ("The query has no keyword tokens: keyword search finds nothing.",
                        "검색어에 키워드 토큰이 없어 키워드 검색은 아무것도 찾지 못합니다."),
    "keyword_weight": ("The keyword list counts {weight} in the fusion: the share of the query's tokens it matched.",
                       "결합에서 키워드 목록의 가중치는 {weight}입니다: 검색어 토큰 중 키워드 목록이 찾은 비율."),
    "query_empty": ("Type what to search for first.", "검색할 내용을 먼저 입력하세요."),
    "nothing_found": ("Nothing found.", "찾은 것이 없습니다."),
    "retrieval_view_help": ("Each column is one retriever's list: dense by cosine similarity, keyword by BM25 score, "
                            "fused by reciprocal rank fusion of the two. The patterns use the list of the sidebar's "
                            "retrieval mode.",
                            "열마다 한 검색기의 목록입니다. 밀집은 코사인 유사도, 키워드는 BM25 점수, 결합은 두 목록의 "
                            "역순위 결합(RRF)으로 정렬합니다. 패턴은 사이드바에서 고른 검색 방식의 목록을 씁니다."),
}
