#!/usr/bin/env bash
# The upgrade gate's recipe (.github/workflows/upgrade-gate.yml runs it on an MI355X node):
# the build in use (INCUMBENT_IMAGE) and the new one (CANDIDATE_IMAGE) serve SUITE in one
# paired run, each server in a container of its own from its image (--llm-*-image), after a
# plan whose flag checks run in both images. Extra arguments go to both pytest runs (e.g.
# --llm-container-arg=--volume=/models:/models).
#
#   INCUMBENT_IMAGE=... CANDIDATE_IMAGE=... ci/upgrade-gate.sh [pytest args...]
#
# BASELINE_IMAGE, the incumbent's name before results format 2, is still read when
# INCUMBENT_IMAGE is unset ("baseline" now means only a stored value in baselines/).
#
# Optional: SUITE (suites/glm52), TARGET (mi355x), INCONCLUSIVE (fail | pass), OUT (where
# allure-results/, results.json and server-logs/ go: .), SUMMARY (the Markdown summary is
# appended there: $GITHUB_STEP_SUMMARY on GitHub Actions, else $OUT/summary.md), PYTEST
# (pytest).
set -euo pipefail
if [ -z "${INCUMBENT_IMAGE:-}" ] && [ -n "${BASELINE_IMAGE:-}" ]; then
    echo "upgrade-gate: BASELINE_IMAGE is the old name of INCUMBENT_IMAGE; using it" >&2
    INCUMBENT_IMAGE=$BASELINE_IMAGE
fi
: "${INCUMBENT_IMAGE:?set INCUMBENT_IMAGE to the build in use (name:tag or name@digest)}"
: "${CANDIDATE_IMAGE:?set CANDIDATE_IMAGE to the build to gate}"
suite="${SUITE:-suites/glm52}"
out="${OUT:-.}"
mkdir -p "$out"  # --llm-results refuses a directory that does not exist
pytest_cmd="${PYTEST:-pytest}"
common=(--rocm-target "${TARGET:-mi355x}" "$suite"
        --llm-engine-image "$INCUMBENT_IMAGE" --llm-candidate-image "$CANDIDATE_IMAGE" "$@")

# Exit status 0: the run can go ahead (every profile's flags accepted by both images' own
# parsers, model present). Anything else stops here, before a server starts.
"$pytest_cmd" --llm-plan "${common[@]}"

# Both builds' server logs are kept (a clean stop deletes them otherwise): with the results
# JSON and the Allure results they are what the workflow uploads.
"$pytest_cmd" "${common[@]}" --llm-inconclusive="${INCONCLUSIVE:-fail}" \
    --alluredir "$out/allure-results" --llm-results "$out/results.json" \
    --llm-keep-logs --llm-log-dir "$out/server-logs" \
    --llm-summary "${SUMMARY:-${GITHUB_STEP_SUMMARY:-$out/summary.md}}"
