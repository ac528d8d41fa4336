"""Hubness and anisotropy claims can fail. Built over random points, which have neither a hub
nor a shared offset, the build rejects them even where their numbers hold, since random points
would make them true; built over points that have a hub and an offset, it accepts them."""

from __future__ import annotations

import json

import numpy as np
import pytest
import yaml

from conftest import lab_data, run_labs
from generator.kinds.embeddings.chance import top_k_counts
from test_embeddings import error_at, site_with_lab  # noqa: F401 (the fixture)

LAB_YAML = "content/labs/embeddings/lab.yaml"
QUIZ = """\
questions:
  - id: cosine-dot
    type: single
    prompt: The vectors on this page all have length 1. What is the cosine of two of them?
    options:
      - {text: Their dot product, correct: true, why: Nothing is divided.}
      - {text: Their distance, why: Distance falls as cosine rises.}
"""


def unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def with_vectors(lab, mean: np.ndarray, cls: np.ndarray, claims: list[str]) -> list[str]:
    """The lab's stored vectors replaced by these rows (items, then queries, as lab.yaml lists
    them), its claims by ``claims``, and its quiz, whose answer keys are the real model's, by one
    question of no kind of its own.
    The item ids, in order."""
    spec = yaml.safe_load((lab / "lab.yaml").read_text(encoding="utf-8"))["embeddings"]
    entries = spec["items"] + spec.get("queries", [])
    store = lab / "embeddings.json"
    data = json.loads(store.read_text(encoding="utf-8"))
    data["vectors"] = {e["text"]: {"mean": [round(float(x), 8) for x in m], "cls": [round(float(x), 8) for x in c]}
                       for e, m, c in zip(entries, mean, cls)}
    store.write_text(json.dumps(data), encoding="utf-8")
    text = (lab / "lab.yaml").read_text(encoding="utf-8")
    head = text[:text.index("  claims:\n")]
    (lab / "lab.yaml").write_text(head + "  claims:\n" + "".join(f"    - '{c}'\n" for c in claims), encoding="utf-8")
    (lab / "quiz.yaml").write_text(QUIZ, encoding="utf-8")
    return [e["id"] for e in spec["items"]]


def sizes(lab) -> tuple[int, int]:
    spec = yaml.safe_load((lab / "lab.yaml").read_text(encoding="utf-8"))["embeddings"]
    return len(spec["items"]), len(spec["items"]) + len(spec.get("queries", []))


def test_claims_that_hold_on_random_points_fail_the_build(site_with_lab, capsys):  # noqa: F811
    n, total = sizes(site_with_lab)
    rng = np.random.default_rng(7)
    mean, cls = unit(rng.standard_normal((total, 384))), unit(rng.standard_normal((total, 384)))
    counts = top_k_counts(mean[:n] @ mean[:n].T, 3)
    ids = yaml.safe_load((site_with_lab / "lab.yaml").read_text(encoding="utf-8"))["embeddings"]["items"]
    busiest, count = ids[int(np.argmax(counts))]["id"], int(counts.max())
    groups = [e["group"] for e in ids]
    cross = [float(mean[i] @ mean[j]) for i in range(n) for j in range(i + 1, n) if groups[i] != groups[j]]
    low = round(float(np.mean(cross)) - 0.05, 2)  # below the random points' own mean: true of them
    hub = f'"{busiest}" is in the top 3 of at least {count} items'
    crowd = f"mean cosine across groups > {low}"
    near_zero = "mean cosine across groups < 0.1"  # random unit vectors are near orthogonal too
    with_vectors(site_with_lab, mean, cls, [hub, crowd, near_zero, "mean [CLS] cosine across groups > 0.5"])
    code, _, err = run_labs(capsys, "build")
    assert code == 1
    found = error_at(err, LAB_YAML, hub, "claim")
    assert "fails: it would hold for random points: 23 random unit vectors in 384 dimensions" in found, found
    assert "so it shows no hubness; claim a count they reach in under 1% of draws" in found
    assert "fails: it would hold for random points" in error_at(err, LAB_YAML, crowd, "claim")
    assert "give a mean < 0.1 in 100.0% of 400 draws" in error_at(err, LAB_YAML, near_zero, "claim")
    assert "fails: the mean is 0.0" in error_at(err, LAB_YAML, "mean [CLS] cosine", "claim")


@pytest.mark.parametrize("offset_mean", [False, True])
def test_a_real_hub_and_a_real_offset_pass_and_an_offset_fails_a_near_zero_claim(site_with_lab, capsys, offset_mean):  # noqa: F811
    """Item 0 is the normalised sum of the other items, so it is nearest to each of them (a
    hub); every [CLS] vector shares a large coordinate 99 (an offset). With the offset in the
    mean-pooled vectors as well, 'mean cosine across groups < 0.1' is false, and fails (without
    it the claim is true, but of random points too, and is not made)."""
    n, total = sizes(site_with_lab)
    rng = np.random.default_rng(11)
    mean, cls = rng.standard_normal((total, 384)), rng.standard_normal((total, 384))
    mean[0] = unit(mean[1:n]).sum(axis=0)
    cls[:, 99] += 60.0
    if offset_mean:
        mean[:, 99] += 60.0
    ids = with_vectors(site_with_lab, unit(mean), unit(cls), [
        f'"{yaml.safe_load((site_with_lab / "lab.yaml").read_text(encoding="utf-8"))["embeddings"]["items"][0]["id"]}"'
        " is in the top 3 of at least 20 items",
        "mean [CLS] cosine across groups > 0.5"] + ["mean cosine across groups < 0.1"] * offset_mean)
    code, _, err = run_labs(capsys, "build")
    if offset_mean:
        assert code == 1 and [e for e in err if ": error: " in e] == [
            error_at(err, LAB_YAML, "mean cosine across groups < 0.1", "claim")]
        assert "fails: the mean is 0.9" in err[0]
        return
    assert code == 0, err
    data = lab_data(site_with_lab.parents[2] / "site" / "labs" / "embeddings" / "index.html")
    assert data["hub"]["item"] == 0 and data["hub"]["count"] >= data["hub"]["rare"] and ids[0] == "cat"
    assert data["cls"]["dim"] == 99 and data["cls"]["mean"] > 0.9 and abs(data["cls"]["centred"]) < 0.1
