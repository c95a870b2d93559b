"""From measurements to pass or fail: checks (a declared check measured, once its run's
preconditions hold) · paired and paired_trials (a paired run's A-B-B-A trials and verdicts) ·
gate (the baseline gate's statistics) · verdict (floor and baseline, both) · judge (a check
and its run to a decision) · baselines (stored, validated, written atomically) · provenance."""
