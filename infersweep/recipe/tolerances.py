"""How a nightly run is judged against its baseline: the recipe's `regression` block.

Its own module because it is the one place recipe validation needs the results' metric vocabulary
(which metrics exist, their default tolerances): that import is the single line below.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator

from infersweep.params_files import Strict as _Strict


class Regression(_Strict):
    """How a nightly run is judged against its baseline (infersweep.results.regression.judge_run).

    `tolerances` maps a results metric (its canonical name, e.g. ttft_p50_ms, output_throughput_tok_s; an old
    spelling is mapped with a deprecation warning) to `{rel: 0.1}` (10 %),
    `{abs: 0.01}`, or null to leave it unchecked; unnamed metrics keep the defaults. A change counts only
    when it is beyond its tolerance AND more than `z` standard errors of the run-to-run noise."""

    tolerances: dict[str, dict[Literal["rel", "abs"], float] | None] = {}
    z: float = Field(default=3.0, gt=0, le=10)
    # 3 by default: with one run per point the noise of a repetition cannot be measured, every verdict is
    # "noise unknown" and rests on the tolerance alone, so a nightly check flaps on run-to-run noise
    # (infersweep.results.regression: the noise is pooled over the repetitions of every point).
    repetitions: int = Field(
        default=3,
        ge=1,
        le=20,
        description="nightly runs of each point, reduced to the median "
        "(its spread is the noise a verdict is judged against; 1 = noise unknown)",
    )

    @field_validator("tolerances")
    @classmethod
    def _known_metrics(cls, v: dict) -> dict:
        from infersweep.metrics import canonical, normalize_tolerances

        try:
            normalize_tolerances(v)  # one clear error for a bad entry
            return {
                k if k == "z" else canonical(k, f"regression.tolerances.{k}", warn=True): spec for k, spec in v.items()
            }
        except ValueError as e:
            raise ValueError(str(e)) from None

    def for_judge(self) -> dict[str, Any]:
        return {**self.tolerances, "z": self.z}
