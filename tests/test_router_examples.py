"""The router's second reading by example requests (domain/router_examples.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from controlroom.domain import router_examples
from controlroom.domain.recipe import Recipe
from controlroom.domain.router import (
    _index_of,
    _ruled_out,
    initial_args_from,
    route,
    route_by_patterns,
)
from controlroom.domain.router_examples import NO_RECIPE, Reading, overrules
from tests.test_router import BUNDLED

BENCH = Path(__file__).parent.parent / "bench"


def test_the_examples_are_the_development_halves_and_never_a_held_out_request() -> None:
    dev: list[tuple[str, str | None]] = []
    held_out: set[str] = set()
    for path in sorted(BENCH.glob("router_requests*.json")):
        for row in json.loads(path.read_text(encoding="utf-8"))["requests"]:
            if row["split"] == "dev":
                dev.append((row["request"], (row["acceptable"] or [None])[0]))
            else:
                held_out.add(row["request"])
    examples = [(e.request, e.recipe_id) for e in router_examples.load_examples()]
    assert examples == dev  # bench/routing_examples.py writes them; run it after a set changes
    assert not held_out & {request for request, _ in examples}


def test_the_reading_is_the_same_every_time_the_model_is_trained() -> None:
    request = "Could you look over how the middle chapters hang together?"
    model = router_examples.model_for(BUNDLED)
    router_examples.forget_models()
    retrained = router_examples.model_for(BUNDLED)
    assert model is not None and retrained is not None and retrained is not model
    assert router_examples.trained(BUNDLED)
    assert model.read(request).scores == retrained.read(request).scores
    assert model.nearest(request, "structural_outline") == retrained.nearest(
        request, "structural_outline"
    )


def test_the_classifier_overrules_only_when_much_surer_and_never_for_a_forbidden_recipe() -> None:
    reading = Reading({"draft": 1.2, "check": 0.1, NO_RECIPE: -0.5})
    assert overrules(reading, "check", set()) == "draft"  # 1.1 surer
    assert overrules(reading, None, set()) == "draft"  # none: -0.5
    assert overrules(reading, "draft", set()) is None  # it agrees
    assert overrules(reading, "check", {"draft"}) is None  # the request rules it out
    close = Reading({"draft": 0.25, "check": 0.0})
    assert overrules(close, "check", set()) is None  # 0.25: not sure enough
    assert overrules(close, "unknown", set()) == "draft"  # the patterns' choice it never saw


def test_a_request_the_patterns_miss_is_routed_by_its_likeness_to_examples() -> None:
    request = "Where are the holes in my plot?"
    assert not route_by_patterns(request, BUNDLED).routable
    decision = route(request, BUNDLED)
    assert decision.recipe_id == "analytical_consistency"
    assert decision.matched_pattern is None and "reads most like" in decision.reason


def test_a_workspace_recipe_chosen_by_its_patterns_is_never_overruled() -> None:
    # "translate ... into French" is, among the bundled recipes, a request none does
    translate = Recipe.model_validate({"recipe_id": "translate", "task_patterns": ["translate"]})
    decision = route("translate the prose into French", [*BUNDLED, translate])
    assert decision.recipe_id == "translate"
    assert not route("translate the prose into French", BUNDLED).routable


def test_a_prohibited_recipe_is_not_the_second_reading_s_choice() -> None:
    request = "Draft scene 4 from the outline, and don't run a consistency check on it"
    decision = route(request, BUNDLED)
    assert decision.recipe_id == "creative_draft_scene"


ODD_REQUESTS = (
    "",
    "a",
    "Ch.3  -- proof-reading, pls!!",
    "Café scène 4: naïve\tDRAFT\n\nplease",
    "x y z",
    "reread 12-14 & fix 'em",
)


def test_the_features_and_decisions_applied_by_hand_are_scikit_learns() -> None:
    from scipy.sparse import hstack
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.svm import LinearSVC

    pairs = router_examples._training_set(router_examples._key(BUNDLED))
    requests = [request for request, _ in pairs]
    vectorizers = [TfidfVectorizer(**o) for o in router_examples._FEATURES.values()]
    matrix = hstack([v.fit_transform(requests) for v in vectorizers]).tocsr()
    classifier = LinearSVC(C=1.0, random_state=0).fit(matrix, [label for _, label in pairs])
    model = router_examples._Model.trained(pairs)
    for text in (*requests[::7], *ODD_REQUESTS):
        theirs = hstack([v.transform([text]) for v in vectorizers]).tocsr()
        ours = model.row(text)
        assert set(ours) == set(theirs.indices.tolist()), text
        for index, value in zip(theirs.indices, theirs.data, strict=True):
            assert abs(ours[int(index)] - value) < 1e-12, text
        expected = dict(
            zip(classifier.classes_, classifier.decision_function(theirs)[0], strict=True)
        )
        for label, value in model.read(text).scores.items():
            assert abs(value - expected[label]) < 1e-9, (text, label)


def test_the_model_is_kept_and_read_back_whole_and_a_damaged_one_is_trained_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    pairs = router_examples._training_set(router_examples._key(BUNDLED))
    trained = router_examples._model(pairs)
    kept = list((tmp_path / "controlroom" / "router").glob("*.npz"))
    assert len(kept) == 1
    again = router_examples._Model.kept(kept[0], pairs)
    assert again is not None
    for text in ("Where are the holes in my plot?", *ODD_REQUESTS):
        assert again.read(text).scores == trained.read(text).scores
    kept[0].write_bytes(b"not a model")
    assert router_examples._Model.kept(kept[0], pairs) is None
    assert (
        router_examples._model(pairs).read("tighten ch 2").scores
        == trained.read("tighten ch 2").scores
    )
    assert router_examples._Model.kept(kept[0], pairs) is not None  # written again


def test_only_the_newest_models_are_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    folder = tmp_path / "controlroom" / "router"
    folder.mkdir(parents=True)
    for n in range(12):
        (folder / f"old{n:02}.npz").write_bytes(b"x")
        os.utime(folder / f"old{n:02}.npz", (1000 + n, 1000 + n))
    router_examples._model(router_examples._training_set(router_examples._key(BUNDLED)))
    left = sorted(p.name for p in folder.glob("*.npz"))
    assert len(left) == router_examples._MODELS_KEPT
    assert "old11.npz" in left and "old04.npz" not in left  # the newest stay


def test_what_a_request_rules_out_is_never_its_route() -> None:
    # a comma that turns to the ask ends the prohibition
    assert route("Don't update the cards, just check consistency", BUNDLED).recipe_id == (
        "analytical_consistency"
    )
    assert route(
        "Don't check consistency, just review the prose of scene 1", BUNDLED
    ).recipe_id == ("analytical_prose")
    # the act a prohibition names rules out the recipes whose phrases begin with it
    decision = route("Don't draft anything yet. Just outline scene 5.", BUNDLED)
    assert decision.recipe_id == "structural_outline"
    index = _index_of(BUNDLED)
    assert "creative_draft_scene" in _ruled_out("Don't draft anything yet", index)
    assert _ruled_out("Don't write past the end of the beat", index) == set()  # a bound
    assert _ruled_out("without touching the cards", index) == set()


def test_a_misspelt_unit_still_gives_the_scope() -> None:
    assert initial_args_from("draft scnee 4") == {"scene_number": 4}
    assert initial_args_from("chaptre 9 needs work") == {"chapter_number": 9}
    assert initial_args_from("these 4 scenes") == {}


def test_asking_what_the_tool_does_is_answered_with_the_recipe_list() -> None:
    for asked in ("help", "What can you do?", "how does this work"):
        decision = route(asked, BUNDLED)
        assert not decision.routable and "controlroom recipes list" in decision.reason
    decision = route("help me write a blurb for the back cover", BUNDLED)
    assert not decision.routable and "controlroom plan create" in decision.reason
