"""From measurements to pass or fail: checks (what a check reads and its preconditions) ·
gate (the baseline gate's statistics) · verdict (floor and baseline, both) · judge (a check
and its run to a decision) · baselines (stored, validated, written atomically) · provenance."""
