# SPDX-License-Identifier: MIT
"""Build ``verbalized_corpus.csv``: real verbalized confidences with the
value each one states, for ``tests/test_elicitation.py``.

Columns: ``text``; ``expected`` (the stated confidence in [0, 1], empty
where the text states no value that can be read without guessing);
``expected_reason`` (for an empty ``expected``: why, as the parser's
``source`` should say it, or empty where any NaN reason is right);
``provenance``.

Sources (``provenance`` names the one of each line):

* ``influences:<dataset>/<model>/<style>/<split>/<row_in_file>``: raw model
  outputs of Xia et al. (2025), "Influences on LLM Calibration"
  (github.com/Yuuxii/Influences-on-LLM-Calibration, commit bf66dbe4, MIT;
  the parquet file is described in its PROVENANCE.md under
  ``$BETACAL_SHARED_DATA/influences``). SciQ rows are left out (its text is
  CC BY-NC). For ``verb`` rows (the Verb1S-like prompt) ``expected`` is the
  study's own extraction (``verbal_confidence``), an independent reading;
  15 rows a model, drawn with ``random_state=17`` among rows whose
  extraction lies in [0, 1]. The other rows (``0_shot``/``few_shot``
  answers that state a confidence in a sentence, found by the regular
  expression below) carry the value read by hand, listed in ``HAND``.
* ``paper-table5:Verb1S`` / ``paper-table5:Ling1S``: the answer formats the
  beta-calibration paper's Table 5 prompts ask for (constructed in that
  format; the Ling1S words are the prompt's list, valued by
  ``LINGUISTIC_CONFIDENCE_TABLE``).
* ``issue-39``: the phrasings quoted in issue 39 as read from a user's log.
* ``ambiguous``: constructed texts that state two values, negate or bound
  one: the parser must leave them unread.

Usage::

    BETACAL_SHARED_DATA=/path/to/shared/data \\
        python tests/data/verbalized_corpus_make.py > tests/data/verbalized_corpus.csv

Produced with Python 3.12 and pandas from the shared venv.
"""

import os
import re
import sys

import pandas as pd

# (dataset, model, style, split, row_in_file) -> (value read by hand, or None
# with the reason) for the free-text rows found by FREE below
MIX = "mistralai_Mixtral-8x7B-Instruct-v0.1"
L31 = "meta-llama_Meta-Llama-3.1-70B-Instruct"
NEG = (None, "negated-or-bound")
NOVAL = (None, "")  # a confidence word outside the tables: no value stated
HAND = {
    ("nq", MIX, "0_shot", "train", 107): (0.9, ""),
    ("nq", MIX, "0_shot", "train", 241): (0.95, ""),
    ("nq", MIX, "0_shot", "train", 484): (0.9, ""),
    ("nq", MIX, "0_shot", "train", 517): NOVAL,  # "I am confident in its accuracy"
    ("nq", MIX, "0_shot", "train", 1205): (0.9, ""),
    ("nq", MIX, "0_shot", "train", 1718): (0.9, ""),
    ("nq", MIX, "0_shot", "train", 1797): (0.9, ""),
    ("nq", MIX, "0_shot", "train", 1951): (0.95, ""),  # "almost certain"
    ("triviaqa", MIX, "0_shot", "test", 349): NOVAL,  # "I'm not certain"
    ("triviaqa", MIX, "0_shot", "test", 776): (0.9, ""),
    ("triviaqa", MIX, "0_shot", "test", 911): (0.95, ""),
    ("triviaqa", MIX, "0_shot", "train", 281): NOVAL,  # "pretty confident"
    ("triviaqa", MIX, "0_shot", "train", 612): (0.9, ""),
    ("triviaqa", MIX, "0_shot", "train", 699): (0.9, ""),
    ("triviaqa", MIX, "0_shot", "train", 1162): (0.85, ""),
    ("triviaqa", MIX, "0_shot", "train", 1619): (0.8, ""),
    ("nq", MIX, "0_shot", "test", 14): NEG,  # "can't say this with 100% certainty"
    ("nq", MIX, "0_shot", "test", 54): NEG,  # "not 100% sure"
    ("nq", MIX, "0_shot", "test", 429): NEG,
    ("nq", MIX, "0_shot", "test", 462): NEG,
    ("nq", MIX, "0_shot", "test", 916): NEG,
    ("nq", MIX, "0_shot", "train", 467): NEG,
    ("nq", MIX, "0_shot", "train", 888): NEG,
    ("nq", MIX, "0_shot", "train", 1378): NEG,
    ("nq", MIX, "0_shot", "train", 1762): NEG,
    ("nq", MIX, "0_shot", "train", 1909): NEG,
    ("triviaqa", MIX, "0_shot", "test", 872): NEG,  # "almost certain it's not her"
    ("triviaqa", MIX, "0_shot", "train", 489): NEG,
    ("triviaqa", MIX, "0_shot", "train", 845): NEG,
    ("triviaqa", MIX, "0_shot", "train", 1121): NEG,
    ("triviaqa", MIX, "0_shot", "train", 1318): NEG,
    ("wikiqa", MIX, "0_shot", "train", 399): NEG,
    ("triviaqa", L31, "few_shot", "test", 457): NEG,
    ("triviaqa", L31, "few_shot", "test", 160): NOVAL,  # "I'm not sure of ..."
    ("triviaqa", L31, "few_shot", "test", 421): NOVAL,
}

FREE = re.compile(
    r"(?i)\d+(?:\.\d+)?\s*(?:%|percent)[^.\n]{0,20}(?:sure|certain|confiden)"
    r"|(?:i'?m|i am)\s+(?:almost|pretty|not)?\s*(?:confident|certain|sure)"
    r"|confidence:"
)

PAPER = [
    ("Guess: Paris\nProbability: 0.8", 0.8),
    ("Guess: 1969\nProbability: 0.95", 0.95),
    ("Guess: Mount Everest\nProbability: 1.0", 1.0),
    ("Guess: Neil Armstrong\nProbability: 0.99", 0.99),
    ("Guess: mitochondria\nProbability: 0.6", 0.6),
    ("Guess: The Beatles\nProbability: 0.35", 0.35),
    ("Guess: Canberra\nProbability: 0.7", 0.7),
    ("Guess: photosynthesis\nProbability: 0.0", 0.0),
    ("Guess: Jupiter\nProbability: 0.55", 0.55),
    ("Guess: Leonardo da Vinci\nProbability: 0.9", 0.9),
]
LING = {
    "Almost Certain": 0.95, "Highly Likely": 0.90, "Very Good Chance": 0.80,
    "Probable": 0.70, "Likely": 0.70, "We Believe": 0.75, "Probably": 0.70,
    "Better than Even": 0.60, "About Even": 0.50, "We Doubt": 0.20,
    "Improbable": 0.10, "Unlikely": 0.20, "Probably Not": 0.25,
    "Little Chance": 0.10, "Almost No Chance": 0.02, "Highly Unlikely": 0.05,
    "Chances are Slight": 0.10,
}  # fmt: skip
ISSUE = [
    ("I am 90% sure", 0.9),
    ("J (90% sure)", 0.9),
    ("100% certain.", 1.0),
    ("100% confidence.", 1.0),
    ("Confidence level: high", 0.7),
    ("High confidence", 0.7),
    ("my confidence is very high", 0.9),
    ("5. Medium.", 0.5),
    ("Confidence: very high", 0.9),
    ("**Confidence:** 85%", 0.85),
    ("I would say 70%", 0.7),
]
AMBIGUOUS = [
    ("I am not 90% sure", "negated-or-bound"),
    ("not 90% sure", "negated-or-bound"),
    ("I'm at least 80% confident it is B", "negated-or-bound"),
    ("Less than 50% sure: Lyon", "negated-or-bound"),
    ("B. I am 90% sure, maybe 80% sure", "ambiguous"),
    ("Paris. I am 90% confident that coverage exceeds 80%", "ambiguous"),
    ("Guess: Paris\nProbability: 0.8\nI am 95% sure", "ambiguous"),
    ("**Answer:** B\n**Confidence level:** High (90%)", "ambiguous"),
    ("C (70% sure), or D (30% sure)", "ambiguous"),
    ("I'm 90% sure it is not Paris", "negated-or-bound"),
    ("Answer: C\nConfidence: 80-90%", ""),
    ("80-90% sure", ""),
    ("Guess: Paris\nProbability: 85", "out-of-range"),
    ("Guess: Paris\nConfidence: 5", "needs-scale"),
]


def main():
    root = os.environ["BETACAL_SHARED_DATA"]
    frame = pd.read_parquet(
        os.path.join(root, "influences", "influences_llm_calibration_all.parquet")
    )
    frame = frame[frame.dataset != "sciq"]
    rows = []

    def add(text, expected, reason, provenance):
        rows.append((text, expected, reason, provenance))

    def where(r):
        return (
            f"influences:{r.dataset}/{r.model}/{r.prompt_style}/{r.split}/"
            f"{r.row_in_file}"
        )

    verb = frame[(frame.prompt_style == "verb") & frame.verbal_confidence.between(0, 1)]
    sample = verb.groupby("model", group_keys=False).sample(15, random_state=17)
    order = ["model", "dataset", "split", "row_in_file"]
    for r in sample.sort_values(order).itertuples():
        add(r.response, r.verbal_confidence, "", where(r))
    other = frame[frame.prompt_style != "verb"]
    free = other[other.response.str.contains(FREE, na=False)]
    for r in free.itertuples():
        key = (r.dataset, r.model, r.prompt_style, r.split, r.row_in_file)
        if key in HAND:
            value, reason = HAND[key]
            add(r.response, value, reason, where(r))
    seen = {p.split(":", 1)[1] for *_, p in rows if p.startswith("influences:")}
    missing = [k for k in HAND if "/".join(map(str, k)) not in seen]
    if missing:
        raise SystemExit(f"hand-labelled rows not found: {missing}")
    for text, value in PAPER:
        add(text, value, "", "paper-table5:Verb1S")
    for word, value in LING.items():
        add(f"Guess: Paris\nConfidence: {word}", value, "", "paper-table5:Ling1S")
    for text, value in ISSUE:
        add(text, value, "", "issue-39")
    for text, reason in AMBIGUOUS:
        add(text, None, reason, "ambiguous")
    columns = ["text", "expected", "expected_reason", "provenance"]
    out = pd.DataFrame(rows, columns=columns)
    out.to_csv(sys.stdout, index=False)


if __name__ == "__main__":
    main()
