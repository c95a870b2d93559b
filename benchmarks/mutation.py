"""Mutation testing of the verdict code: do the fast unit tests catch a bug planted in it?

Runs mutmut (``[tool.mutmut]`` in pyproject.toml: the verdict, gate, metrics, parity,
long-context and degeneration modules, mutated one small change at a time, each mutant run
against the fast tests that cover it) and prints, per module, how many mutants the tests
killed, how many survived, timed out or are listed below as equivalent, and the score:

    score = (killed + timeout) / (mutants - equivalent)

A timeout counts as caught (the planted bug made the tests hang, which a CI run notices);
a mutant never run (an interrupted run) counts as not caught and is reported as such.
An equivalent mutant changes no observable behaviour (the rewritten code computes the same
thing), so no test can kill it; each one is listed in ``EQUIVALENT`` with its reason and
counted in its own column, never silently. An entry that matches no survivor any more is
reported as stale; one that a test kills is reported as not equivalent after all.

Cost: each mutant reruns every test that calls the mutated function, stopping at the first
failure, so a survivor costs the full duration of those tests. About 3150 mutants; the
gate-noise simulation tests (~7 s) run for every verdict, gate and metrics mutant and the
degeneration corpus tests (~14 s) for every degeneration mutant, so a full run is hours on
one core. ``--module`` runs one module; ``--survivors`` reruns only what the last run did
not catch, after a test is added.

Usage (from a clone with the test extras installed):

    python benchmarks/mutation.py                  # every configured module
    python benchmarks/mutation.py --module gate    # one module (repeatable)
    python benchmarks/mutation.py --survivors      # rerun the last run's survivors
    python benchmarks/mutation.py --resume         # finish an interrupted run
    python benchmarks/mutation.py --report-only    # the table of the last run

Exit status: 0 when the overall score is >= ``--min-score`` (default 0.90), 1 below it,
2 when mutmut could not run (not installed, or the unmutated tests fail).
``mutants/`` (git-ignored) is mutmut's working copy; a plain run rebuilds it, so results
never come from an older tree.
"""

from __future__ import annotations

import argparse
import fnmatch
import re
import shutil
import subprocess
import sys
import tomllib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CAUGHT = ("killed", "timeout", "caught by type check", "segfault")


@dataclass(frozen=True)
class Equivalent:
    """A mutant of ``function`` in ``module`` whose mutated line is ``mutated`` (stripped;
    with ``part``, contains it) and, when given, whose original line contains ``original``,
    and which changes nothing observable."""

    module: str
    function: str
    mutated: str
    reason: str
    original: str = ""
    part: bool = True

    def matches(self, old: list[str], new: list[str]) -> bool:
        hit = any((self.mutated in ln) if self.part else (self.mutated == ln) for ln in new)
        return hit and (not self.original or any(self.original in ln for ln in old))


EQUIVALENT: tuple[Equivalent, ...] = (
    Equivalent("metrics", "usd_per_million_output_tokens", "output_tok_s < 0",
               "0 is already caught by 'not output_tok_s' just before, so '<= 0' and '< 0' "
               "differ on no input"),
    # parity._tail builds the reference's remaining output for compare(), which reads its
    # token ids, logprobs, top-k and finish reason, never its completion_tokens.
    *(Equivalent("parity", "_tail", mutated, "compare() never reads the tail's "
                 "completion_tokens", original="completion_tokens=max(0, len(g.token_ids)",
                 part=False)
      for mutated in ("completion_tokens=None)", ")",
                      "completion_tokens=max(1, len(g.token_ids) - start))",
                      "completion_tokens=max(0, len(g.token_ids) + start))")),
    # verdict._fmt appends the unit only when it is truthy: None and "" print alike.
    *(Equivalent("verdict", "references", mutated, "_fmt(value, None) prints like "
                 "_fmt(value, '') (the unit is appended only when truthy)")
      for mutated in ("row.get('unit', None)", "row.get('unit', )")),
    # decide: gate_result is read only on the check path, after judge() has set it.
    Equivalent("verdict", "decide", 'gate_result: GateResult | None = ""',
               "the initial value is overwritten before the one read (check mode with an "
               "entry); every other path returns first"),
    # decide: every out() call without a failure passes no cause, so the guard is moot.
    Equivalent("verdict", "decide", "cause if (failure) or True else None",
               "out() is called with a cause only together with a failure message"),
    Equivalent("verdict", "floor_miss", 'float("INF")', "float() reads 'INF' as 'inf'"),
    Equivalent("gate", "detectable", "if nz is None and m is None:",
               "margin() is None exactly when noise() is None, so 'or' and 'and' agree"),
    # run_long_context decodes and judges only successful generations; a failed one
    # carries no tokens, so decoding it gives "" and the detectors find nothing in "".
    Equivalent("long_context", "run_long_context",
               'text = decode(g.token_ids) if (g.ok) or True else ""',
               "a failed generation has no tokens: decode(()) is already \"\"", part=False),
    Equivalent("long_context", "run_long_context",
               "findings = detect(text, config.thresholds) if (g.ok) or True else []",
               "a failed generation's text is \"\", in which no detector fires", part=False),
    # metrics: the inputs are typed floats (perf_counter times, their ratios) and ints.
    *(Equivalent("metrics", "percentile", mutated, "values are floats (perf_counter times "
                 "and their ratios): np.asarray gives float64 with or without dtype=float",
                 original="np.asarray(values, dtype=float)")
      for mutated in ("np.asarray(values, dtype=None)", "np.asarray(values, )")),
    *(Equivalent("metrics", "token_times", mutated, "chunk gaps are float seconds and chunk "
                 "token counts ints: np.array infers float64 and int64 without the dtype")
      for mutated in ("[g for g, _ in r.chunk_gaps], dtype=None)",
                      "[g for g, _ in r.chunk_gaps], )",
                      "[k for _, k in r.chunk_gaps], dtype=None)",
                      "[k for _, k in r.chunk_gaps], )")),
    *(Equivalent("metrics", "token_times", mutated, "n = completion_tokens >= 1 here, and "
                 "np.linspace(first, end, 1) is already [first]")
      for mutated in ("if (n > 1) or True else np.array([first])",
                      "if n >= 1 else np.array([first])")),
    Equivalent("parity", "_lp", "if i <= len(g.token_ids) and g.token_ids[i] == token:",
               "_lp is called only by compare() at the first index where zip(ref, spec) "
               "differs, so i < len(token_ids) of both generations", part=False),
    Equivalent("parity", "natural_prompts", "while len(texts) <= count:",
               "the one extra joined prompt is appended last and cut by texts[:count]; rng "
               "is not used afterwards", part=False),
    Equivalent("gate", "judge", "if m is None and nz is None:",
               "margin() is None exactly when noise() is None, so 'or' and 'and' agree"),
    Equivalent("gate", "judge",
               "return GateResult(ok, low, high, m, delta, pct, alpha=gate.alpha,",
               "GateResult.gated defaults to True, so dropping gated=True changes nothing"),
    Equivalent("long_context", "_Encoder.__init__", 'self.tok.encode("", ).ids',
               "tokenizers' Tokenizer.encode defaults to add_special_tokens=True"),
    Equivalent("long_context", "_needles", "chain = names[c * hops:(c + 2) * hops]",
               "zip(spread, text) keeps only the first hops texts, which depend only on "
               "chain[:hops], the same slice as before"),
    Equivalent("degeneration", "compression_ratio", "if (data) or True else 0.0",
               "0 / len(zlib.compress(b'')) is already 0.0"),
    Equivalent("degeneration", "max_window_compression", 'data = text.encode(errors="replace")',
               "str.encode defaults to utf-8"),
    Equivalent("degeneration", "max_window_compression",
               'text.encode("UTF-8", errors="replace")',
               "'UTF-8' names the same codec as 'utf-8'"),
    Equivalent("degeneration", "bad_chars", r'ch not in "XX\t\n\rXX"',
               "only Cc characters reach the test and 'X' is not Cc"),
    Equivalent("degeneration", "_script", 'unicodedata.name(ch, "XXXX")',
               "'XXXX', like '', is no script: None either way"),
    Equivalent("degeneration", "_script", "and len(name) >= 1 else name[0]",
               "no character is named just FULLWIDTH or HALFWIDTH (every code point of this "
               "Python's unicodedata scanned)"),
    Equivalent("degeneration", "_script", "and len(name) > 2 else name[0]",
               "the two-word FULLWIDTH names are punctuation (COMMA, TILDE...), no script "
               "either way (every code point scanned)"),
    Equivalent("degeneration", "detect", "if (sized) or True else 0.0",
               "ratio is reported only when the finding fires, which requires sized"),
    Equivalent("degeneration", "detect",
               "max_window_compression(text, t.window_bytes) if sized else 1.0",
               "ratio is reported only when the finding fires, which requires sized"),
    Equivalent("degeneration", "window_starts", "if starts[-1] != length + window:",
               "the last window is appended even when the last step already starts there: "
               "every caller takes a maximum, which the same window scored twice leaves "
               "unchanged"),
)


@dataclass(frozen=True)
class Mutant:
    name: str
    status: str

    @property
    def module(self) -> str:
        # pytest_rocm_llm.verdicts.gate.x_judge__mutmut_3 -> pytest_rocm_llm/verdicts/gate.py
        return self.name.rsplit(".", 1)[0].replace(".", "/") + ".py"

    @property
    def function(self) -> str:
        """``judge`` for x_judge__mutmut_3, ``Class.method`` for xǁClassǁmethod__mutmut_1."""
        core = re.sub(r"__mutmut_\d+$", "", self.name.rsplit(".", 1)[1])
        if core.startswith("xǁ"):
            return core[2:].replace("ǁ", ".")
        return core[2:] if core.startswith("x_") else core


def configured_modules() -> list[str]:
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return list(data["tool"]["mutmut"]["only_mutate"])


def select(modules: list[str], wanted: list[str]) -> list[str]:
    if not wanted:
        return modules
    chosen = [m for m in modules if any(w in (m, Path(m).stem) or fnmatch.fnmatch(m, w)
                                        for w in wanted)]
    unknown = [w for w in wanted if not any(w in (m, Path(m).stem) or fnmatch.fnmatch(m, w)
                                            for m in modules)]
    if unknown:
        sys.stderr.write(f"--module {', '.join(unknown)}: not one of the configured modules "
                         f"({', '.join(Path(m).stem for m in modules)}; pyproject.toml "
                         "[tool.mutmut] only_mutate)\n")
        sys.exit(2)
    return chosen


def mutmut(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mutmut", *args], cwd=ROOT,
                          capture_output=True, text=True)


def run(modules: list[str], max_children: int, again: str | None) -> None:
    """A fresh run of every mutant of ``modules``; or, with ``again``, only the last run's
    survivors ("survivors", after adding a test) or the mutants it never reached
    ("resume", after an interruption)."""
    if again is not None:
        last = [m for m in results() if m.module in modules]
        if again == "resume":
            globs = [m.name for m in last if m.status == "not checked"]
        else:
            globs = [m.name for m in last if m.status not in (*CAUGHT, "not checked")]
        if not globs:
            return
    else:
        shutil.rmtree(ROOT / "mutants", ignore_errors=True)
        globs = [m[:-3].replace("/", ".") + ".*" for m in modules]
    (ROOT / "mutants").mkdir(exist_ok=True)
    log = ROOT / "mutants" / "mutation-run.log"
    print(f"mutmut: {len(modules)} module(s), --max-children {max_children} (log: {log})",
          flush=True)
    # Naming the mutants reruns them even when mutmut holds a cached result. The log is
    # written as mutmut goes (its progress line), so a long run can be watched.
    with log.open("w") as f:
        code = subprocess.run([sys.executable, "-m", "mutmut", "run", "--max-children",
                               str(max_children), *globs], cwd=ROOT, stdout=f,
                              stderr=subprocess.STDOUT).returncode
    if code != 0:
        tail = log.read_text(errors="replace")[-3000:]
        sys.stderr.write(f"{tail}\nmutmut run failed (exit {code}); see {log}\n")
        sys.exit(2)


def results() -> list[Mutant]:
    out = mutmut("results", "--all", "true")
    if out.returncode != 0:
        sys.stderr.write(out.stdout + out.stderr + "\nmutmut results failed\n")
        sys.exit(2)
    found = []
    for line in out.stdout.splitlines():
        name, sep, status = line.strip().rpartition(": ")
        if sep and "__mutmut_" in name:
            found.append(Mutant(name, status))
    return found


def diff(name: str) -> tuple[list[str], list[str]]:
    """(original lines, mutated lines) of one mutant."""
    text = mutmut("show", name).stdout
    lines = text.splitlines()
    old = [ln[1:].strip() for ln in lines if ln.startswith("-") and not ln.startswith("---")]
    new = [ln[1:].strip() for ln in lines if ln.startswith("+") and not ln.startswith("+++")]
    return old, new


def equivalent_of(m: Mutant, old: list[str], new: list[str]) -> Equivalent | None:
    for e in EQUIVALENT:
        if Path(m.module).stem == e.module and m.function == e.function \
                and e.matches(old, new):
            return e
    return None


def report(mutants: list[Mutant], modules: list[str], min_score: float) -> int:
    if not mutants:
        sys.stderr.write("no mutmut results: run without --report-only first\n")
        return 2
    rows = []
    survivors: list[tuple[Mutant, list[str], list[str]]] = []
    killed_equivalents: list[Mutant] = []
    used: set[Equivalent] = set()
    totals: Counter[str] = Counter()
    for module in modules:
        mine = [m for m in mutants if m.module == module]
        c: Counter[str] = Counter()
        for m in mine:
            caught = m.status in CAUGHT
            # a diff costs a mutmut call: only survivors' and possible equivalents' are read
            maybe_equivalent = any(e.function == m.function for e in EQUIVALENT)
            wanted = m.status != "not checked" and (not caught or maybe_equivalent)
            old, new = diff(m.name) if wanted else ([], [])
            eq = equivalent_of(m, old, new) if (old or new) else None
            if eq is not None:
                used.add(eq)
                if caught:
                    killed_equivalents.append(m)
                else:
                    c["equivalent"] += 1
                    continue
            if m.status == "not checked":
                c["not checked"] += 1
            elif m.status == "timeout":
                c["timeout"] += 1
            elif caught:
                c["killed"] += 1
            else:
                c["survived"] += 1
                survivors.append((m, old, new))
        c["mutants"] = len(mine)
        totals.update(c)
        rows.append((Path(module).stem, c))
    rows.append(("overall", totals))
    head = f"{'module':<14}{'mutants':>8}{'killed':>8}{'survived':>9}{'timeout':>8}" \
           f"{'equiv':>7}{'score':>8}"
    print(head)
    print("-" * len(head))
    for name, c in rows:
        print(f"{name:<14}{c['mutants']:>8}{c['killed']:>8}{c['survived']:>9}"
              f"{c['timeout']:>8}{c['equivalent']:>7}{score_text(c):>8}")
    if totals["not checked"]:
        print(f"\n{totals['not checked']} mutant(s) were never run (an interrupted run?): "
              "they count as survivors")
    if survivors:
        print(f"\nSurvivors ({len(survivors)}): no fast test fails with these changes")
        for m, old, new in survivors:
            change = f"{' | '.join(old)}  ->  {' | '.join(new)}"
            print(f"  {m.name} [{m.status}]\n      {change[:300]}")
    for m in killed_equivalents:
        print(f"\nlisted as equivalent but {m.status}: {m.name} (remove it from EQUIVALENT)")
    stale = [e for e in EQUIVALENT if e not in used
             and any(Path(m).stem == e.module for m in modules)]
    for e in stale:
        print(f"\nstale EQUIVALENT entry (matches no mutant now): {e.module}.{e.function}: "
              f"{e.mutated!r}")
    score = overall(totals)
    print(f"\nmutation score {score:.1%} (minimum {min_score:.0%}; equivalent mutants "
          f"excluded, {totals['equivalent']} listed in benchmarks/mutation.py EQUIVALENT)")
    return 0 if score >= min_score else 1


def overall(c: Counter[str]) -> float:
    judged = c["mutants"] - c["equivalent"]
    return (c["killed"] + c["timeout"]) / judged if judged else 1.0


def score_text(c: Counter[str]) -> str:
    return f"{overall(c):.1%}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--module", action="append", default=[],
                    help="a configured module (stem like 'gate' or its path); repeatable")
    ap.add_argument("--min-score", type=float, default=0.90)
    ap.add_argument("--max-children", type=int, default=1,
                    help="mutants run in parallel (default 1: a shared machine)")
    again = ap.add_mutually_exclusive_group()
    again.add_argument("--survivors", action="store_const", const="survivors", dest="again",
                       help="rerun only what the last run did not catch (after adding tests)")
    again.add_argument("--resume", action="store_const", const="resume", dest="again",
                       help="run only the mutants an interrupted run never reached")
    ap.add_argument("--report-only", action="store_true",
                    help="print the table of the last run without running mutmut")
    args = ap.parse_args(argv)
    try:
        import mutmut as _  # noqa: F401
    except ImportError:
        sys.stderr.write("mutmut is not installed: pip install -e '.[test]' (or pip install "
                         "mutmut)\n")
        return 2
    modules = select(configured_modules(), args.module)
    if not args.report_only:
        run(modules, args.max_children, args.again)
    return report(results(), modules, args.min_score)


if __name__ == "__main__":
    sys.exit(main())
