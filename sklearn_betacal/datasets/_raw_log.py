# SPDX-License-Identifier: MIT
"""A raw answer log (model text, yes/no labels) made from the bundled rows."""

import numpy as np
import pandas as pd

from ._bundled import load_triviaqa_confidence

#: How :func:`make_raw_answer_log` writes a stated confidence ``c`` (and the answer
#: ``a``) as a model's raw output: the answer formats of the paper's
#: Verb1S-Top1 prompt and the variants models give instead (App. B.1).
_RAW_FORMATS = (
    (0.55, "Guess: {a}\nProbability: {c:g}"),
    (0.15, "Guess: {a}\nProbability: {p:g}%"),
    (0.15, "{a}, {c:g}"),
    (0.10, "**Guess:** {a}\n**Probability:** {c:g}"),
)
#: Outputs that state no confidence (a refusal): 5 % of the rows.
_NO_CONFIDENCE = "I am not able to give a confident answer to this question."


def make_raw_answer_log(n_rows=5000, *, random_state=0):
    """A raw answer log as a practitioner has it, from the bundled TriviaQA rows.

    ``n_rows`` answers drawn without replacement from
    :func:`load_triviaqa_confidence`, with their real questions, answering
    models, answers and graded labels, and the stated confidence written back
    as the model's raw text: ``Guess: ...\\nProbability: 0.9`` mostly, also
    ``90%``, ``Paris, 0.9`` and markdown, and 5 % refusals that state no
    confidence. Some texts give no value to
    :func:`~sklearn_betacal.parse_verbalized_confidence` (the refusals, and
    ``Paris, 1``: a trailing whole number is not read), as in real logs. It is
    the input of the day in the command-line guide (``betacal demo
    --write-log``).

    Parameters
    ----------
    n_rows : int, default=5000
        Rows, at most the 11,666 bundled answers.
    random_state : int, default=0
        Seeds the draw of rows, formats and refusals: the same seed gives the
        same log.

    Returns
    -------
    log : pandas.DataFrame
        Columns ``question``, ``model``, ``response`` (the raw text) and
        ``correct`` (``"yes"`` / ``"no"``), in the bundled rows' order.

    Examples
    --------
    >>> from sklearn_betacal.datasets import make_raw_answer_log
    >>> log = make_raw_answer_log(1000, random_state=0)
    >>> log.columns.tolist()
    ['question', 'model', 'response', 'correct']
    >>> log["response"].iloc[:2].tolist()
    ['I am not able to give a confident answer to this question.', 'Massachusetts, 1']
    >>> log["correct"].value_counts().to_dict()
    {'no': 514, 'yes': 486}
    """
    frame = load_triviaqa_confidence().frame
    rng = np.random.default_rng(random_state)
    if not 1 <= n_rows <= len(frame):
        raise ValueError(
            f"n_rows must lie in [1, {len(frame)}] (the bundled answers); got {n_rows}"
        )
    rows = frame.iloc[np.sort(rng.choice(len(frame), n_rows, replace=False))]
    weights = np.array([w for w, _ in _RAW_FORMATS])
    pick = rng.choice(len(_RAW_FORMATS), n_rows, p=weights / weights.sum())
    refuse = rng.uniform(size=n_rows) < 0.05
    answers = rows["answer"].fillna("").astype(str).str.strip().to_numpy()
    texts = [
        _NO_CONFIDENCE
        if no
        else _RAW_FORMATS[k][1].format(a=a or "unknown", c=c, p=round(100 * c, 1))
        for a, c, k, no in zip(
            answers, rows["verbal_confidence"], pick, refuse, strict=True
        )
    ]
    return pd.DataFrame(
        {
            "question": rows["question"].to_numpy(),
            "model": rows["model"].to_numpy(),
            "response": texts,
            "correct": np.where(rows["correct_judge"].to_numpy() == 1, "yes", "no"),
        }
    )


__all__ = ["make_raw_answer_log"]
