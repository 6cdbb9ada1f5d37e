"""Predictions before GPUs are spent: AIConfigurator estimates per recipe (target, curve), the mocker's
timing table built from them (mocker_table), the source label of every result row (source), and a
physics check on measurements (physics)."""
