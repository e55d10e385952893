# SPDX-License-Identifier: MIT
"""Recompute the medians behind ``LINGUISTIC_CONFIDENCE_TABLE``.

Source: W. Fagen-Ulmschneider, "Perception of Probability Words" (2015), raw
survey results ``Perception-of-Probability-Words/survey-results.csv`` of
https://github.com/wadefagen/datasets (commit d588d8f527f04771f8d3cc630cc29da53024cbc0,
123 responses, 17 probability words, sha256 of the file used:
9fe1e4fbb463c04a3dbbf430dd5b094a9717e99263d55b9e4cb2c60e3c8ee285). The raw
file is not vendored here (its repository states no license); download it and
pass its path.

Usage::

    python tests/data/elicitation_fagen_ulmschneider_medians.py survey-results.csv \
        > tests/data/elicitation_fagen_ulmschneider_medians.csv

Produced with Python 3.11, pandas 3.1 (the median is the plain sample median
of the 123 numeric answers per word, in percent; divided by 100 here).
"""

import sys

import pandas as pd


def main(path):
    survey = pd.read_csv(path)
    words = list(survey.columns[:17])
    print("expression,median_percent,n_responses")
    for word in words:
        values = pd.to_numeric(survey[word], errors="raise")
        name = word.strip('"').lower()
        print(f"{name},{values.median():g},{values.count()}")


if __name__ == "__main__":
    main(sys.argv[1])
