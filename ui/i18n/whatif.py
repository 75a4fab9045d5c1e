"""UI strings of What if?: a run's steps, the fork form, the forks beside the run; merged into ui.i18n."""

# key: (English, Korean)
WHATIF_STRINGS = {
    "whatif": ("What if? Steps of this run", "만약에? 이 실행의 단계"),
    "whatif_help": ("Every step the graph took and what it decided. Change one decision and run on from there, or run "
                    "a step again unchanged: the new run appears beside the original, which stays as it was.",
                    "그래프가 거친 모든 단계와 그 결정입니다. 결정 하나를 바꿔 거기서부터 계속 실행하거나, 바꾸지 않고 다시 "
                    "실행해 보세요. 새 실행은 원래 실행 옆에 나타나고 원래 실행은 그대로 남습니다."),
    "wi_step": ("Step", "단계"),
    "wi_node": ("Node", "노드"),
    "wi_wrote": ("Wrote", "기록한 값"),
    "wi_decided": ("Decided", "결정"),
    "wi_can_change": ("Can change", "바꿀 수 있는 값"),
    "wi_pick": ("Step to change or run again", "바꾸거나 다시 실행할 단계"),
    "wi_nothing": ("Nothing this step wrote can be changed here; it can be run again.",
                   "이 단계가 기록한 값은 여기서 바꿀 수 없습니다. 다시 실행할 수는 있습니다."),
    "wi_fork": ("Change and continue from here", "바꾸고 여기서부터 계속"),
    "wi_replay": ("Run again from here", "여기서부터 다시 실행"),
    "wi_replay_help": ("Runs this step and everything after it again, unchanged: shows whether the model decides the "
                       "same way twice.", "이 단계와 그 뒤를 바꾸지 않고 다시 실행합니다. 모델이 두 번 같은 결정을 내리는지 "
                                          "보여 줍니다."),
    "wi_keep": ("keep", "유지"),
    "wi_calls_help": ("JSON: a list of {\"name\", \"args\"}, one per tool call.",
                      "JSON: 도구 호출마다 {\"name\", \"args\"} 하나씩 담은 목록."),
    "wi_unchanged": ("Change at least one value first (or run the step again).",
                     "먼저 값을 하나 이상 바꾸세요 (또는 단계를 다시 실행하세요)."),
    "wi_forks": ("This run and its forks", "이 실행과 분기들"),
    "wi_original": ("Original", "원래 실행"),
    "wi_fork_at": ("Fork at step {step} ({node})", "{step}단계({node})에서 분기"),
    "wi_replay_at": ("Replay from step {step} ({node})", "{step}단계({node})부터 다시 실행"),
    "wi_changed": ("changed", "바꾼 값"),
    "wi_same": ("repeated the original exactly", "원래 실행과 똑같이 반복됨"),
    "wi_differs": ("did not repeat the original", "원래 실행과 다르게 나옴"),
    "wi_running": ("still running (or stopped mid-way)", "아직 실행 중 (또는 중간에 멈춤)"),
    "wi_diff": ("Decisions that differ from the original", "원래 실행과 달라진 결정"),
    "wi_no_diff": ("No decision differs.", "달라진 결정이 없습니다."),
    "wi_after_fork": ("{calls} LLM calls · {tokens} tokens · {seconds} s after the fork point",
                      "분기 이후 LLM 호출 {calls}회 · 토큰 {tokens} · {seconds}초"),
    "wi_figures": ("{calls} LLM calls · {tokens} tokens · {seconds} s", "LLM 호출 {calls}회 · 토큰 {tokens} · {seconds}초"),
    "wi_open": ("Open this fork", "이 분기 열기"),
    "wi_graph": ("Both paths: amber = both runs, grey dashed = only the original, green = only the fork",
                 "두 경로: 주황 = 두 실행 모두, 회색 점선 = 원래 실행만, 초록 = 분기만"),
    "wi_graph_of": ("Fork on the graph", "그래프에 표시할 분기"),
    "wi_no_steps": ("This run left no steps to show (it ended before the graph started).",
                    "이 실행은 보여 줄 단계가 없습니다 (그래프가 시작되기 전에 끝났습니다)."),
}
