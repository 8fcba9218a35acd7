"""Answer scoring: the SQuAD normalisation, exact match and token F1 used by Search-R1, NQ and HotpotQA.

Normalisation lowercases, drops punctuation and the articles *a*, *an*, *the*, and collapses whitespace, so
"The Keshal Guild." and "keshal guild" match. A prediction is scored against every accepted alias and
the best score counts.

>>> normalize_answer("  The Keshal   Guild! ")
'keshal guild'
>>> exact_match("keshal guild", ["The Keshal Guild"]), round(f1_score("Keshal", ["Keshal Guild"]), 3)
(1.0, 0.667)
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Iterable

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = str.maketrans("", "", string.punctuation)


def normalize_answer(text: str) -> str:
    """Lowercase, remove punctuation, remove articles, collapse whitespace (SQuAD's ``normalize_answer``)."""
    text = text.lower().translate(_PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def exact_match(prediction: str, answers: Iterable[str]) -> float:
    """1.0 when the normalised prediction equals a normalised answer, else 0.0."""
    predicted = normalize_answer(prediction)
    return float(any(predicted == normalize_answer(a) for a in answers))


def f1_score(prediction: str, answers: Iterable[str]) -> float:
    """The best token-level F1 between the prediction and any answer (after normalisation)."""
    predicted = normalize_answer(prediction).split()
    best = 0.0
    for answer in answers:
        gold = normalize_answer(answer).split()
        common = sum((Counter(predicted) & Counter(gold)).values())
        if common:
            precision, recall = common / len(predicted), common / len(gold)
            best = max(best, 2 * precision * recall / (precision + recall))
        elif not predicted and not gold:
            best = max(best, 1.0)
    return best
