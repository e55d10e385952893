# SPDX-License-Identifier: MIT
"""Confidence elicitation: the paper's prompts and a parser for their outputs.

The beta-calibration paper elicits a confidence from the language model itself
with the two prompts of its Table 5 (App. B.1), taken from Tian et al. (2023):
``Verb1S-Top1`` asks for ``Guess: ... Probability: 0.8`` and ``Ling1S-Top1``
asks for ``Guess: ... Confidence: <expression>`` with the expression chosen
from a fixed list of probability words. :func:`parse_verbalized_confidence`
turns the raw model outputs into numbers in ``[0, 1]`` that the calibrators
can take; whatever it cannot read becomes NaN and is counted, never raised.
"""

import math
import re
from collections.abc import Mapping
from numbers import Integral
from types import MappingProxyType
from typing import NamedTuple

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_array, check_is_fitted

from ._compat import StrOptions, _fit_context, validate_params
from ._state import COMMON_RULES, FEATURES, Schema, StateChecked
from ._validation import damaged

#: Numbers the Fagen-Ulmschneider (2015) "Perception of Probability Words"
#: survey attached to each of its 17 probability words: the **median** of the
#: 123 responses, as a fraction. Computed from the survey's raw results
#: (``Perception-of-Probability-Words/survey-results.csv`` of
#: https://github.com/wadefagen/datasets, commit ``d588d8f5``); the script and
#: its output are in ``tests/data/elicitation_fagen_ulmschneider_medians.*``.
#: Keys are lower case; matching ignores case and punctuation.
LINGUISTIC_CONFIDENCE_TABLE = MappingProxyType(
    {
        "almost certain": 0.95,
        "highly likely": 0.90,
        "very good chance": 0.80,
        "probable": 0.70,
        "likely": 0.70,
        "we believe": 0.75,
        "probably": 0.70,
        "better than even": 0.60,
        "about even": 0.50,
        "we doubt": 0.20,
        "improbable": 0.10,
        "unlikely": 0.20,
        "probably not": 0.25,
        "little chance": 0.10,
        "almost no chance": 0.02,
        "highly unlikely": 0.05,
        "chances are slight": 0.10,
    }
)

_EXPRESSION_LIST = ", ".join(
    " ".join(w.capitalize() if w not in ("than", "are") else w for w in k.split())
    for k in LINGUISTIC_CONFIDENCE_TABLE
)

#: Verb1S-Top1 prompt of the paper's Table 5 (Tian et al., 2023). Fill it with
#: ``VERB1S_TOP1_PROMPT.format(question=q)``.
VERB1S_TOP1_PROMPT = (
    "Provide your best guess and the probability that it is correct (0.0 to "
    "1.0) for the following question. Give ONLY the guess and probability, no "
    "other words or explanation. For example:\n\n"
    "Guess: <most likely guess, as short as possible; not a complete sentence, "
    "just the guess!>\n"
    "Probability: <the probability between 0.0 and 1.0 that your guess is "
    "correct, without any extra commentary whatsoever; just the probability!>"
    "\n\nThe question is: {question}"
)

#: Ling1S-Top1 prompt of the paper's Table 5 (Tian et al., 2023), with the
#: paper's ``$EXPRESSION_LIST`` filled in from the keys of
#: :data:`LINGUISTIC_CONFIDENCE_TABLE` (the 17 words of the Fagen-Ulmschneider
#: survey that the paper cites). Fill it with
#: ``LING1S_TOP1_PROMPT.format(question=q)``.
LING1S_TOP1_PROMPT = (
    "Provide your best guess for the following question, and describe how "
    "likely it is that your guess is correct as one of the following "
    f"expressions: {_EXPRESSION_LIST}. Give ONLY the guess and your "
    "confidence, no other words or explanation. For example:\n\n"
    "Guess: <most likely guess, as short as possible; not a complete sentence, "
    "just the guess!>\n"
    "Confidence: <description of confidence, without any extra commentary "
    "whatsoever; just a short phrase!>\n\nThe question is: {question}"
)

#: Ordinal confidence scales that models answer with when asked for a
#: confidence without a fixed list ("Confidence: Medium", "Very high"). Unlike
#: :data:`LINGUISTIC_CONFIDENCE_TABLE` these numbers are **not** survey data:
#: they are the positions of the words on a scale cut into equal fifths (the
#: midpoints 0.1, 0.3, 0.5, 0.7, 0.9), so they only order the answers. That is
#: all a post-hoc calibrator needs (binning and scaling learn the map from this
#: order to accuracy), but read them as ranks, not as probabilities. The words
#: are common English ("high", "low"), so they are read only where the model
#: put them as its confidence (after a ``Confidence:`` label or on a line of
#: their own), never anywhere in the text.
QUALITATIVE_CONFIDENCE_TABLE = MappingProxyType(
    {
        "very low": 0.1,
        "low": 0.3,
        "medium": 0.5,
        "moderate": 0.5,
        "high": 0.7,
        "very high": 0.9,
        "not confident": 0.1,
        "somewhat confident": 0.5,
        "fairly confident": 0.7,
        "very confident": 0.9,
        "certain": 0.95,
        "fifty fifty": 0.5,
        "even odds": 0.5,
        "toss up": 0.5,
    }
)

KINDS = ("auto", "probability", "linguistic")

# A decimal number not glued to a further digit group ("0,8" and "1,000" are
# refused rather than misread as 0 and 1).
_NUM = r"(?:\d+(?:\.\d*)?|\.\d+)(?![,.]?\d)"
_OPEN = r"[\s*\"'<(\[`]*"
_CLOSE = r"[\s*\"'>)\]`.,;]*"
_PCT = r"\s*(?P<pct>%|percent\b)?"
# "3 in 4", "3 out of 4"; odds "3 to 1" (refused, see _to_value); then
# "50/50", "70-30", "50:50" (two whole numbers that add up to 100 are a split
# of 100, not a ratio) and "3/4"; then a number.
_VALUE = (
    r"(?:(?P<ia>\d+)\s+(?:in|out\s+of)\s+(?P<ib>\d+)(?![,.]?\d)"
    r"|(?P<odds>\d+\s+to\s+\d+)(?![,.]?\d)"
    r"|(?<![\d.])(?P<pa>\d{1,3})\s*(?P<sep>[/:-])\s*(?P<pb>\d{1,3})(?![,.]?\d)"
    rf"|(?P<num>{_NUM})\s*/\s*(?P<den>{_NUM})|(?P<val>{_NUM}){_PCT})"
)
# "Confidence level: 90%", "Confidence score: 0.8" are labels too.
_PROB_LABEL = (
    r"(?:probability|prob|probs|confidence|likelihood)"
    r"(?:\s+(?:level|score|rating|estimate))?"
)

# "Probability: 0.8", "**Probability:** 80%", "probability = 3/4"; the value
# may sit on the next line (the label is then followed by a newline).
_LABELED_NUMBER = re.compile(rf"(?i)\b{_PROB_LABEL}\s*\**\s*[:=]{_OPEN}{_VALUE}")
_LABEL_ONLY = re.compile(rf"(?i)\b{_PROB_LABEL}\s*\**\s*[:=]")
# A line holding nothing but a number: "0.9", "85%", "**0.7**".
_BARE_LINE = re.compile(rf"(?i)^{_OPEN}{_VALUE}{_CLOSE}$")
# "Boise, 0.99", "Extinction: 0.95", "/ Hydrology / 0.9", "Center 0.9": a
# trailing decimal (with a point) or percentage after a separator and a space,
# so that "Apollo 11", "498,00" or "3:1" are not read as probabilities.
_TRAILING = re.compile(
    rf"(?i)^(?P<guess>.*?\S)\s*(?:[,;:/|-]\s+|\s+)"
    rf"(?P<val>\d*\.\d+(?![,.]?\d)|\d+(?:\.\d+)?(?=\s*(?:%|percent\b)))"
    rf"{_PCT}{_CLOSE}$"
)
_GUESS_LABEL = re.compile(r"(?i)(?<![a-z])guess\s*\**\s*:")
_LING_LABEL = re.compile(
    r"(?i)\b(?:confidence|probability|likelihood)(?:\s+(?:level|score|rating))?"
    r"\s*\**\s*[:=][ \t*\"'<(\[]*"
)

# -- free text: a confidence stated in a sentence --------------------------
# A percentage next to a word of confidence: "I am 90% sure", "J (90%
# sure)", "100% certain.", "with 85 percent confidence".
# Only words of confidence: "80% chance" or "a probability of 30%" may be
# the answer itself (to a question about odds), never read as a confidence.
_CONF_WORD = r"(?:sure|certain|certainty|confident|confidence)"
_PCT_VALUE = r"(?P<val>\d+(?:\.\d+)?)(?![,.]?\d)\s*(?:%|percent\b|per\s+cent\b)"
_PCT_PHRASE = re.compile(rf"(?i)(?<![\d.,/\u2013-]){_PCT_VALUE}\s*{_CONF_WORD}\b")
# A word of confidence followed by its value: "my confidence is 90%", "with
# a confidence of 0.85", "confidence ~ 70 %", "certainty: 95%".
_PHRASE_VALUE = (
    r"(?P<val>\d+(?:\.\d+)?)(?![,.]?\d)\s*(?P<pct>%|percent\b|per\s+cent\b)"
    r"|(?P<dec>0?\.\d+|1\.0+)(?![,.]?\d)(?!\s*(?:/|in\b|out\b|to\b))"
)
_WORD_PHRASE = re.compile(
    r"(?i)\b(?:confidence|certainty)"
    r"(?:\s+(?:level|score|rating|estimate))?"
    r"(?:\s+(?:is|of|at|would\s+be|=|:|-|~)|\s*[:=~])+"
    r"\s*(?:about|around|approximately|approx\.?|roughly|~)?\s*"
    rf"(?<![\d.,])(?:{_PHRASE_VALUE})"
)
# Any percentage (to see whether a text states two different ones).
_ANY_PCT = re.compile(rf"(?i)(?<![\d.,]){_PCT_VALUE}")
_CONFIDENT_KEY = re.compile(r"confident|certain|sure")
# A negation in the clause of a stated confidence ("I can't be 100% sure",
# "I don't have 100% certainty", "I'm 90% sure it's not Paris") or a bound
# just before it ("at least 80% confident", "80 or 90% sure").
_NEG_WORD = re.compile(
    r"(?i)(?:\bnot\b|cannot|n['\u2019]t\b|\bnever\b|\bno\b|\bwithout\b|"
    r"\bhardly\b|\bbarely\b|\binstead\s+of\b|\bincorrect\b|\bwrong\b|"
    r"\bfalse\b)"
)
_BOUND = re.compile(
    r"(?i)(?:\bless\s+than|\bmore\s+than|\bat\s+least|\bat\s+most|\bover|"
    r"\bunder|\bbelow|\babove|\bup\s+to|\bnearly|\balmost|\bfrom|\bbetween|"
    r"\bor|\bto|\band|[<>\u2264\u2265])[\s*\"'(]*$"
)
_CLAUSE_BREAK = re.compile(r"[.!?;:\n()\[\]]|,|\bbut\b|\bhowever\b|\bthough\b")
# The words of a qualitative confidence in a sentence: "High confidence",
# "my confidence is very high", "Confidence level: high", "I am fairly
# confident" (the word must be a key of the qualitative or linguistic table).
_QUAL_BEFORE = re.compile(r"(?i)\b(?P<words>(?:[a-z]+\s+){0,2}?[a-z]+)\s+confidence\b")
_QUAL_AFTER = re.compile(
    r"(?i)\bconfidence(?:\s+(?:level|score|rating))?"
    r"(?:\s+(?:is|would\s+be|remains)|\s*[:=-])+[\s*\"']*"
    r"(?P<words>[a-z][a-z ,-]{0,40})"
)
_QUAL_SELF = re.compile(
    r"(?i)\b(?:i\s+am|i'm|i\u2019m|im|i\s+feel)\s+(?P<words>[a-z][a-z ,-]{0,40})"
)
# Where a clause ends, for an expression of the table in free text.
_ANY_CLAUSE = re.compile(r"[.!?;:,\n()\[\]/|]|\s-+\s|\bbut\b")
_COMPARATIVE = frozenset(["more", "less", "most", "least", "equally", "as", "not"])
# Qualitative phrases are read in short answers only: in a longer text
# ("Let's think step by step ... I'm not confident that it has 4440
# statues") they are as often about a step of the reasoning as about the
# answer.
_SHORT = 400
# A numbered option of a listed scale: "5. Medium.", "3) High".
_NUMBERED = re.compile(r"^\s*\d{1,2}\s*[.):-]\s+(?=[A-Za-z])")


class ParsedConfidence(NamedTuple):
    """Result of :func:`parse_verbalized_confidence`.

    A named tuple, so ``conf, guess, n_bad, source = parse_...(texts)`` works
    as well as attribute access.

    Attributes
    ----------
    confidence : ndarray of shape (n,), dtype float64
        The elicited confidence in ``[0, 1]``, NaN where none could be read.
    guess : ndarray of shape (n,), dtype object
        The model's answer (``Guess: ...``) as a ``str``, ``None`` where no
        answer could be located.
    n_unparseable : int
        ``int(np.isnan(confidence).sum())``.
    source : ndarray of shape (n,), dtype object
        Which rule produced each value: ``"label"`` (``Probability: 0.8``),
        ``"line"`` (a line holding only a number), ``"trailing"`` (``Paris,
        0.8``), ``"linguistic-label"`` (``Confidence: highly likely``),
        ``"linguistic"`` (an expression elsewhere in the text),
        ``"out-of-range"`` (a number was found but lies outside ``[0, 1]``,
        e.g. ``Probability: 2.0`` or ``85`` without ``%``) or ``"none"``.
    """

    confidence: np.ndarray
    guess: np.ndarray
    n_unparseable: int
    source: np.ndarray


def _check_table(table, name):
    if not isinstance(table, Mapping) or not table:
        raise ValueError(
            f"{name} must be a non-empty mapping from expression (str) to a "
            f"probability in [0, 1]; got {type(table).__name__}."
        )
    for key, value in table.items():
        ok = isinstance(value, int | float | np.integer | np.floating)
        if not isinstance(key, str) or not _normalise(key) or not ok:
            raise ValueError(
                f"{name} must map non-empty expressions (str) to probabilities; "
                f"got the entry {key!r}: {value!r}."
            )
        if not 0.0 <= float(value) <= 1.0:
            raise ValueError(
                f"{name} maps {key!r} to {value!r}; probabilities must lie in [0, 1]."
            )


def _read_scale(scale):
    """``(low, high)`` of the numeric scale, ``None`` for the [0, 1] default."""
    if scale is None:
        return None
    if isinstance(scale, str):
        if scale == "percent":
            return (0.0, 100.0)
        raise ValueError(
            f"scale must be None, 'percent' or a (low, high) pair; got {scale!r}."
        )
    try:
        low, high = (float(v) for v in scale)
    except (TypeError, ValueError):
        raise ValueError(
            "scale must be None, 'percent' or a (low, high) pair of numbers such "
            f"as (1, 5) or (0, 10); got {scale!r}."
        ) from None
    if not (math.isfinite(low) and math.isfinite(high) and low < high):
        raise ValueError(f"scale=(low, high) needs finite low < high; got {scale!r}.")
    return (low, high)


def _to_value(match, scale=None):
    """``(value, reason)`` from a ``_VALUE`` match.

    ``value`` is in [0, 1], or NaN with ``reason`` one of ``"out-of-range"``
    and ``"needs-scale"`` (a whole number from 2 to 10 with no ``scale``:
    "Confidence: 4" is a point of a 1-5 or 1-10 scale the parser cannot
    know).
    """
    groups = match.groupdict()
    if groups.get("odds") is not None:  # "3 to 1": for or against?
        return math.nan, "out-of-range"
    if groups.get("ia") is not None:
        den = float(groups["ib"])
        value = float(groups["ia"]) / den if den > 0 else math.nan
    elif groups.get("pa") is not None:
        a, b = int(groups["pa"]), int(groups["pb"])
        if a + b == 100:
            value = a / 100.0
        elif groups["sep"] == "/":
            value = a / b if b > 0 else math.nan
        else:  # "3:1", "3-4": odds for or against, a range: not guessed at
            value = math.nan
    elif groups.get("num") is not None:
        den = float(groups["den"])
        value = float(groups["num"]) / den if den > 0 else math.nan
    else:
        text = groups["val"]
        value = float(text)
        if groups.get("pct"):
            value /= 100.0
        elif scale is not None:
            low, high = scale
            value = (value - low) / (high - low) if low <= value <= high else math.nan
        elif 1.0 < value <= 100.0 and len(text.partition(".")[2]) >= 3:
            # "99.99999999999999999": no 1-5 or 1-10 scale point and no
            # probability has three or more decimals above 1; a percentage
            # without its sign is the only reading.
            value /= 100.0
        elif value.is_integer() and 2 <= value <= 10 and "." not in text:
            return math.nan, "needs-scale"
    if 0.0 <= value <= 1.0:
        return value, None
    return math.nan, "out-of-range"


def _clean_guess(text):
    text = text.strip().strip("*").strip()
    return text or None


def _find_guess(text, lines):
    """The text after the first ``Guess:`` label (or on the next line)."""
    m = _GUESS_LABEL.search(text)
    if m is None:
        return None
    rest = text[m.end() :]
    line, _, after = rest.partition("\n")
    label = _LABEL_ONLY.search(line)
    if label is not None:
        line = line[: label.start()]
    guess = _clean_guess(line)
    if guess is None:
        for nxt in after.split("\n"):
            if _LABEL_ONLY.search(nxt) or _GUESS_LABEL.search(nxt):
                break
            if nxt.strip():
                return _clean_guess(nxt)
    return guess


def _line_near(lines, i):
    """The nearest non-empty line before line ``i`` (else after it)."""
    for line in [*reversed(lines[:i]), *lines[i + 1 :]]:
        if line.strip():
            return _clean_guess(line)
    return None


def _normalise(text):
    return " ".join(re.sub(r"[^0-9a-z]+", " ", text.lower()).split())


class _Linguistic:
    """Longest-match lookup of probability expressions in normalised text.

    ``table`` expressions are found anywhere; ``qualitative`` words (common
    English, "high", "low") only where they are the stated confidence: after a
    ``Confidence:`` label or alone on a line. ``table`` wins where both hold a
    key.
    """

    def __init__(self, table, qualitative):
        self.table = {_normalise(k): float(v) for k, v in table.items()}
        self.labeled_table = {
            **{_normalise(k): float(v) for k, v in qualitative.items()},
            **self.table,
        }
        self.at_start = self._compile(self.labeled_table, r"^(", r")\b")

    @staticmethod
    def _compile(table, head, tail):
        keys = sorted(table, key=len, reverse=True)
        return re.compile(head + "|".join(map(re.escape, keys)) + tail)

    def labeled(self, text):
        """Value after ``Confidence:``; ``None`` if there is no such label
        or no word after it (``Probability: 0,8`` states no expression)."""
        m = _LING_LABEL.search(text)
        if m is None:
            return None
        rest = text[m.end() :]
        region = ""
        for line in rest.split("\n"):
            if line.strip():
                region = line
                break
        region = _normalise(region)
        if not re.search("[a-z]", region):
            return None
        hit = self.at_start.match(region)
        return self.labeled_table[hit.group(1)] if hit else math.nan

    def line(self, lines):
        """``(index, value)`` of the last line that is only an expression
        (after an option number of a listed scale: ``5. Medium.``)."""
        for i in range(len(lines) - 1, -1, -1):
            value = self.labeled_table.get(_normalise(_NUMBERED.sub("", lines[i])))
            if value is not None:
                return i, value
        return None

    def starting(self, words, *, confident_only=False):
        """Value of the expression that starts ``words`` (NaN if none)."""
        hit = self.at_start.match(_normalise(words))
        if hit is None or (confident_only and not _CONFIDENT_KEY.search(hit[1])):
            return math.nan
        return self.labeled_table[hit.group(1)]

    def ending(self, words):
        """Value of the longest expression that ends ``words`` (NaN if none)."""
        norm = _normalise(words).split()
        for k in range(min(len(norm), 3), 0, -1):
            value = self.labeled_table.get(" ".join(norm[-k:]))
            if value is not None:
                return value
        return math.nan

    def anywhere_last(self, text):
        """Value of the last clause that ends in an expression of ``table``
        ("Paris - likely", "I'd say chances are slight."); an expression
        inside a clause ("is most likely to be released in 2018") is part
        of the answer, not its confidence."""
        for clause in reversed(_ANY_CLAUSE.split(text)):
            words = _normalise(clause).split()
            for k in range(min(len(words), 4), 0, -1):
                value = self.table.get(" ".join(words[-k:]))
                if value is not None:
                    if len(words) > k and words[-k - 1] in _COMPARATIVE:
                        return math.nan  # "or more likely, inductor"
                    return value
        return math.nan


def _negated(text, start, end):
    """Whether the clause of the statement at ``text[start:end]`` negates
    or bounds it: a negation before it in its clause or after it up to the
    clause's end, or a bound just before it (see ``_NEG_WORD``, ``_BOUND``)."""
    head = _CLAUSE_BREAK.split(text[max(0, start - 80) : start])[-1]
    tail = _CLAUSE_BREAK.split(text[end : end + 80])[0]
    return bool(_NEG_WORD.search(head) or _NEG_WORD.search(tail) or _BOUND.search(head))


def _free_text(text, ling, numeric, words, scale):
    """``(value, reason, start, is_number, only_negated)`` of a confidence
    stated in a sentence, or ``None`` where the text states none.

    Numbers next to a word of confidence (``I am 90% sure``, ``my confidence
    is 0.8``) win over qualitative phrases (``High confidence``); a text with
    two different values, a percentage beside a qualitative phrase, or a
    negation or bound before the statement gives NaN with the reason
    ``"ambiguous"`` or ``"negated-or-bound"``: never guessed.
    """
    found = []  # (value, start, negated)
    number = True
    if numeric:
        for m in [*_PCT_PHRASE.finditer(text), *_WORD_PHRASE.finditer(text)]:
            if m.groupdict().get("dec") is not None:
                if scale is not None:  # a plain number is a point of the scale
                    continue
                value = float(m["dec"])
            else:
                value = float(m["val"]) / 100.0
            at = m.start("val") if m["val"] is not None else m.start("dec")
            found.append((value, m.start(), _negated(text, at, m.end())))
    if not any(not f[2] for f in found) and words and len(text) <= _SHORT:
        number = False
        for pattern, read in (
            (_QUAL_AFTER, ling.starting),
            (_QUAL_BEFORE, ling.ending),
            (_QUAL_SELF, lambda w: ling.starting(w, confident_only=True)),
        ):
            for m in pattern.finditer(text):
                value = read(m["words"])
                if value == value:
                    negated = _negated(text, m.start("words"), m.end())
                    found.append((value, m.start(), negated))
    if not found:
        return None
    stated = [f for f in found if not f[2]]
    if not stated:  # only negated or bounded statements: the last resort
        return math.nan, "negated-or-bound", found[0][1], number, True
    start = min(f[1] for f in stated)
    # every value the text states, negated or not: "90% sure or 80% sure"
    # and "90% sure, not 80%" are two readings, never one guessed; only "not
    # 100% sure" agrees with any stated value below 1 ("I'm 90% sure ... I
    # am not 100% certain")
    below_one = all(f[0] < 1.0 for f in stated)
    values = {
        round(f[0], 12) for f in found if not (f[2] and f[0] == 1.0 and below_one)
    }
    percentages = {round(float(m["val"]) / 100.0, 12) for m in _ANY_PCT.finditer(text)}
    if below_one:
        percentages.discard(1.0)
    said = {round(f[0], 12) for f in stated}
    if any(f[2] and round(f[0], 12) in said for f in found):
        # "I am 100% sure. I can't be 100% certain": it says and unsays it
        return math.nan, "ambiguous", start, number, False
    if len(values) > 1 or (percentages - values):
        return math.nan, "ambiguous", start, number, False
    value = values.pop()
    if not 0.0 <= value <= 1.0:
        return math.nan, "out-of-range", start, number, False
    return value, None, start, number, False


_FILLER_END = re.compile(
    r"(?i)(?:\b(?:i\s*am|i'?m|i\u2019m|i\s+feel|my|with|at|is|be|about|around|"
    r"approximately|roughly|and|but|so|a|the)\W*|\W+)$"
)


def _free_text_guess(text, lines, start):
    """The answer before a stated confidence (``J (90% sure)`` gives ``J``),
    else the nearest other line; ``None`` where only filler precedes it."""
    before = text[:start]
    i = before.count("\n")
    head = before.split("\n")[-1]
    for _ in range(4):
        head = _FILLER_END.sub("", head)
    head = _clean_guess(head.strip("([{-,;:"))
    if head is not None and re.search(r"[A-Za-z0-9]", head):
        if not re.match(r"(?i)(?:i|my|with|and|but)\b", head):
            return head
    return _line_near(lines, i)


def _phrase(free, text, lines, guess, may_infer):
    value, why, start = free[:3]
    if may_infer and why is None:
        guess = _free_text_guess(text, lines, start)
    return value, guess, why or "phrase"


def _parse_one(text, kind, ling, scale):
    """``(confidence, guess, source)`` for one model output."""
    lines = text.split("\n")
    guess = _find_guess(text, lines)
    # Fall back to other lines for the guess only if there is no Guess label
    # at all ("Guess: \nProbability: 0.8" has an empty guess, not "Guess:").
    may_infer = _GUESS_LABEL.search(text) is None
    numeric = kind in ("auto", "probability")
    words = kind in ("auto", "linguistic")

    # a confidence stated in a sentence ("I am 90% sure"): read after the
    # labels, but a label that it contradicts is not trusted either
    free = _free_text(text, ling, numeric, words, scale)
    weak = free is not None and free[4]  # only "not 90% sure": no statement
    if weak:
        free = None
    stated = None
    if free is not None and free[3] and free[0] == free[0]:
        stated = free[0]  # a number: "I am 90% sure"

    m = _LABELED_NUMBER.search(text) if numeric else None
    if m is not None:
        value, reason = _to_value(m, scale)
        if may_infer:
            before = text[: m.start()].strip().split("\n")
            guess = _clean_guess(before[-1]) if before[-1].strip() else None
        if value == value and stated is not None and abs(stated - value) > 1e-12:
            return math.nan, guess, "ambiguous"
        return value, guess, reason or "label"

    # A "Confidence:" label whose value is not an expression of the tables
    # ("very likely") is unparseable: no partial match elsewhere in the text.
    label_seen = False
    if words:
        value = ling.labeled(text)
        label_seen = value is not None
        if value == value and label_seen:
            # "Confidence: High (90%)": a word and a number, two readings
            others = {float(p["val"]) / 100.0 for p in _ANY_PCT.finditer(text)}
            if stated is not None:
                others.add(stated)
            if any(abs(o - value) > 1e-12 for o in others):
                return math.nan, guess, "ambiguous"
            return value, guess, "linguistic-label"

    if free is not None and free[3]:
        return _phrase(free, text, lines, guess, may_infer)

    reason = None
    if numeric:
        bare = [(i, _BARE_LINE.match(line.strip())) for i, line in enumerate(lines)]
        bare = [(i, m) for i, m in bare if m is not None]
        if bare:
            read = [(i, *_to_value(m, scale)) for i, m in bare]
            in_range = [(i, v) for i, v, _ in read if v == v]
            if in_range:
                i, value = in_range[-1]
                if may_infer:
                    guess = _line_near(lines, i)
                return value, guess, "line"
            reason = read[-1][2]
        for line in lines:
            m = _TRAILING.match(line.strip())
            if m is None:
                continue
            value, _ = _to_value(m, scale)
            if value == value:
                if may_infer or (guess or "").endswith(m.group("val")):
                    head = m.group("guess")
                    g = _GUESS_LABEL.search(head)
                    guess = _clean_guess(head[g.end() :] if g else head)
                    guess = guess.rstrip(",;:/|-").strip() if guess else None
                return value, guess, "trailing"

    if free is not None:  # "High confidence", after any stated number
        return _phrase(free, text, lines, guess, may_infer)

    if words and not label_seen:
        hit = ling.line(lines)
        if hit is not None:
            i, value = hit
            if may_infer:
                guess = _line_near(lines, i)
            return value, guess, "linguistic-line"
    if reason is not None:
        return math.nan, guess, reason
    if label_seen:
        return math.nan, guess, "unknown-expression"
    if weak:
        return math.nan, guess, "negated-or-bound"
    if words and len(text) <= _SHORT:
        value = ling.anywhere_last(text)
        if value == value:
            return value, guess, "linguistic"
    return math.nan, guess, "none"


@validate_params(
    {
        # texts and table get their own checks below, with messages that say
        # how to fix the input (a lone string, nested lists, bad entries).
        "texts": "no_validation",
        "kind": [StrOptions(set(KINDS))],
        "table": "no_validation",
        "qualitative": "no_validation",
        "scale": "no_validation",
    },
    prefer_skip_nested_validation=True,
)
def parse_verbalized_confidence(
    texts, *, kind="auto", table=None, qualitative=None, scale=None
):
    """Read elicited confidences out of raw language-model outputs.

    Parses the answers to the paper's two elicitation prompts
    (:data:`VERB1S_TOP1_PROMPT`, :data:`LING1S_TOP1_PROMPT`; Table 5, App.
    B.1): ``Guess: Paris\\nProbability: 0.8``, percentages (``80%``) and
    fractions (``3/4``), and linguistic expressions (``Confidence: highly
    likely``, ``Confidence: Medium``) mapped to numbers with ``table`` and
    ``qualitative``, splits and odds (``50/50``, ``3 in 4``) and points of a
    numeric scale (``Confidence: 4`` with ``scale=(1, 5)``). Real outputs are messy
    (missing labels, ``Paris, 0.8``, trailing chatter, markdown); every rule
    is listed in the Notes. A text that yields no value in ``[0, 1]`` gives
    NaN and is counted; no input string ever raises.

    Parameters
    ----------
    texts : str sequence of shape (n,)
        A list, tuple, 1-D array or pandas Series of model outputs. ``None``
        and NaN entries give NaN; any other non-string entry is converted
        with ``str``.
    kind : {"auto", "probability", "linguistic"}, default="auto"
        ``"probability"`` reads only numbers, ``"linguistic"`` only
        expressions from ``table``; ``"auto"`` tries a labeled number, then a
        labeled expression, then an unlabeled number, then an expression
        anywhere in the text.
    table : mapping of str to float, default=None
        Expression -> probability in ``[0, 1]``. ``None`` uses
        :data:`LINGUISTIC_CONFIDENCE_TABLE` (the Fagen-Ulmschneider 2015
        survey medians). Matching ignores case, punctuation and extra spaces
        and prefers the longest expression ("highly unlikely" over
        "unlikely").
    qualitative : mapping of str to float, default=None
        Words of an ordinal confidence scale ("Very low" ... "Very high"),
        read only after a ``Confidence:`` label or alone on a line, since
        they are common words. ``None`` uses
        :data:`QUALITATIVE_CONFIDENCE_TABLE`; ``{}`` reads none. ``table``
        wins where both hold the same expression.
    scale : None, "percent" or (low, high), default=None
        How to read a plain number (no ``%``, not a fraction). ``None``: the
        prompt asked for a probability in [0, 1], so other numbers give NaN
        (a whole number from 2 to 10 with the reason ``"needs-scale"``).
        ``"percent"``: the prompt asked for 0-100. ``(low, high)``: the
        prompt asked for a point of that scale (``(1, 5)``, ``(1, 10)``),
        mapped linearly so that ``low`` gives 0 and ``high`` gives 1; pass
        ``(0, 10)`` if "7 out of 10" should mean 0.7.

    Returns
    -------
    result : ParsedConfidence
        Named tuple ``(confidence, guess, n_unparseable, source)``:
        float64 confidences with NaN where unparseable, the located guesses
        (object array, ``None`` where absent), the number of NaN rows and,
        per row, the name of the rule that produced the value, or for a NaN
        the reason: ``"out-of-range"``, ``"needs-scale"``,
        ``"unknown-expression"`` or ``"none"``.

    See Also
    --------
    VERB1S_TOP1_PROMPT, LING1S_TOP1_PROMPT : the prompts whose answers this
        parses.
    LINGUISTIC_CONFIDENCE_TABLE : the default expression -> number table.
    QUALITATIVE_CONFIDENCE_TABLE : the default ordinal-scale words.

    Notes
    -----
    Rules, first match wins (``kind="auto"``):

    1. ``label``: the first ``Probability:`` / ``Confidence:`` /
       ``Likelihood:`` label (any case, optional markdown ``**``, the value
       may be on the next line) followed by a number, ``80%``,
       ``80 percent``, ``a/b``, ``a in b`` or ``a out of b``. Two whole
       numbers that add up to 100 are a split (``50/50``, ``70-30``,
       ``50:50`` give 0.5, 0.7, 0.5), not a ratio. Odds ``3:1`` or ``3 to
       1`` are refused: for or against cannot be told. A plain number is
       read on ``scale``; with ``scale=None`` a number above 1 with three
       or more decimals (``99.99999999999999999``) is a percentage without
       its sign, and any other number outside ``[0, 1]``
       (``Probability: 2.0``, ``Probability: 85``) gives NaN with reason
       ``"out-of-range"`` (``"needs-scale"`` for 2 to 10): ``85`` without a
       ``%`` is ambiguous, so it is not guessed to mean 85%.
    2. ``linguistic-label``: ``Confidence: <expression>``, the expression
       (of ``table`` or ``qualitative``) must start the label's value; any
       other (``Confidence: very likely``) gives NaN with reason
       ``"unknown-expression"`` rather than a partial match.
    3. ``line``: the last line that holds only a number in ``[0, 1]`` (or a
       percentage, or a point of ``scale``): ``Paris\\n0.9``.
    4. ``trailing``: the first line ending in a separator and a decimal
       with a point or a percentage: ``Boise, 0.99``, ``ATP: 0.95``,
       ``Center 0.9``. Integers are not read here (``Apollo 11``).
    5. ``linguistic-line``: the last line that holds only an expression of
       ``table`` or ``qualitative``: ``Paris\\nVery high``.
    6. ``linguistic``: the last expression of ``table`` anywhere in the text.

    Comma decimals (``0,8``) are refused, never misread as 0. The guess is
    the text after the first ``Guess:`` label, else the text the number
    trails, else the first other non-empty line.

    On the 108,407 verb-prompt outputs of the Influences-on-LLM-Calibration
    study (Xia et al., 2025) whose own extracted value is valid, the values
    agree with the study's extraction on more than 99.9% of rows
    (``tests/test_elicitation.py``).

    The table's numbers are the medians of the 123 responses to the
    Fagen-Ulmschneider (2015) survey, computed from its published raw data;
    they are not the CIA/Kent (1964) numbers of the "classic" study that the
    survey revisits. Medians of a 123-person internet survey are coarse (many
    are round numbers); pass ``table`` to use your own.

    References
    ----------
    .. [1] K. Tian et al. "Just Ask for Calibration: Strategies for Eliciting
       Calibrated Confidence Scores from Language Models Fine-Tuned with Human
       Feedback." EMNLP 2023.
    .. [2] W. Fagen-Ulmschneider. "Perception of Probability Words." Survey,
       2015. https://github.com/wadefagen/datasets/tree/master/Perception-of-Probability-Words

    Examples
    --------
    >>> from sklearn_betacal import parse_verbalized_confidence
    >>> out = parse_verbalized_confidence([
    ...     "Guess: Paris\\nProbability: 0.8",
    ...     "Guess: Lyon\\nProbability: 35%",
    ...     "Guess: Nice\\nConfidence: Highly likely",
    ...     "I cannot answer that.",
    ... ])
    >>> out.confidence
    array([0.8 , 0.35, 0.9 ,  nan])
    >>> out.guess.tolist()
    ['Paris', 'Lyon', 'Nice', None]
    >>> out.n_unparseable
    1
    """
    if isinstance(texts, str | bytes):
        raise ValueError(
            "texts must be a sequence of model outputs, got a single string; "
            "wrap it in a list: parse_verbalized_confidence([text])."
        )
    if table is None:
        table = LINGUISTIC_CONFIDENCE_TABLE
    _check_table(table, "table")
    if qualitative is None:
        qualitative = QUALITATIVE_CONFIDENCE_TABLE
    if qualitative:
        _check_table(qualitative, "qualitative")
    elif not isinstance(qualitative, Mapping):
        raise ValueError(
            "qualitative must be a mapping from expression (str) to a "
            f"probability in [0, 1]; got {type(qualitative).__name__}."
        )
    scale = _read_scale(scale)
    ling = _Linguistic(table, qualitative)

    values = texts.tolist() if hasattr(texts, "tolist") else texts
    try:
        values = list(values)
    except TypeError:
        raise ValueError(
            "texts must be a sequence (list, array, Series) of model outputs; "
            f"got {type(texts).__name__}."
        ) from None
    if any(isinstance(v, list | tuple | np.ndarray) for v in values):
        raise ValueError(
            "texts must be 1-D: one model output per entry; got nested "
            "sequences. Pass a single column of outputs."
        )

    n = len(values)
    confidence = np.full(n, np.nan)
    guess = np.full(n, None, dtype=object)
    source = np.full(n, "none", dtype=object)
    for i, text in enumerate(values):
        if not isinstance(text, str):
            if text is None or (pd.api.types.is_scalar(text) and pd.isna(text)):
                continue
            text = str(text)
        confidence[i], guess[i], source[i] = _parse_one(text, kind, ling, scale)
    n_bad = int(np.count_nonzero(np.isnan(confidence)))
    return ParsedConfidence(confidence, guess, n_bad, source)


# --------------------------------------------------------------------------
# reading a confidence column as a model file records it
# --------------------------------------------------------------------------

#: how a confidence column may be written: probabilities in [0, 1],
#: percentages in [0, 100], or the model's own text
CONFIDENCE_FORMATS = ("number", "percent", "verbalized")


def read_confidence_values(
    values, confidence_format, *, scale=None, table=None, qualitative=None
):
    """Float confidences of one column, NaN where missing or unreadable.

    The one reading that ``betacal fit`` / ``apply`` / ``report`` and
    :class:`ConfidenceReader` share. ``"number"``: the values as numbers;
    ``"percent"``: divided by 100; ``"verbalized"``: read by
    :func:`parse_verbalized_confidence` with ``scale``, ``table`` and
    ``qualitative``. A value that is no number (``"number"``,
    ``"percent"``) is NaN here too: the callers count and refuse it with
    their own words, as they do values outside the scale (left as they are,
    e.g. 1.6 or -0.1).
    """
    return read_confidence(
        values, confidence_format, scale=scale, table=table, qualitative=qualitative
    )[0]


def read_confidence(values, confidence_format, *, scale=None, table=None,
                    qualitative=None):  # fmt: skip
    """``(confidence, source)``: :func:`read_confidence_values` and, for
    ``"verbalized"``, the parser's rule or reason per row (``None``
    otherwise), so that callers can say why rows stayed unread."""
    values = pd.Series(values).reset_index(drop=True)
    if confidence_format == "verbalized":
        out = parse_verbalized_confidence(
            values.to_numpy(dtype=object),
            scale=scale,
            table=table,
            qualitative=qualitative,
        )
        return out.confidence, out.source
    numeric = pd.to_numeric(values, errors="coerce").to_numpy(dtype=np.float64)
    return (numeric / 100.0 if confidence_format == "percent" else numeric), None


def unread_summary(texts, source, *, n_examples=3):
    """``{reason: (count, [examples])}`` of the rows a verbalized reading
    left NaN (``source`` from :func:`read_confidence`), largest first; the
    examples are the first texts of each reason, cut to 60 characters."""
    texts = pd.Series(texts).reset_index(drop=True)
    source = np.asarray(source, dtype=object)
    unread = ~np.isin(source, _READ_SOURCES)
    summary = {}
    for reason in pd.unique(source[unread]):
        rows = np.flatnonzero(source == reason)
        examples = [str(texts.iloc[i])[:60] for i in rows[:n_examples]]
        summary[str(reason)] = (int(rows.size), examples)
    return dict(sorted(summary.items(), key=lambda kv: -kv[1][0]))


_READ_SOURCES = [
    "label", "line", "trailing", "linguistic-label", "linguistic-line",
    "linguistic", "phrase",
]  # fmt: skip


def _check_reader(owner, state):
    """The confidence column is one the reader was fitted on: a position
    below ``n_features_in_``, or a name among ``feature_names_in_`` (a
    column changed into another valid value read other numbers)."""
    col, n = state["confidence_column"], state["n_features_in_"]
    names = state.get("feature_names_in_")
    if isinstance(col, str):
        if names is None or col not in list(names):
            raise damaged(owner, f"confidence_column={col!r} is not a fitted column")
    elif not -n <= col < n:
        raise damaged(owner, f"confidence_column={col!r} is not one of the "
                      f"{n} fitted columns")  # fmt: skip


class ConfidenceReader(StateChecked, TransformerMixin, BaseEstimator):
    """Read the confidence column of raw input as the calibrator was fitted on.

    A calibrator takes confidences in ``[0, 1]``; an answer log holds them
    as percentages or as the model's own words (``"Guess: Paris\\n
    Probability: 80%"``, Table 5 of the paper). Put this reader in front of
    the calibrator (``make_pipeline(ConfidenceReader(...), calibrator)``) and
    the pipeline reads the raw log the same way every time: ``betacal fit
    --percent`` / ``--verbalized`` saves exactly that pipeline, so the model
    file records how its input was read and ``sklearn_betacal.io.load(path)
    .predict_proba(raw_frame)`` reads raw strings as ``betacal apply`` does.
    The other columns (the features of beta) pass through unchanged; a
    DataFrame may hold more columns than it was fitted on (the whole log):
    those it was fitted on are taken by name, in their fitted order.

    Parameters
    ----------
    confidence_column : int or str, default=0
        The confidence column: a position, or a DataFrame column name.
    confidence_format : {"number", "percent", "verbalized"}, default="number"
        ``"number"``: probabilities in ``[0, 1]``; ``"percent"``: numbers in
        ``[0, 100]``; ``"verbalized"``: model text read by
        :func:`parse_verbalized_confidence`.
    scale : None, "percent" or (low, high), default=None
        ``"verbalized"`` only: how a plain number in the text is read
        (``Confidence: 5`` on a 1-6 scale is ``scale=(1, 6)``); see
        :func:`parse_verbalized_confidence`.
    table : mapping of str to float, default=None
        ``"verbalized"`` only: expression -> probability; ``None`` is
        :data:`LINGUISTIC_CONFIDENCE_TABLE`.
    qualitative : mapping of str to float, default=None
        ``"verbalized"`` only: words of an ordinal scale; ``None`` is
        :data:`QUALITATIVE_CONFIDENCE_TABLE`, ``{}`` reads none.

    The three options are stored with the reader (and so in a model file
    that holds it): the file reads its input as it was read at fit time.

    Attributes
    ----------
    n_features_in_ : int
        Number of columns of ``X`` seen in :meth:`fit`.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Column names of ``X``, when it was a DataFrame with string names.

    See Also
    --------
    parse_verbalized_confidence : the parser of ``"verbalized"``.

    Examples
    --------
    >>> import pandas as pd
    >>> from sklearn_betacal import ConfidenceReader
    >>> raw = pd.DataFrame({"response": ["Guess: Paris\\nProbability: 0.8",
    ...                                  "Lyon, 35%"], "topic": ["geo", "geo"]})
    >>> reader = ConfidenceReader("response", confidence_format="verbalized")
    >>> reader.fit_transform(raw)["response"].tolist()
    [0.8, 0.35]
    >>> reader.read(pd.DataFrame({"response": ["no idea"], "topic": ["geo"]}))
    array([nan])
    """

    _parameter_constraints = {
        "confidence_column": [Integral, str],
        "confidence_format": [StrOptions(set(CONFIDENCE_FORMATS))],
        # checked in fit with the parser's own messages
        "scale": "no_validation",
        "table": "no_validation",
        "qualitative": "no_validation",
    }

    _state_schema = Schema(
        **FEATURES,
        rules=(*COMMON_RULES, lambda owner, state: _check_reader(owner, state)),
    )

    def __init__(
        self,
        confidence_column=0,
        *,
        confidence_format="number",
        scale=None,
        table=None,
        qualitative=None,
    ):
        self.confidence_column = confidence_column
        self.confidence_format = confidence_format
        self.scale = scale
        self.table = table
        self.qualitative = qualitative

    def _options(self):
        return {"scale": self.scale, "table": self.table,
                "qualitative": self.qualitative}  # fmt: skip

    def _column(self, X):
        """The confidence column of ``X`` as a Series."""
        col = self.confidence_column
        if hasattr(X, "columns"):
            if isinstance(col, str):
                if col not in X.columns:
                    raise ValueError(
                        f"confidence_column={col!r} is not a column of X; its "
                        f"columns are {list(X.columns)[:12]}."
                    )
                return pd.Series(X[col])
            return pd.Series(X.iloc[:, col])
        if isinstance(col, str):
            raise ValueError(
                f"confidence_column={col!r} names a column, but X has no column "
                "names; pass a DataFrame or the column's position."
            )
        arr = np.asarray(X)
        return pd.Series(arr if arr.ndim == 1 else arr[:, col])

    def _check_X(self, X, *, reset):
        fitted = getattr(self, "feature_names_in_", None)
        if not reset and fitted is not None and hasattr(X, "columns"):
            # the columns it was fitted on, by name, out of a whole log
            missing = [c for c in fitted if c not in X.columns]
            if missing:
                raise ValueError(
                    f"X lacks the column(s) {missing[:5]} that ConfidenceReader "
                    f"was fitted on; its columns are {list(X.columns)[:12]}."
                )
            if list(X.columns) != list(fitted):
                X = X[list(fitted)]
        if not hasattr(X, "columns"):
            X = check_array(X, dtype=None, ensure_all_finite=False, ensure_2d=False)
        n = 1 if X.ndim == 1 else X.shape[1]
        names = None
        if hasattr(X, "columns") and all(isinstance(c, str) for c in X.columns):
            names = np.asarray(X.columns, dtype=object)
        if reset:
            self.n_features_in_ = n
            if names is not None:
                self.feature_names_in_ = names
            elif hasattr(self, "feature_names_in_"):
                del self.feature_names_in_
        elif n != self.n_features_in_:
            raise ValueError(
                f"X has {n} features, but ConfidenceReader is expecting "
                f"{self.n_features_in_} features as input."
            )
        col = self.confidence_column
        if isinstance(col, Integral) and not -n <= col < n:
            raise ValueError(
                f"confidence_column={col} is out of range for X with {n} columns."
            )
        return X

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Check ``X`` and remember its columns (nothing is learned).

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
        y : ignored

        Returns
        -------
        self : ConfidenceReader
        """
        if self.confidence_format == "verbalized":
            # the parser's own checks of the options, with its messages
            parse_verbalized_confidence([], **self._options())
        elif any(v is not None for v in self._options().values()):
            raise ValueError(
                "scale, table and qualitative read model text: they need "
                "confidence_format='verbalized', got confidence_format="
                f"{self.confidence_format!r}"
            )
        self._check_X(X, reset=True)
        return self

    def read(self, X):
        """The confidences of ``X`` in ``[0, 1]``, NaN where none can be read.

        Missing values and texts that state no confidence (``"I don't
        know"``) give NaN, so that ``X[~np.isnan(reader.read(X))]`` keeps the
        rows a calibrator can take.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)

        Returns
        -------
        confidence : ndarray of shape (n_samples,), float64

        Raises
        ------
        ValueError
            A value that is no number (formats ``"number"``, ``"percent"``),
            or a number outside the format's scale: the input was written
            another way than the reader's format says.
        """
        check_is_fitted(self)
        X = self._check_X(X, reset=False)
        return self._read(X)

    def _read(self, X):
        values = self._column(X)
        h = read_confidence_values(values, self.confidence_format, **self._options())
        if self.confidence_format == "verbalized":
            return h
        bad = np.isnan(h) & values.notna().to_numpy()
        if bad.any():
            raise ValueError(
                f"the confidence column has {int(bad.sum())} value(s) that are no "
                f"number, e.g. {str(values[bad].iloc[0])[:40]!r}; this reader "
                f"reads confidence_format={self.confidence_format!r}: for model "
                "text use confidence_format='verbalized'"
            )
        scale = 100 if self.confidence_format == "percent" else 1
        out = (h < 0) | (h > 1)
        if out.any():
            hint = (
                "if they are percentages, use confidence_format='percent'"
                if self.confidence_format == "number"
                else "a percentage lies in [0, 100]: correct these rows, or "
                "read the column with the format it was written in"
            )
            raise ValueError(
                f"the confidence column has {int(out.sum())} value(s) outside "
                f"[0, {scale}] (min {np.nanmin(h) * scale:.6g}, max "
                f"{np.nanmax(h) * scale:.6g}); {hint}"
            )
        return h

    def transform(self, X):
        """``X`` with its confidence column read into ``[0, 1]``.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)

        Returns
        -------
        X_read : DataFrame or ndarray of shape (n_samples, n_features)
            A DataFrame for a DataFrame (the other columns unchanged), else
            an array (float64 when every other column is numeric).

        Raises
        ------
        ValueError
            A row whose confidence cannot be read (NaN from :meth:`read`):
            leave such rows out first.
        """
        check_is_fitted(self)
        X = self._check_X(X, reset=False)
        h = self._read(X)
        missing = np.isnan(h)
        if missing.any():
            values = self._column(X)
            raise ValueError(
                f"{int(missing.sum())} row(s) of the confidence column give no "
                f"confidence, e.g. {str(values[missing].iloc[0])[:60]!r}; leave "
                "them out first: X[~np.isnan(reader.read(X))]"
            )
        col = self.confidence_column
        if hasattr(X, "columns"):
            X = X.copy()
            name = col if isinstance(col, str) else X.columns[col]
            X[name] = h
            return X
        arr = np.asarray(X)
        if arr.ndim == 1:
            return h
        try:
            out = arr.astype(np.float64)
        except (TypeError, ValueError):
            out = arr.astype(object)
        out[:, col] = h
        return out

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.string = True
        tags.input_tags.allow_nan = self.confidence_format == "verbalized"
        return tags


__all__ = [
    "CONFIDENCE_FORMATS",
    "ConfidenceReader",
    "LINGUISTIC_CONFIDENCE_TABLE",
    "LING1S_TOP1_PROMPT",
    "ParsedConfidence",
    "QUALITATIVE_CONFIDENCE_TABLE",
    "VERB1S_TOP1_PROMPT",
    "parse_verbalized_confidence",
    "read_confidence",
    "read_confidence_values",
    "unread_summary",
]
