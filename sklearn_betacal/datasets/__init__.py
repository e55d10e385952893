# SPDX-License-Identifier: MIT
"""Real LLM question-answering confidence data.

- :func:`load_triviaqa_confidence`: bundled, offline, 11,666 rows (TriviaQA
  test questions x 12 models, verbalized and token-probability confidences,
  judge labels).
- :func:`fetch_influences`: the complete Influences-on-LLM-Calibration study
  (273,744 rows), downloaded from its public source, checksummed and cached
  in :func:`get_data_home`.
- :func:`make_raw_answer_log`: the bundled rows as a raw answer log (model
  text for the confidence, yes/no labels), the input of the command-line day.
"""

from ._bundled import load_triviaqa_confidence
from ._influences import fetch_influences, get_data_home
from ._raw_log import make_raw_answer_log

__all__ = [
    "fetch_influences",
    "get_data_home",
    "load_triviaqa_confidence",
    "make_raw_answer_log",
]
