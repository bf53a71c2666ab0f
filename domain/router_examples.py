"""A second reading of a request, by example: a linear classifier over the words and letter
runs of requests whose recipe is known.

Why: the phrase patterns read what their authors thought of. On four sets of requests written
blind, by people who never saw them, the patterns as they stood before each set was read
placed 72% right; a linear support-vector classifier trained on the other sets' requests
placed 82% of the same requests right, and the two together, where the classifier may
overrule the patterns only when it is much surer of its own recipe than of theirs, 84%
(`bench/router_accuracy.py` prints the held-out figures). The patterns stay first: they
explain themselves, honour prohibitions and name the commands of work no task starts.

The examples are `recipes/examples/routing.json` (requests from the development halves of
the bench's request sets, never a held-out one) and every recipe's phrase patterns, each
taught as a request for its recipe. scikit-learn trains the classifier the first time a
machine routes with a set of recipes (about a second and a half); its arrays are kept under
the user's cache folder (`$XDG_CACHE_HOME/controlroom/router`, else `~/.cache/...`), named
by what it was trained on, and applied by hand with numpy after that (a fifth of a second
to read them, under a millisecond a request; tests hold the features and decision values
to the library's). The same recipes and examples always give the same model
(`random_state` is fixed), so routing stays deterministic. A cache that cannot be written
or read is trained again: slower, never wrong.
"""

from __future__ import annotations

import collections
import hashlib
import importlib.metadata
import itertools
import json
import math
import re
import threading
import zipfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from controlroom.domain.recipe import Recipe
from controlroom.domain.user_cache import cache_folder, write_whole

EXAMPLES_FILE = Path(__file__).resolve().parent.parent / "recipes" / "examples" / "routing.json"
#: The label of requests no recipe does (the classifier's own class for them).
NO_RECIPE = "(none)"
#: How much surer of its recipe than of the patterns' choice the classifier must be to
#: overrule them (a difference of decision values). Chosen on development halves only, by
#: leave-one-set-out: on blind sets 1-4 (the patterns as they stood before each was read)
#: 0.3 and 0.5 did equally well; on sets 5-7 (patterns never tuned on them) 0.1-0.3 placed
#: 240-242 of 268 right and 0.5 only 232.
OVERRULE_MARGIN = 0.3
_MODELS_KEPT = 8
#: The classifier's regularisation (scikit-learn's default), chosen with the margin.
_C = 1.0


@dataclass(frozen=True)
class Example:
    request: str
    #: the recipe that does it; None: no recipe does it
    recipe_id: str | None


@dataclass(frozen=True)
class Reading:
    """What the classifier read: each label's decision value, the surest first."""

    scores: dict[str, float]

    @property
    def top(self) -> str:
        return next(iter(self.scores))


@lru_cache(maxsize=1)
def load_examples(path: Path = EXAMPLES_FILE) -> tuple[Example, ...]:
    rows = json.loads(path.read_text(encoding="utf-8"))["examples"]
    return tuple(Example(row["request"], row["recipe_id"]) for row in rows)


@lru_cache(maxsize=1)
def exemplified() -> frozenset[str]:
    """The recipes the bundled examples were written for (a request for each)."""
    return frozenset(e.recipe_id for e in load_examples() if e.recipe_id is not None)


def _training_set(
    recipes: tuple[tuple[str, bool, tuple[str, ...]], ...],
) -> tuple[tuple[str, str], ...]:
    """(request, label) pairs for these recipes (id, started by a command of its own, its
    patterns): the bundled examples of the recipes present (a recipe no task starts is
    taught as none: its work has its own command) and each phrase pattern as a request for
    its recipe."""
    startable = {recipe_id for recipe_id, started_by, _ in recipes if not started_by}
    known = {recipe_id for recipe_id, _, _ in recipes}
    pairs: list[tuple[str, str]] = []
    for example in load_examples():
        if example.recipe_id is None or example.recipe_id not in startable:
            if example.recipe_id is None or example.recipe_id in known:
                pairs.append((example.request, NO_RECIPE))
        else:
            pairs.append((example.request, example.recipe_id))
    for recipe_id, started_by, patterns in recipes:
        if started_by:
            continue
        for pattern in patterns:
            if not pattern.startswith("/"):  # a regex is no request anybody types
                pairs.append((pattern, recipe_id))
    return tuple(pairs)


_WHITE_SPACES = re.compile(r"\s\s+")
_WORD = re.compile(r"(?u)\b\w\w+\b")
#: The kinds of TF-IDF features, as scikit-learn's `TfidfVectorizer` takes them: words and
#: word pairs, and letter runs of two to five inside words (padded by a space), which read
#: "proof-reading", "chapt." and a misspelt word as near their right form.
_FEATURES: dict[str, dict[str, Any]] = {
    "words": {"ngram_range": (1, 2), "sublinear_tf": True},
    "letters": {"analyzer": "char_wb", "ngram_range": (2, 5), "sublinear_tf": True},
}
#: Part of the kept model's name: a change here (or in scikit-learn) trains it afresh.
_MODEL_FORM = "linearsvc-seed0-v1"


def _grams(kind: str, text: str) -> list[str]:
    """The terms scikit-learn's analyzer makes of `text` for this kind of feature, exactly
    (lower-cased; tests/test_router_examples.py holds them to the library's)."""
    text = text.lower()
    if kind == "words":
        tokens = _WORD.findall(text)
        return tokens + [f"{a} {b}" for a, b in itertools.pairwise(tokens)]
    grams: list[str] = []
    for word in _WHITE_SPACES.sub(" ", text).split():
        padded = f" {word} "
        for n in range(2, 6):
            if len(padded) <= n:  # a short word counts once, whole
                grams.append(padded)
                break
            grams.extend(padded[i : i + n] for i in range(len(padded) - n + 1))
    return grams


class _Model:
    """A trained linear classifier, applied by hand: reading a request needs numpy only
    (scikit-learn is imported to train, once a machine and set of recipes: the arrays are
    kept under the user's cache folder)."""

    def __init__(
        self,
        pairs: tuple[tuple[str, str], ...],
        vocabularies: dict[str, dict[str, int]],
        idf: dict[str, Any],
        weights: Any,
        intercepts: Any,
        classes: list[str],
    ) -> None:
        self.requests = [request for request, _ in pairs]
        self.labels = [label for _, label in pairs]
        self.vocabularies = vocabularies
        self.idf = idf
        self.weights = weights  # features x classes
        self.intercepts = intercepts
        self.classes = classes
        self._offsets = {"words": 0, "letters": len(vocabularies["words"])}
        self._rows: list[dict[int, float]] | None = None

    @classmethod
    def trained(cls, pairs: tuple[tuple[str, str], ...]) -> _Model:
        from scipy.sparse import hstack
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.svm import LinearSVC

        requests = [request for request, _ in pairs]
        vectorizers = {kind: TfidfVectorizer(**options) for kind, options in _FEATURES.items()}
        matrix = hstack([v.fit_transform(requests) for v in vectorizers.values()]).tocsr()
        classifier = LinearSVC(C=_C, random_state=0).fit(matrix, [label for _, label in pairs])
        return cls(
            pairs,
            {
                kind: {str(t): int(i) for t, i in v.vocabulary_.items()}
                for kind, v in vectorizers.items()
            },
            {kind: v.idf_ for kind, v in vectorizers.items()},
            classifier.coef_.T.copy(),
            classifier.intercept_.copy(),
            [str(label) for label in classifier.classes_],
        )

    def row(self, text: str) -> dict[int, float]:
        """The request's TF-IDF features (each kind's block of unit length), by index."""
        row: dict[int, float] = {}
        for kind, vocabulary in self.vocabularies.items():
            counts = collections.Counter(
                vocabulary[g] for g in _grams(kind, text) if g in vocabulary
            )
            values = {i: (1.0 + math.log(n)) * float(self.idf[kind][i]) for i, n in counts.items()}
            norm = math.sqrt(sum(v * v for v in values.values()))
            offset = self._offsets[kind]
            for i, value in values.items():
                row[offset + i] = value / norm
        return row

    def read(self, text: str) -> Reading:
        row = self.row(text)
        values = self.intercepts.copy()
        if row:
            indexes = list(row)
            values = values + self.weights[indexes].T @ [row[i] for i in indexes]
        if len(self.classes) == 2:  # one decision value: the second class's side
            value = float(values[0])
            scores = {self.classes[1]: value, self.classes[0]: -value}
        else:
            scores = {label: float(v) for label, v in zip(self.classes, values, strict=True)}
        return Reading(dict(sorted(scores.items(), key=lambda item: (-item[1], item[0]))))

    def nearest(self, text: str, label: str) -> str:
        """The example of `label` most like `text` (by the cosine of their TF-IDF rows)."""
        if self._rows is None:
            self._rows = [self.row(request) for request in self.requests]
        rows, row = self._rows, self.row(text)

        def likeness(i: int) -> tuple[float, int]:
            return sum(v * rows[i].get(k, 0.0) for k, v in row.items()), -i

        candidates = [i for i, taught in enumerate(self.labels) if taught == label]
        return self.requests[max(candidates, key=likeness)]

    def keep(self, path: Path) -> None:
        """Kept for later processes (an unwritable cache: trained again, never wrong)."""
        import numpy as np

        arrays: dict[str, Any] = {
            f"{kind}_terms": np.array(sorted(v, key=v.__getitem__), dtype=str)
            for kind, v in self.vocabularies.items()
        }
        arrays |= {f"{kind}_idf": idf for kind, idf in self.idf.items()}
        arrays |= {
            "weights": self.weights,
            "intercepts": self.intercepts,
            "classes": np.array(self.classes, dtype=str),
        }
        if write_whole(path, lambda out: np.savez(out, **arrays)):
            _prune(path.parent)

    @classmethod
    def kept(cls, path: Path, pairs: tuple[tuple[str, str], ...]) -> _Model | None:
        """The model kept at `path`, or None when there is none or it cannot be read."""
        import numpy as np

        try:
            with np.load(path, allow_pickle=False) as kept:
                vocabularies = {
                    kind: {str(t): i for i, t in enumerate(kept[f"{kind}_terms"])}
                    for kind in _FEATURES
                }
                idf = {kind: kept[f"{kind}_idf"] for kind in _FEATURES}
                weights, intercepts = kept["weights"], kept["intercepts"]
                classes = [str(c) for c in kept["classes"]]
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile):
            return None
        if weights.shape != (sum(len(v) for v in vocabularies.values()), len(intercepts)):
            return None  # damaged: trained again
        return cls(pairs, vocabularies, idf, weights, intercepts, classes)


def _prune(folder: Path) -> None:
    """Keep the `_MODELS_KEPT` newest models (each set of recipes a workspace routes with,
    and each release's examples, trains its own): older ones are trained again if needed."""
    try:
        kept = sorted(folder.glob("*.npz"), key=lambda p: p.stat().st_mtime, reverse=True)
        for old in kept[_MODELS_KEPT:]:
            old.unlink()
    except OSError:
        pass  # another process pruned it first


def _cache_path(pairs: tuple[tuple[str, str], ...]) -> Path | None:
    try:
        version = importlib.metadata.version("scikit-learn")
    except importlib.metadata.PackageNotFoundError:
        return None
    digest = hashlib.sha256(
        json.dumps([_MODEL_FORM, _C, version, pairs], ensure_ascii=False).encode()
    ).hexdigest()
    return cache_folder("router") / f"{digest[:32]}.npz"


def _model(pairs: tuple[tuple[str, str], ...]) -> _Model:
    path = _cache_path(pairs)
    if path is not None and (kept := _Model.kept(path, pairs)) is not None:
        return kept
    model = _Model.trained(pairs)
    if path is not None:
        model.keep(path)
    return model


_Key = tuple[tuple[str, bool, tuple[str, ...]], ...]
_models: dict[_Key, _Model | None] = {}
_training = threading.Lock()


def _key(recipes: list[Recipe]) -> _Key:
    return tuple((r.recipe_id, r.started_by is not None, tuple(r.task_patterns)) for r in recipes)


def trained(recipes: list[Recipe]) -> bool:
    """Whether this process holds the classifier for these recipes already (routing is then
    a few milliseconds; the first time, about two seconds)."""
    return _key(recipes) in _models


def model_for(recipes: list[Recipe]) -> _Model | None:
    """The classifier for these recipes, trained the first time a process asks (None when
    it has fewer than two things to tell apart)."""
    key = _key(recipes)
    if key in _models:
        return _models[key]
    with _training:  # two threads asking at once train it once
        if key not in _models:
            pairs = _training_set(key)
            if len(_models) >= _MODELS_KEPT:
                _models.clear()
            # fewer than two labels: nothing to tell apart
            _models[key] = _model(pairs) if len({label for _, label in pairs}) >= 2 else None
        return _models[key]


def forget_models() -> None:
    """Drop the trained classifiers (the next routing trains again)."""
    _models.clear()


def overrules(reading: Reading, chosen: str | None, forbidden: set[str]) -> str | None:
    """The label the classifier puts in place of the patterns' choice (`chosen`, None for
    none), or None when the patterns' choice stands: the classifier must be surer of its
    own label by `OVERRULE_MARGIN`, and may never pick a recipe the request forbids."""
    top = reading.top
    theirs = chosen if chosen is not None else NO_RECIPE
    if top == theirs or top in forbidden:
        return None
    against = reading.scores.get(theirs)
    if against is not None and reading.scores[top] - against <= OVERRULE_MARGIN:
        return None
    return top
