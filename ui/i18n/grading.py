"""UI strings of grader thresholds and calibration (issue 32): Knowledge page, sidebar, what-if; merged into ui.i18n."""

# key: (English, Korean)
GRADING_STRINGS = {
    # the Knowledge page's calibration section
    "cal_title": ("Grader calibration", "평가기 보정"),
    "cal_intro": ("Graders decide by the model's own probability of its verdict (p) against a threshold. Calibration "
                  "fits each grader's threshold for the grader model on labelled pairs of documents: runs with that "
                  "model then use them.",
                  "평가기는 모델이 자기 판정에 부여한 확률(p)을 기준값과 비교해 결정합니다. 보정은 라벨이 붙은 문서 쌍으로 "
                  "평가용 모델의 평가기별 기준값을 맞추며, 이후 그 모델로 하는 실행이 이 기준값을 씁니다."),
    "cal_done": ("{model} was calibrated on {at} ({questions} questions, {seconds} s): its runs use these thresholds.",
                 "{model} 모델은 {at}에 보정되었습니다 (질문 {questions}개, {seconds}초). "
                 "이 모델의 실행은 아래 기준값을 씁니다."),
    "cal_none": ("{model} has not been calibrated: its runs use the generic thresholds (0.5; Corrective 0.3–0.7).",
                 "{model} 모델은 아직 보정되지 않았습니다. 실행에는 일반 기준값(0.5, Corrective는 0.3–0.7)을 씁니다."),
    "cal_shipped": ("{model} has not been calibrated here: its runs use the thresholds shipped for it (fitted on the "
                    "built-in set).",
                    "{model} 모델은 여기서 보정되지 않았습니다. 실행에는 이 모델용으로 함께 제공된 기준값(기본 세트로 "
                    "맞춘 값)을 씁니다."),
    "cal_set": ("Labelled pairs from", "라벨 쌍을 만들 질문 세트"),
    "cal_builtin": ("the built-in set (sample collections)", "기본 세트 (샘플 컬렉션)"),
    "cal_saved_set": ("my collections: saved set {name}", "내 컬렉션: 저장된 세트 {name}"),
    "cal_run": ("Calibrate on the built-in set / on my collections", "기본 세트 / 내 컬렉션으로 보정"),
    "cal_run_help": ("Reads every grader's p on the set's labelled pairs (one short model call each) and fits the "
                     "thresholds; with the built-in model this takes a few minutes.",
                     "세트의 라벨 쌍마다 각 평가기의 p를 읽고(짧은 모델 호출 한 번씩) 기준값을 맞춥니다. 내장 모델로는 몇 분 "
                     "걸립니다."),
    "cal_progress": ("Reading the graders' probabilities: {done} of {total}",
                     "평가기의 확률을 읽는 중: {total}개 중 {done}개"),
    "cal_saved": ("Calibrated {model} and saved its thresholds: runs with it now use them.",
                  "{model} 모델을 보정하고 기준값을 저장했습니다. 이제 이 모델의 실행이 이 기준값을 씁니다."),
    "cal_failed": ("Calibration failed: {error}", "보정하지 못했습니다: {error}"),
    "cal_text_only": ("This model gives no token probabilities, so its verdicts are read as written text and there is "
                      "no threshold to calibrate. The built-in models, OpenAI and OpenAI-compatible servers that "
                      "return logprobs (vLLM, llama.cpp server) give them.",
                      "이 모델은 토큰 확률을 주지 않아 판정을 쓰인 글 그대로 읽으므로 보정할 기준값이 없습니다. 내장 모델, "
                      "OpenAI, logprobs를 돌려주는 OpenAI 호환 서버(vLLM, llama.cpp server)는 확률을 줍니다."),
    "cal_read_only": ("Read-only mode: calibrating the graders is switched off (it would change the thresholds "
                      "everybody's runs use). `python -m core calibrate` does it where writes are allowed.",
                      "읽기 전용 모드: 평가기 보정이 꺼져 있습니다 (모든 사람의 실행이 쓰는 기준값이 바뀌기 때문입니다). "
                      "쓰기가 허용된 곳에서 `python -m core calibrate`로 보정하세요."),
    "cal_col_grader": ("Grader", "평가기"),
    "cal_col_auc": ("AUC", "AUC"),
    "cal_col_threshold": ("Threshold", "기준값"),
    "cal_col_pairs": ("Pairs (positive)", "쌍 (양성)"),
    "cal_col_fitted": ("Fitted", "맞춘 쌍에서"),
    "cal_col_held_out": ("Held out", "따로 둔 쌍에서"),
    "cal_ratio": ("ratio to the best", "최고 문서 대비 비율"),
    "cal_not_fitted": ("not fitted: {error}", "맞추지 못함: {error}"),
    "cal_rate_positives": ("positives", "양성"),
    "cal_rate_negatives": ("negatives", "음성"),
    "cal_rate_positives_kept": ("positives kept", "유지된 양성"),
    "cal_rate_negatives_incorrect": ("negatives incorrect", "incorrect 판정 음성"),
    "cal_rate_positives_correct": ("positives correct", "correct 판정 양성"),
    "cal_rate_negatives_correct": ("negatives correct", "correct 판정 음성"),
    # the sidebar's thresholds
    "th_title": ("Grader thresholds for {model}", "{model} 모델의 평가기 기준값"),
    "th_col_value": ("threshold", "기준값"),
    "th_col_source": ("from", "출처"),
    "th_source_default": ("default", "기본값"),
    "th_source_shipped": ("shipped", "함께 제공"),
    "th_source_calibrated": ("calibrated", "보정"),
    "th_source_settings": ("settings", "설정"),
    "th_override": ("Thresholds for this session", "이 세션의 기준값"),
    "th_override_help": ("Over the calibrated ones, for your runs only, e.g. relevance=0.6, crag=0.2:0.7 (Corrective "
                         "takes lower:upper). Empty: the thresholds above.",
                         "보정된 값 위에 내 실행에만 적용합니다. 예: relevance=0.6, crag=0.2:0.7 (Corrective는 "
                         "하한:상한). 비우면 위의 기준값을 씁니다."),
    "th_bad": ("Not applied, the previous thresholds stay: {error}", "적용하지 않았고 이전 기준값을 유지합니다: {error}"),
    # what-if: a fork with other thresholds
    "wi_thresholds": ("Grader thresholds for the fork's run", "분기 실행의 평가기 기준값"),
    "wi_thresholds_help": ("e.g. relevance=0.9 or crag=0.2:0.7: the fork's graders decide with these (over the "
                           "calibrated ones). Change them and run a grading step again to see its verdicts flip.",
                           "예: relevance=0.9 또는 crag=0.2:0.7. 분기의 평가기가 이 값으로 결정합니다 (보정된 값 위에). "
                           "값을 바꾸고 평가 단계를 다시 실행하면 판정이 바뀌는지 볼 수 있습니다."),
    "wi_with_thresholds": ("thresholds", "기준값"),
}
