# SPDX-License-Identifier: MIT
"""Tests for the confidence-elicitation prompts and parser."""

import csv
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal

from sklearn_betacal import (
    LING1S_TOP1_PROMPT,
    LINGUISTIC_CONFIDENCE_TABLE,
    VERB1S_TOP1_PROMPT,
    parse_verbalized_confidence,
)
from sklearn_betacal._elicitation import (
    QUALITATIVE_CONFIDENCE_TABLE,
    ParsedConfidence,
)

DATA = Path(__file__).resolve().parent / "data"


def _one(text, **kw):
    out = parse_verbalized_confidence([text], **kw)
    return out.confidence[0], out.guess[0], out.source[0]


# -- real model outputs -----------------------------------------------------


def test_parse_verbalized_confidence_matches_study_extraction(influences_frame):
    """The raw verb-prompt outputs of Xia et al. (2025) parse to the values the
    study extracted itself, wherever the study's value is valid ([0, 1])."""
    V = influences_frame[influences_frame.prompt_style == "verb"]
    study = V.verbal_confidence.to_numpy(dtype=float)
    out = parse_verbalized_confidence(V.response.to_numpy(), kind="probability")
    valid = (study >= 0) & (study <= 1)
    agree = np.isclose(out.confidence, study, rtol=0, atol=1e-12)
    rate = agree[valid].mean()
    # 108,398 / 108,407 at the time of writing; 5 others are outputs with
    # several guesses, where the study kept one and we keep another, and 4
    # state a second value in a sentence ("Probability: 0.25 (I'm 75% sure
    # it's in the Himalayas ...)"): left unread as "ambiguous".
    assert valid.sum() > 100_000
    assert rate >= 0.999, f"agreement {rate:.5f}"
    # All outputs, including the study's -1 parse failures and the > 1
    # values: never a crash, values in [0, 1] or NaN, NaN counted.
    conf = out.confidence
    assert np.all(np.isnan(conf) | ((conf >= 0) & (conf <= 1)))
    assert out.n_unparseable == int(np.isnan(conf).sum())
    # The study's out-of-range values: "Probability: 2.0" stays NaN, where the
    # study read "Probability: 3/36 or 1/12" as 336 we read 3/36.
    over = V.response.to_numpy()[study > 1]
    conf_over = conf[study > 1]
    assert np.isnan(conf_over[[("Probability: 2.0" in t) for t in over]]).all()
    assert_allclose(conf_over[[("3/36" in t) for t in over]], 3 / 36)
    # Most of the study's -1 sentinels are recoverable ("Boise, 0.99").
    failed = study == -1
    assert np.isfinite(conf[failed]).mean() > 0.8


def test_parse_verbalized_confidence_guess_matches_study_answer(influences_frame):
    """The located guess equals the study's extracted answer (which strips
    some punctuation, so the agreement is not exact)."""
    V = influences_frame[
        (influences_frame.prompt_style == "verb")
        & influences_frame.verbal_confidence.between(0, 1)
    ]
    out = parse_verbalized_confidence(V.response.to_numpy())
    ours = np.array([g if g is not None else "" for g in out.guess], dtype=object)
    theirs = V.extracted_answer.astype(str).str.strip().to_numpy(dtype=object)
    assert np.mean(ours == theirs) > 0.99


# -- every format -------------------------------------------------------------


@pytest.mark.parametrize(
    "text, value, guess, source",
    [
        ("Guess: Paris\nProbability: 0.8", 0.8, "Paris", "label"),
        ("Guess: Paris Probability: 0.8", 0.8, "Paris", "label"),
        ("guess: Paris\nprobability: .75", 0.75, "Paris", "label"),
        ("Guess: Paris\nProbability: 80%", 0.8, "Paris", "label"),
        ("Guess: Paris\nProbability: 80 percent", 0.8, "Paris", "label"),
        ("Guess: Paris\nProbability: 3/4", 0.75, "Paris", "label"),
        ("**Guess:** Paris\n**Probability:** **0.7**", 0.7, "Paris", "label"),
        ('Guess: "Paris"\nProbability: "0.7"', 0.7, '"Paris"', "label"),
        ("Guess: Paris\nProbability: <0.6>", 0.6, "Paris", "label"),
        ("Guess: Paris\nProbability: 0.9.", 0.9, "Paris", "label"),
        ("Guess: \nAl Wilson\nProbability: \n0.9 \n", 0.9, "Al Wilson", "label"),
        ("Guess: Paris\nConfidence: 0.65", 0.65, "Paris", "label"),
        ("Guess: Paris\nProbability: 1", 1.0, "Paris", "label"),
        ("Guess: Paris\nProbability: 0", 0.0, "Paris", "label"),
        ("Paris\n0.9", 0.9, "Paris", "line"),
        ("assistant\n\nJanet\n0.4", 0.4, "Janet", "line"),
        ("0.8\n\nGuess: Mark David Chapman", 0.8, "Mark David Chapman", "line"),
        ("Boise, 0.99 \n", 0.99, "Boise", "trailing"),
        ("Extinction: 0.95", 0.95, "Extinction", "trailing"),
        ("/ Hydrology / 0.9", 0.9, "/ Hydrology", "trailing"),
        ("Guess:  1976,  0.8", 0.8, "1976", "trailing"),
        ("Paris 45 %", 0.45, "Paris", "trailing"),
        ("Guess: Nice\nConfidence: Highly likely", 0.90, "Nice", "linguistic-label"),
        (
            "Guess: Nice\nConfidence: ALMOST NO CHANCE.",
            0.02,
            "Nice",
            "linguistic-label",
        ),
        ("Guess: Nice\nConfidence: highly unlikely", 0.05, "Nice", "linguistic-label"),
        ("Guess: Nice\nConfidence: probably not", 0.25, "Nice", "linguistic-label"),
        (
            "Guess: Likely Lads\nchances are slight",
            0.10,
            "Likely Lads",
            "linguistic-line",
        ),
        (
            "Guess: Likely Lads\nI'd say chances are slight.",
            0.10,
            "Likely Lads",
            "linguistic",
        ),
        # splits of 100 and "a in b" odds
        ("Guess: Paris\nProbability: 50/50", 0.5, "Paris", "label"),
        ("Guess: Paris\nProbability: 70-30", 0.7, "Paris", "label"),
        ("Guess: Paris\nProbability: 50:50", 0.5, "Paris", "label"),
        ("Guess: Paris\nProbability: 30 / 70", 0.3, "Paris", "label"),
        ("Guess: Paris\nProbability: 3/36 or 1/12", 3 / 36, "Paris", "label"),
        ("Guess: Paris\nProbability: 3 in 4", 0.75, "Paris", "label"),
        ("Guess: Paris\nProbability: 1 out of 10", 0.1, "Paris", "label"),
        ("Guess: Paris\nConfidence: Fifty-fifty", 0.5, "Paris", "linguistic-label"),
        ("Paris\n3 in 4", 0.75, "Paris", "line"),
        # long decimals
        ("Guess: Paris\nProbability: 0.99999999999999999999", 1.0, "Paris", "label"),
        ("Guess: Paris\nProbability: 0.123456789012", 0.123456789012, "Paris", "label"),
        ("Guess: Paris\nProbability: 99.99999999999999999", 1.0, "Paris", "label"),
        ("Guess: Paris\nProbability: 87.125", 0.87125, "Paris", "label"),
        ("Paris, 0.8500000000000001", 0.8500000000000001, "Paris", "trailing"),
        # qualitative scales: only as the stated confidence
        ("Guess: Paris\nConfidence: Very low", 0.1, "Paris", "linguistic-label"),
        ("Guess: Paris\nConfidence: Medium", 0.5, "Paris", "linguistic-label"),
        ("Guess: Paris\nConfidence: **HIGH**", 0.7, "Paris", "linguistic-label"),
        ("Guess: Paris\nConfidence: very high.", 0.9, "Paris", "linguistic-label"),
        ("Guess: Paris\nConfidence: moderate", 0.5, "Paris", "linguistic-label"),
        ("Paris\nVery low", 0.1, "Paris", "linguistic-line"),
        ("Guess: Paris\nLow", 0.3, "Paris", "linguistic-line"),
        ("Guess: Paris\nConfidence: certain", 0.95, "Paris", "linguistic-label"),
    ],
)
def test_parse_verbalized_confidence_formats(text, value, guess, source):
    got_value, got_guess, got_source = _one(text)
    assert_allclose(got_value, value, rtol=0, atol=1e-12)
    assert got_guess == guess
    assert got_source == source


@pytest.mark.parametrize(
    "text, source",
    [
        ("Guess: Paris\nProbability: 2.0", "out-of-range"),
        ("Guess: Paris\nProbability: 85", "out-of-range"),  # 85%? 0.85? unknown
        ("Guess: Paris\nProbability: 120%", "out-of-range"),
        ("Guess: Paris\nProbability: 1/0", "out-of-range"),
        ("Omnivorous\n3.0", "out-of-range"),
        ("Guess: Paris\nProbability: 0,8", "none"),  # comma decimal: refused
        ("Guess: Apollo 11", "none"),  # an integer in the answer is no prob.
        ("Guess: 3:1", "none"),
        ("Guess: 498,00", "none"),
        ("Guess: Nice\nConfidence: very likely", "unknown-expression"),
        ("Guess:  \nProbability:  \n", "none"),
        ("Guess: Paris\nProbability: 3:1", "out-of-range"),  # odds for/against?
        ("Guess: Paris\nProbability: 3 to 1", "out-of-range"),
        ("Guess: Paris\nProbability: 60/50", "out-of-range"),
        ("Guess: Paris\nConfidence: 5", "needs-scale"),  # 1-5 or 1-10?
        ("Guess: Paris\n7", "needs-scale"),
        ("Guess: Paris\nProbability: 99.9", "out-of-range"),  # one decimal
        # common words are no confidence when they are part of the answer
        ("Guess: High Noon", "none"),
        ("Guess: Low Countries\nIt is a medium-sized region.", "none"),
        ("I cannot answer that.", "none"),
        ("", "none"),
    ],
)
def test_parse_verbalized_confidence_unparseable_is_nan(text, source):
    value, _, got_source = _one(text)
    assert np.isnan(value)
    assert got_source == source


@pytest.mark.parametrize(
    "scale, texts, expected",
    [
        (
            (1, 5),
            ["Confidence: 1", "Confidence: 3", "5", "Paris, 4.5"],
            [0, 0.5, 1, 0.875],
        ),
        ((1, 10), ["Confidence: 10", "Probability: 4"], [1.0, 1 / 3]),
        ((0, 10), ["Confidence: 7", "Confidence: 7/10", "70%"], [0.7, 0.7, 0.7]),
        (
            "percent",
            ["Probability: 85", "Probability: 99.5", "0.5%"],
            [0.85, 0.995, 0.005],
        ),
        ((1, 5), ["Confidence: 6", "Confidence: 0"], [np.nan, np.nan]),
        ("percent", ["Probability: 120"], [np.nan]),
    ],
)
def test_parse_verbalized_confidence_numeric_scales(scale, texts, expected):
    out = parse_verbalized_confidence(texts, scale=scale)
    assert_allclose(out.confidence, expected, rtol=0, atol=1e-12)
    assert all(
        s == "out-of-range"
        for s, v in zip(out.source, expected, strict=True)
        if np.isnan(v)
    )


def test_parse_verbalized_confidence_qualitative_table_is_optional():
    texts = ["Guess: a\nConfidence: Medium", "a\nHigh"]
    assert_allclose(parse_verbalized_confidence(texts).confidence, [0.5, 0.7])
    out = parse_verbalized_confidence(texts, qualitative={})
    assert np.isnan(out.confidence).all()
    assert out.source.tolist() == ["unknown-expression", "none"]
    out = parse_verbalized_confidence(texts, qualitative={"medium": 0.4})
    assert_allclose(out.confidence, [0.4, np.nan])
    # table wins where both hold an expression
    out = parse_verbalized_confidence(texts, table={"high": 0.8})
    assert_allclose(out.confidence, [0.5, 0.8])
    # and every default entry round-trips
    texts = [f"Guess: x\nConfidence: {k}" for k in QUALITATIVE_CONFIDENCE_TABLE]
    out = parse_verbalized_confidence(texts)
    assert_array_equal(out.confidence, list(QUALITATIVE_CONFIDENCE_TABLE.values()))


def test_parse_verbalized_confidence_counts_unparseable_and_missing():
    texts = ["Probability: 0.5", None, float("nan"), pd.NA, "nothing", 0.7]
    out = parse_verbalized_confidence(texts)
    assert isinstance(out, ParsedConfidence)
    assert_allclose(out.confidence, [0.5, np.nan, np.nan, np.nan, np.nan, 0.7])
    assert out.n_unparseable == 4
    conf, guess, n_bad, source = out  # a tuple, too
    assert n_bad == 4 and conf.dtype == np.float64 and guess.dtype == object
    assert source.tolist()[:2] == ["label", "none"]


def test_parse_verbalized_confidence_kind_restricts_rules():
    texts = ["Guess: Paris\nConfidence: likely", "Guess: Paris\nProbability: 0.3"]
    assert_allclose(
        parse_verbalized_confidence(texts, kind="auto").confidence, [0.7, 0.3]
    )
    assert_allclose(
        parse_verbalized_confidence(texts, kind="probability").confidence,
        [np.nan, 0.3],
    )
    assert_allclose(
        parse_verbalized_confidence(texts, kind="linguistic").confidence,
        [0.7, np.nan],
    )


def test_parse_verbalized_confidence_custom_table_longest_match():
    table = {"very likely": 0.85, "likely": 0.6}
    out = parse_verbalized_confidence(
        ["Guess: a\nConfidence: Very likely", "a - likely", "a - unlikely"],
        table=table,
    )
    assert_allclose(out.confidence, [0.85, 0.6, np.nan])


def test_parse_verbalized_confidence_accepts_series_and_array():
    texts = ["Probability: 0.1", "Probability: 0.2"]
    for container in (texts, tuple(texts), np.array(texts), pd.Series(texts)):
        assert_allclose(parse_verbalized_confidence(container).confidence, [0.1, 0.2])
    assert parse_verbalized_confidence([]).confidence.shape == (0,)


@pytest.mark.parametrize(
    "kwargs, texts, match",
    [
        ({"kind": "verbal"}, ["x"], "'kind' parameter"),
        ({}, "Probability: 0.8", "single string"),
        ({}, 3, "must be a sequence"),
        ({}, [["a", "b"]], "must be 1-D"),
        ({"table": {"likely": 1.5}}, ["x"], r"must lie in \[0, 1\]"),
        ({"table": {"likely": "high"}}, ["x"], "to probabilities"),
        ({"table": {}}, ["x"], "non-empty mapping"),
        ({"table": [("likely", 0.7)]}, ["x"], "non-empty mapping"),
        ({"qualitative": {"high": 2}}, ["x"], r"qualitative maps 'high'"),
        ({"qualitative": ["high"]}, ["x"], "qualitative must be a non-empty mapping"),
        ({"qualitative": 0}, ["x"], "qualitative must be a mapping"),
        ({"scale": "permille"}, ["x"], "scale must be None, 'percent'"),
        ({"scale": (5, 1)}, ["x"], "finite low < high"),
        ({"scale": (1, 2, 3)}, ["x"], r"\(low, high\) pair"),
        ({"scale": 5}, ["x"], r"\(low, high\) pair"),
    ],
)
def test_parse_verbalized_confidence_param_validation(kwargs, texts, match):
    with pytest.raises(ValueError, match=match):
        parse_verbalized_confidence(texts, **kwargs)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.text(max_size=200), st.none(), st.floats()), max_size=8))
def test_parse_verbalized_confidence_never_raises_on_arbitrary_text(texts):
    out = parse_verbalized_confidence(texts)
    conf = out.confidence
    assert conf.shape == (len(texts),)
    assert np.all(np.isnan(conf) | ((conf >= 0) & (conf <= 1)))
    assert out.n_unparseable == int(np.isnan(conf).sum())


_WORDS = st.sampled_from(["Guess:", "Probability:", "Confidence:", "likely", "%"])
_PIECES = st.one_of(_WORDS, st.from_regex(r"[0-9./,%: \n*]{0,6}", fullmatch=True))


@settings(max_examples=300, deadline=None)
@given(st.lists(_PIECES, max_size=12).map("".join))
def test_parse_verbalized_confidence_never_raises_on_format_like_text(text):
    for kind in ("auto", "probability", "linguistic"):
        value = parse_verbalized_confidence([text], kind=kind).confidence[0]
        assert np.isnan(value) or 0.0 <= value <= 1.0


# -- the table and the prompts ----------------------------------------------


def test_linguistic_table_matches_survey_medians():
    """Golden values: medians recomputed from the raw Fagen-Ulmschneider
    (2015) survey by tests/data/elicitation_fagen_ulmschneider_medians.py."""
    with open(DATA / "elicitation_fagen_ulmschneider_medians.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 17
    assert {r["n_responses"] for r in rows} == {"123"}
    golden = {r["expression"]: float(r["median_percent"]) / 100 for r in rows}
    assert list(golden) == list(LINGUISTIC_CONFIDENCE_TABLE)
    for key, value in golden.items():
        assert_allclose(LINGUISTIC_CONFIDENCE_TABLE[key], value, rtol=0, atol=1e-12)


def test_linguistic_table_is_read_only():
    with pytest.raises(TypeError):
        LINGUISTIC_CONFIDENCE_TABLE["likely"] = 0.1


def test_prompts_format_with_question_and_list_every_expression():
    verb = VERB1S_TOP1_PROMPT.format(question="What is 2 + 2?")
    ling = LING1S_TOP1_PROMPT.format(question="What is 2 + 2?")
    assert verb.endswith("The question is: What is 2 + 2?")
    assert ling.endswith("The question is: What is 2 + 2?")
    assert "Probability: <the probability between 0.0 and 1.0" in verb
    assert "Confidence: <description of confidence" in ling
    listed = ling.split("following expressions: ")[1].split(". Give ONLY")[0]
    assert [e.lower() for e in listed.split(", ")] == list(LINGUISTIC_CONFIDENCE_TABLE)


def test_parse_verbalized_confidence_round_trips_every_table_entry():
    texts = [f"Guess: x\nConfidence: {k.title()}" for k in LINGUISTIC_CONFIDENCE_TABLE]
    out = parse_verbalized_confidence(texts, kind="linguistic")
    assert_array_equal(out.confidence, list(LINGUISTIC_CONFIDENCE_TABLE.values()))
    assert out.n_unparseable == 0


def test_confidence_reader_percent_out_of_range_says_what_to_do():
    import numpy as np
    import pytest

    from sklearn_betacal import ConfidenceReader

    X = np.array([[150.0, 1], [50.0, 2]])
    with pytest.raises(ValueError, match=r"outside \[0, 100\].*correct these rows"):
        ConfidenceReader(0, confidence_format="percent").fit_transform(X)
    with pytest.raises(ValueError, match="use confidence_format='percent'"):
        ConfidenceReader(0).fit_transform(X)


# -- a corpus of real phrasings (tests/data/verbalized_corpus.csv) ----------


def _corpus():
    corpus = pd.read_csv(
        DATA / "verbalized_corpus.csv", keep_default_na=False, na_values=[""]
    )
    corpus["expected_reason"] = corpus["expected_reason"].fillna("")
    return corpus


def test_verbalized_corpus_read_without_misreads():
    """Every text of the corpus that states a confidence is read (>= 98 %),
    none is misread, and every text that must stay unread does, with its
    reason (tests/data/verbalized_corpus_make.py states each line's source)."""
    corpus = _corpus()
    assert len(corpus) >= 250
    assert corpus.provenance.str.startswith("influences:").sum() >= 200
    out = parse_verbalized_confidence(corpus.text.to_numpy(dtype=object))
    expected = corpus.expected.to_numpy(dtype=float)
    states = ~np.isnan(expected)
    read = states & ~np.isnan(out.confidence)
    assert read.sum() / states.sum() >= 0.98
    wrong = read & ~np.isclose(out.confidence, expected, rtol=0, atol=1e-9)
    guessed = ~states & ~np.isnan(out.confidence)
    assert not wrong.any(), corpus.text[wrong].tolist()[:3]
    assert not guessed.any(), corpus.text[guessed].tolist()[:3]
    reason = corpus.expected_reason.to_numpy(dtype=object)
    named = ~states & (reason != "")
    assert_array_equal(out.source[named], reason[named])


@pytest.mark.parametrize(
    "text, value, guess",
    [
        ("I am 90% sure", 0.9, None),
        ("J (90% sure)", 0.9, "J"),
        ("100% certain.", 1.0, None),
        ("100% confidence.", 1.0, None),
        ("Confidence level: high", 0.7, None),
        ("Confidence level: 85%", 0.85, None),
        ("High confidence", 0.7, None),
        ("Paris (very high confidence)", 0.9, "Paris"),
        ("my confidence is very high", 0.9, None),
        ("5. Medium.", 0.5, None),
        ("The answer is B. My confidence is 0.85.", 0.85, "The answer is B"),
        ("Paris, 95 percent confident", 0.95, "Paris"),
        ("I'm fairly confident it is Paris", 0.7, None),
        ("I'm almost certain it is Rome", 0.95, None),
        ("Salma Hayek (I'm 90% sure, but there's a chance I'm wrong.)", 0.9, None),
        ("Paris (90% sure; I can't be 100% certain)", 0.9, "Paris"),
    ],
)
def test_parse_verbalized_confidence_reads_sentences(text, value, guess):
    got, got_guess, source = _one(text)
    assert_allclose(got, value, rtol=0, atol=1e-12)
    assert source in ("phrase", "label", "linguistic-label", "linguistic-line")
    if guess is not None:
        assert got_guess == guess


@pytest.mark.parametrize(
    "text, source",
    [
        ("I am not 90% sure", "negated-or-bound"),
        ("Brazil (not 100% sure, but it's my best guess)", "negated-or-bound"),
        ("Beyonce? (but I'm almost certain it's not her)", "negated-or-bound"),
        ("at least 80% confident", "negated-or-bound"),
        ("80 or 90% sure", "negated-or-bound"),
        ("I am 90% sure, maybe 80% sure", "ambiguous"),
        ("90% sure or 80% sure", "ambiguous"),
        ("I am 90% sure, not 80% sure", "ambiguous"),
        ("I am 100% sure. I can't be 100% certain", "ambiguous"),
        ("Paris. I am 90% confident that coverage exceeds 80%", "ambiguous"),
        ("Guess: Paris\nProbability: 0.8\nI am 95% sure", "ambiguous"),
        ("Confidence level: High (90%)", "ambiguous"),
        ("I'm not very confident", "none"),
        ("Saw 8 is most likely to be released in October", "none"),
        ("Turnstile or coil, or more likely, inductor.", "none"),
        ("There is a 30% chance of rain", "none"),  # the answer, not a confidence
    ],
)
def test_parse_verbalized_confidence_never_guesses(text, source):
    value, _, got_source = _one(text)
    assert np.isnan(value)
    assert got_source == source


def test_parse_verbalized_confidence_label_agrees_with_a_sentence():
    # a negated statement or the same value beside a label leaves it read
    texts = [
        "Guess: Lagos\nProbability: 0.85\n(Note: I can't be 100% sure.)",
        "Guess: Paris\nProbability: 0.9\nI am 90% sure",
        "Guess: Taylor Swift\nProbability: 0.1\n(I'm 90% sure it is incorrect)",
    ]
    assert_allclose(parse_verbalized_confidence(texts).confidence, [0.85, 0.9, 0.1])


# -- ConfidenceReader carries the parser's options ---------------------------


def test_confidence_reader_options_reach_the_parser_and_the_model_file(tmp_path):
    from sklearn.pipeline import make_pipeline

    from sklearn_betacal import ConfidenceReader, PlattScaler
    from sklearn_betacal import io as model_io

    X = pd.DataFrame({"r": ["Confidence: 5", "Confidence: 6", "Confidence: 2"]})
    # without a scale "5" is a point of an unknown scale: unread
    assert np.isnan(
        ConfidenceReader("r", confidence_format="verbalized").fit(X).read(X)
    ).all()
    reader = ConfidenceReader("r", confidence_format="verbalized", scale=(1, 6))
    assert_allclose(reader.fit(X).read(X), [0.8, 1.0, 0.2])
    words = ConfidenceReader(
        "r", confidence_format="verbalized", qualitative={"so-so": 0.4}, table={"x": 1}
    )
    assert_allclose(
        words.fit(X).read(pd.DataFrame({"r": ["Confidence: so-so"]})), [0.4]
    )
    # stored in the model file and read back the same way
    model = make_pipeline(
        ConfidenceReader("r", confidence_format="verbalized", scale=(1, 6)),
        PlattScaler(),
    ).fit(X, [1, 1, 0])
    model_io.dump(model, tmp_path / "m.skops")
    loaded = model_io.load(tmp_path / "m.skops")
    assert loaded.steps[0][1].get_params()["scale"] == (1, 6)
    assert_allclose(loaded.predict_proba(X), model.predict_proba(X))
    # the options read text: refused with another format, checked as the parser
    with pytest.raises(ValueError, match="need confidence_format='verbalized'"):
        ConfidenceReader("r", scale=(1, 6)).fit(X)
    with pytest.raises(ValueError, match="finite low < high"):
        ConfidenceReader("r", confidence_format="verbalized", scale=(6, 1)).fit(X)
