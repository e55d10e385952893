"""How well ``parse_verbalized_confidence`` reads what models write.

Two cases, one results file (``results/verbalized_reader.md``):

1. the corpus ``tests/data/verbalized_corpus.csv`` (267 texts with the value
   each states and its provenance; ``tests/data/verbalized_corpus_make.py``):
   share of the texts that state a confidence that are read, misreads, and
   the unread texts by reason;
2. every response of the Influences study (``$BETACAL_SHARED_DATA``) by
   prompt style: the rule that read each one, and for the ``verb`` prompt
   the agreement with the study's own extraction where it is valid.

Usage: ``python benchmarks/bench_verbalized_reader.py [--data DIR]``.
"""

import argparse

import numpy as np
import pandas as pd
from _measure import (
    HERE,
    INFLUENCES_PARQUET,
    RESULTS,
    add_data_argument,
    data_dir,
    header,
)

from sklearn_betacal import parse_verbalized_confidence

CORPUS = HERE.parent / "tests" / "data" / "verbalized_corpus.csv"


def corpus_case():
    corpus = pd.read_csv(CORPUS, keep_default_na=False, na_values=[""])
    out = parse_verbalized_confidence(corpus.text.to_numpy(dtype=object))
    expected = corpus.expected.to_numpy(dtype=float)
    states = ~np.isnan(expected)
    read = states & ~np.isnan(out.confidence)
    wrong = read & ~np.isclose(out.confidence, expected, rtol=0, atol=1e-9)
    guessed = ~states & ~np.isnan(out.confidence)
    kinds = corpus.provenance.str.split(":").str[0]
    lines = [
        "## 1. The corpus (tests/data/verbalized_corpus.csv)",
        "",
        f"{len(corpus)} texts ({', '.join(f'{k} {n}' for k, n in kinds.value_counts().items())}); "
        f"{int(states.sum())} state a confidence.",
        "",
        f"- read: **{int(read.sum())} / {int(states.sum())} "
        f"({read.sum() / states.sum():.1%})** (goal >= 98 %)",
        f"- misread (a value other than the stated one): **{int(wrong.sum())}**; "
        f"a value where the text states none (negated, two values, bound): "
        f"**{int(guessed.sum())}** (goal 0)",
        "- unread, by reason: "
        + ", ".join(
            f"{r} {n}" for r, n in pd.Series(out.source[~states]).value_counts().items()
        ),
        "",
    ]
    return lines


def influences_case(root):
    frame = pd.read_parquet(root / INFLUENCES_PARQUET)
    rows = []
    for style, part in frame.groupby("prompt_style", sort=True):
        out = parse_verbalized_confidence(part.response.to_numpy(dtype=object))
        counts = pd.Series(out.source).value_counts()
        row = {"prompt style": style, "rows": len(part)}
        for name in ("label", "line", "trailing", "phrase", "linguistic-label",
                     "linguistic-line", "linguistic", "ambiguous",
                     "negated-or-bound", "none"):  # fmt: skip
            row[name] = int(counts.get(name, 0))
        row["other NaN"] = int(np.isnan(out.confidence).sum()) - sum(
            row[k] for k in ("ambiguous", "negated-or-bound", "none")
        )
        if style == "verb":
            study = part.verbal_confidence.to_numpy(dtype=float)
            valid = (study >= 0) & (study <= 1)
            agree = np.isclose(out.confidence, study, rtol=0, atol=1e-12)[valid]
            verb = (int(agree.sum()), int(valid.sum()))
        rows.append(row)
    table = pd.DataFrame(rows)
    head = "| " + " | ".join(table.columns) + " |"
    lines = [
        "## 2. Every response of the Influences study, by prompt style",
        "",
        "The rule that read each response (`source`); `phrase` is the new rule "
        "for a confidence stated in a sentence ('I'm 90% sure').",
        "",
        head,
        "|" + "---|" * len(table.columns),
        *("| " + " | ".join(map(str, r)) + " |" for r in table.itertuples(index=False)),
        "",
        f"verb prompt: the same value as the study's own extraction on "
        f"**{verb[0]:,} of {verb[1]:,}** rows where it is valid "
        f"({verb[0] / verb[1]:.3%}).",
        "",
    ]
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_data_argument(parser)
    args = parser.parse_args()
    lines = [
        "# parse_verbalized_confidence on real model outputs",
        "",
        "`python benchmarks/bench_verbalized_reader.py` (no timing).",
        "",
        header(prefix=""),
        "",
        *corpus_case(),
    ]
    root = data_dir(args.data, required=False)
    if root is not None:
        lines += influences_case(root)
    text = "\n".join(lines)
    (RESULTS / "verbalized_reader.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
