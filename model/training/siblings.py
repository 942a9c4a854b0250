"""The lab's sibling models: what each changes of the shipped recipe, and the budget they all share.

Every sibling shares the budget (``BUDGET``: epochs, schedule, batches, precision), the shipped vocabulary and
the recipe; ``seed`` sets both the initialisation and the data order. ``model.training.lab`` trains them in
this order; ``model.training.lab_export`` ships them.
"""

from __future__ import annotations

from dataclasses import dataclass

EPOCHS, MAX_TOKENS = 6, 2000
BUDGET = ["--epochs", str(EPOCHS), "--max-tokens", str(MAX_TOKENS), "--warmup", "800", "--lr-scale", "0.625",
          "--precision", "fp32", "--record-every", "25", "--snapshots", "--checkpoint-minutes", "5"]


@dataclass(frozen=True)
class Sibling:
    name: str
    heads: int
    scaled: bool = True
    attention: str = "dot"
    seed: int = 1
    tests: str = ""  # the claim it is for

    @property
    def args(self) -> list[str]:
        out = ["--heads", str(self.heads), "--seed", str(self.seed), "--attention", self.attention]
        # Additive scores are never multiplied by 1/√d_k (TransformerConfig.scale): its config says so.
        return out + ([] if self.scaled and self.attention == "dot" else ["--no-scale"])

    @property
    def label(self) -> str:
        what = {"dot": "dot product" + ("" if self.scaled else ", unscaled"), "additive": "additive"}[self.attention]
        seed = f", seed {self.seed}" if self.seed != 1 else ""
        return f"h = {self.heads}, d_k = {192 // self.heads}, {what}{seed}"


FOOTNOTE4, TABLE3A = "footnote 4", "Table 3 (A)"
ADDITIVE = f"{FOOTNOTE4}: additive attention at d_k = 192"
# In the order they train: the reference and footnote 4's pair first, then the seeds, then Table 3 (A)'s rest.
SIBLINGS: tuple[Sibling, ...] = (
    Sibling("h8", 8, tests="the reference: the shipped architecture under the lab's budget"),
    Sibling("h1", 1, tests=f"{TABLE3A}; {FOOTNOTE4} (scaled, d_k = 192)"),
    Sibling("h1-unscaled", 1, scaled=False, tests=f"{FOOTNOTE4}: no 1/√d_k at d_k = 192"),
    Sibling("h1-additive", 1, attention="additive", tests=ADDITIVE),
    Sibling("h8-unscaled", 8, scaled=False, tests=f"{FOOTNOTE4}: no 1/√d_k at d_k = 24"),
    Sibling("h1-seed2", 1, seed=2, tests="seed noise"),
    Sibling("h1-unscaled-seed2", 1, scaled=False, seed=2, tests="seed noise"),
    Sibling("h8-seed2", 8, seed=2, tests="seed noise"),
    Sibling("h4", 4, tests=TABLE3A),
    Sibling("h2", 2, tests=TABLE3A),
    Sibling("h16", 16, tests=TABLE3A),
    # Three seeds for every setting a verdict uses: the verdicts' pairs first, Table 3 (A)'s rest after.
    Sibling("h1-seed3", 1, seed=3, tests=f"{TABLE3A}; {FOOTNOTE4} (scaled, d_k = 192)"),
    Sibling("h8-seed3", 8, seed=3, tests="the reference: the shipped architecture under the lab's budget"),
    Sibling("h1-unscaled-seed3", 1, scaled=False, seed=3, tests=f"{FOOTNOTE4}: no 1/√d_k at d_k = 192"),
    Sibling("h1-additive-seed2", 1, attention="additive", seed=2, tests=ADDITIVE),
    Sibling("h8-unscaled-seed2", 8, scaled=False, seed=2, tests=f"{FOOTNOTE4}: no 1/√d_k at d_k = 24"),
    Sibling("h1-additive-seed3", 1, attention="additive", seed=3, tests=ADDITIVE),
    Sibling("h8-unscaled-seed3", 8, scaled=False, seed=3, tests=f"{FOOTNOTE4}: no 1/√d_k at d_k = 24"),
    Sibling("h2-seed2", 2, seed=2, tests=TABLE3A),
    Sibling("h4-seed2", 4, seed=2, tests=TABLE3A),
    Sibling("h16-seed2", 16, seed=2, tests=TABLE3A),
    Sibling("h2-seed3", 2, seed=3, tests=TABLE3A),
    Sibling("h4-seed3", 4, seed=3, tests=TABLE3A),
    Sibling("h16-seed3", 16, seed=3, tests=TABLE3A),
)
BY_NAME = {s.name: s for s in SIBLINGS}
