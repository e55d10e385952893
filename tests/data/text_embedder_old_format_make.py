# SPDX-License-Identifier: MIT
"""Write ``text_embedder_old_format.skops``: a TextEmbedder model file in the
layout before ``min_df``/``max_features`` (the fitted TfidfVectorizer with its
vocabulary dict stored as it is), and the embedding it gives.

Run from a checkout of sklearn_betacal before that change (commit 062888d)::

    PYTHONPATH=<old checkout> python tests/data/text_embedder_old_format_make.py
"""

import json
from pathlib import Path

import sklearn_betacal
from sklearn_betacal import TextEmbedder
from sklearn_betacal.io import dump

HERE = Path(__file__).parent
TEXTS = [
    "who wrote hamlet",
    "who wrote macbeth",
    "capital of france",
    "capital of spain",
    "largest ocean on earth",
    "smallest planet of the solar system",
]
PROBE = ["who wrote the tempest", "capital of italy", "ocean planet"]

if __name__ == "__main__":
    assert "min_df" not in TextEmbedder().get_params(), "run on the old checkout"
    emb = TextEmbedder(n_components=3, random_state=0).fit(TEXTS)
    dump(emb, HERE / "text_embedder_old_format.skops")
    out = {
        "sklearn_betacal": sklearn_betacal.__version__,
        "probe": PROBE,
        "embedding": emb.transform(PROBE).tolist(),
        "n_terms": len(emb.vectorizer_.vocabulary_),
    }
    (HERE / "text_embedder_old_format.json").write_text(json.dumps(out, indent=1))
