"""Prompts of the claim checker (core.llm.claims.check): one claim, or several, against quoted evidence.

The human message puts the evidence first and the claim last, so calls over the same evidence share
their prompt prefix and a local model reuses its cache.
"""

from core.prompts.workflow import DATA_NOTE

_VERDICTS = """- supported: the evidence states it (in any language and wording; the same figure may be written \
differently: ₩35,000 = 35,000원 = 3만 5천 원, 20:00 = 오후 8시)
- contradicted: the evidence says something different (another number, date, name or item, or the opposite)
- not_in_documents: the evidence does not say it"""

CLAIM_SYSTEM = f"""You check a sentence from an answer against evidence quoted from the user's documents. \
Judge only from the evidence, never from what you know.
{_VERDICTS}
Reply with the verdict only. {DATA_NOTE}"""

CLAIMS_SYSTEM = f"""You check numbered sentences from an answer against evidence quoted from the user's \
documents. Judge each one only from the evidence, never from what you know.
{_VERDICTS}
Reply with one verdict per sentence, in the same order. {DATA_NOTE}"""
