"""`prover data extract PROJECT --out DIR`: a statement-level dataset of a Lake project, from source.

What `mathlib-src` is, for any Lake project and its packages, with no Lean:

- `corpus.jsonl`: `prover data corpus`' (`prover.data.project_corpus.build_corpus`);
- one record per named theorem or lemma of every file (private ones left out: LeanDojo names
  them as Lean mangles them) with exactly one pseudo-step: `tactic` the whole proof text after
  `:=` (comments removed), `state_before` its initial goal rendered from the signature (every
  `variable` binder in scope, then its own binders, one line per run of hypotheses of the same
  type as Lean's pretty printer groups them,
  anonymous instances as `inst✝`, `inst✝¹`, ...; then `⊢ goal`), `state_after` "no goals",
  and `annotated_tactic` the premises the proof text names, resolved from the source as
  `prover data trace --backend repl` resolves them without Lean (`prover.tracing.repl.annotate`:
  as written, under the theorem's namespaces and `open`s; a name outside the project is found in
  `--corpus`, when given);
- `random/` and `novel_premises/` splits (`prover.data.splits`: the seeded shuffle, and the
  reference-isolated split LeanDojo's novel_premises is), with the theorems named in
  `--exclude` (a LeanDojo split file: the real records kept for validation and testing) taken
  out of both train parts, as `mathlib-src` version 2 does;
- `metadata.json`: counts, the corpus' own metadata, the resolver's counts and what the source
  could not settle.

Approximations, said in metadata.json: statement-level only; the rendered goal is the statement
as written (no elaboration: coercions, implicit arguments and notation stay as written; every
section variable in scope is a hypothesis, as Lean v4.10's tactic proofs saw them); names are
resolved from text (no overloads, no field notation on terms).
"""
from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from prover.data.corpus import Corpus
from prover.data.jsonio import iter_jsonl, load_json, write_json
from prover.data.lake_project import read_project
from prover.data.lean_decls import LeanFile
from prover.data.lean_premises import _Scopes, modifiers_start, strip_comments
from prover.data.project_corpus import build_corpus
from prover.data.splits import make_split, write_split
from prover.data.theorem import parse_theorem
from prover.tracing.repl import annotate, premise_index, project_origin

log = logging.getLogger(__name__)

BUILDER_VERSION = 1
# Words a proof writes as tactics (or a placeholder), which the text resolver would otherwise
# take for the premise they also name under an opened namespace (`ext` for `Set.ext`, `cases`
# for `Classical.cases`, `left` for `FiniteDimensional.left`): LeanDojo annotates none of them.
TACTIC_WORDS = frozenset((
    "_", "by_cases", "by_contra", "by_contra!", "ext", "ext1", "symm", "trans", "cases", "cases'", "rcases",
    "induction", "induction'", "obtain", "intro", "intros", "rintro", "apply", "exact", "refine", "refine'",
    "use", "constructor", "simp", "simpa", "ring", "norm_num", "linarith", "nlinarith", "omega", "positivity",
    "congr", "funext", "contrapose", "contrapose!", "push_neg", "field_simp", "gcongr", "abel", "decide",
    "tauto", "aesop", "continuity", "measurability", "split", "left", "right", "exfalso", "subst", "calc",
    "show", "have", "let", "specialize", "rw", "rwa", "erw", "mono", "lift", "choose", "filter_upwards",
    "convert", "change", "unfold", "classical", "exists", "existsi", "interval_cases", "fin_cases",
    "nontriviality", "infer_instance", "assumption", "exact_mod_cast", "norm_cast", "push_cast", "zify",
    "qify", "split_ifs", "generalize", "clear", "set", "replace", "suffices", "exacts", "iterate", "repeat",
    "first", "try", "all_goals", "any_goals", "on_goal", "swap", "rotate", "pick_goal", "case", "next",
    "induction_on", "refine_lift", "apply_fun", "haveI", "letI", "inhabit", "by_cases!", "wlog", "rename_i"))
_LINK = re.compile(r"<a>(.*?)</a>", re.S)
_STAR_UNIVERSE = re.compile(r"\b(Type|Sort)\*")
_SUPERSCRIPT = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")
_OPEN, _CLOSE = "([{⦃⟨", ")]}⦄⟩"


def _top_level(text: str, target: str) -> int:
    """Index of the first `target` outside brackets, or -1."""
    depth = 0
    for i, ch in enumerate(text):
        if ch in _OPEN:
            depth += 1
        elif ch in _CLOSE:
            depth -= 1
        elif depth == 0 and text.startswith(target, i):
            return i
    return -1


def _binder(group: str) -> tuple[str | None, str]:
    """(names, type) of one binder group as written (`{a b : α}`, `[Group α]`, `(h : p := d)`):
    names None for an anonymous instance."""
    g = " ".join(group.split())
    if g[:1] in "([{⦃" and g[-1:] in ")]}⦄":
        inner = g[1:-1].strip()
    else:
        inner = g
    default = _top_level(inner, ":=")
    if default >= 0:
        inner = inner[:default].strip()
    colon = _top_level(inner, " : ")
    if colon < 0:
        colon = _top_level(inner, ":")
        if colon < 0:
            return (None, inner) if g.startswith("[") else (inner, "?")
        return inner[:colon].strip(), inner[colon + 1:].strip()
    return inner[:colon].strip(), inner[colon + 3:].strip()


def render_state(args: list[str], goal: str) -> str:
    """The initial goal of a statement with these binders and type, as Lean prints it: a
    `Type*` (`Sort*`) binder gets its own universe `u_1`, `u_2`, ... in order; a name bound again
    later is shadowed (`x✝`); anonymous instances are `inst✝ⁿ`, numbered from the last
    (`inst✝`) up; consecutive hypotheses of the same type share a line."""
    items: list[tuple[str | None, str]] = []
    universes = 0
    for names, typ in map(_binder, args):
        if names is None:
            items.append((None, typ))
            continue
        for name in names.split():
            if "Type*" in typ or "Sort*" in typ:  # `Type*`, `α → Type*`: a universe per occurrence
                def fresh(m: re.Match) -> str:
                    nonlocal universes
                    universes += 1
                    return f"{m.group(1)} u_{universes}"
                items.append((name, _STAR_UNIVERSE.sub(fresh, typ)))
            else:
                items.append((name, typ))
    n_anon = sum(1 for name, _ in items if name is None)
    lines: list[tuple[str, str, bool]] = []  # names, type, groups with the next
    k = 0
    for i, (name, typ) in enumerate(items):
        if name is None:
            rank = n_anon - 1 - k
            k += 1
            lines.append(("inst✝" + (str(rank).translate(_SUPERSCRIPT) if rank else ""), typ, False))
            continue
        if any(later == name for later, _ in items[i + 1:]):
            name += "✝"
        if lines and lines[-1][1] == typ and lines[-1][2]:
            lines[-1] = (f"{lines[-1][0]} {name}", typ, True)
        else:
            lines.append((name, typ, True))
    return "\n".join([f"{n} : {t}" for n, t, _ in lines] + [f"⊢ {' '.join(goal.split())}"])


def proof_text(f: LeanFile, proof_start: int, end: int) -> str:
    """The proof after `:=` (or the `|` alternatives), comments removed."""
    text = f.text[proof_start:end]
    if text.startswith(":="):
        text = text[2:]
    return strip_comments(text).strip()


def state_binders(scopes: _Scopes, at: int, row: dict) -> list[str]:
    """The hypotheses of a theorem's initial goal: every `variable` binder in scope (a tactic
    proof saw them all in Lean v4.10, LeanDojo Benchmark 4's), then its own binders (the corpus
    row's `args` holds only the variables the statement names, then its own)."""
    in_scope = scopes.binders_at(at)
    args = list(row.get("args") or [])
    seen = set(in_scope)
    used = 0  # the row's args start with the variables it uses; a binder of its own may repeat one
    while used < len(args) and args[used] in seen:
        used += 1
    return in_scope + args[used:]


def _drop_links(annotated: str, provenance: list, own: str | None, local: set[str],
                stats: Counter) -> tuple[str, list[dict]]:
    """The links of `annotate` less those that are not premises: a tactic word, a binder of the
    theorem (a local hypothesis), the theorem itself, or a name not placed."""
    kept: list[dict] = []
    k = 0

    def one(m: re.Match) -> str:
        nonlocal k
        token, p = m.group(1), provenance[k]
        k += 1
        why = ("tactic word" if token in TACTIC_WORDS else "local binder" if token.split(".")[0] in local
               else "self reference" if p is not None and p["full_name"] == own else "not placed" if p is None
               else None)
        if why:
            stats[f"links dropped: {why}"] += 1
            return token
        kept.append(p)
        return m.group(0)
    return _LINK.sub(one, annotated), kept


def theorem_records(files: list[LeanFile], rows: dict[tuple[str, str], dict], index, origin: tuple[str, str],
                    stats: Counter) -> list[dict]:
    """One statement-level record per named, non-private theorem with a statement and a proof."""
    url, commit = origin
    out = []
    for f in files:
        scopes = _Scopes.scan(f.code)
        for d in f.theorems():
            if "private" in f.code[modifiers_start(f.code, d.start):d.start].split():
                stats["private (left out)"] += 1
                continue
            row = rows.get((f.path, d.name))
            if row is None or not row.get("goal"):
                stats["no statement type read (left out)"] += 1
                continue
            if d.proof_start >= d.end:
                stats["no proof (left out)"] += 1
                continue
            tactic = proof_text(f, d.proof_start, d.end)
            annotated, provenance = annotate(tactic, None, d, index, stats, f.path)
            local = {n for a in row.get("args") or [] for n in (_binder(a)[0] or "").split()}
            annotated, kept = _drop_links(annotated, provenance, d.name, local, stats)
            out.append({
                "url": url, "commit": commit, "file_path": f.path, "full_name": d.name,
                "start": f.leandojo_pos(d.start), "end": f.leandojo_pos(d.end),
                "traced_tactics": [{"tactic": tactic, "annotated_tactic": [annotated, kept],
                                    "state_before": render_state(state_binders(scopes, d.start, row), row["goal"]),
                                    "state_after": "no goals"}]})
    return out


def _excluded_names(path: str | Path | None) -> set[str]:
    if path is None:
        return set()
    data = load_json(path)
    return {t["full_name"] for t in data if isinstance(t, dict) and t.get("full_name")}


def extract(project: str | Path, out: str | Path, *, corpus: str | Path | None = None,
            exclude: str | Path | None = None, n_val: float = 0.02, n_test: float = 0.02, seed: int = 3407,
            progress: bool = True, say: Callable[[str], None] = log.warning) -> dict:
    """Write the dataset of `project` into `out`; returns its metadata."""
    out = Path(out)
    sizes = []
    for what, v in (("--n-val", n_val), ("--n-test", n_test)):
        if v <= 0 or (v >= 1 and v != int(v)):
            raise ValueError(f"{what} must be a count (1, 2, ...) or a fraction in (0, 1), not {v}")
        sizes.append(int(v) if v >= 1 else v)
    n_val, n_test = sizes
    if corpus and not Path(corpus).exists():
        raise ValueError(f"--corpus {corpus}: not found")
    corpus_meta = build_corpus(project, out, progress=progress, say=say)
    proj = read_project(project)
    rows = {(r["path"], p["full_name"]): p for r in (obj for _, obj in iter_jsonl(out / "corpus.jsonl"))
            for p in r["premises"]}
    files = []
    unreadable = 0
    for sf in proj.files:
        try:
            files.append(LeanFile.scan(sf.disk.read_bytes().decode("utf-8"), sf.path))
        except (OSError, UnicodeDecodeError):
            unreadable += 1  # said by the corpus already
    external = Corpus.load(Path(corpus) / "corpus.jsonl" if Path(corpus).is_dir() else corpus) if corpus else None
    index = premise_index(files, external)
    stats: Counter = Counter()
    origin = project_origin(proj.root)
    records = theorem_records(files, rows, index, origin, stats)
    theorems = [parse_theorem(r, str(out), i, None) for i, r in enumerate(records)]
    excluded = _excluded_names(exclude)
    split_meta = {}
    for folder, strategy in (("random", "random"), ("novel_premises", "ri")):
        try:
            split = make_split(theorems, strategy, n_val, n_test, seed)
        except ValueError as e:  # a small project: too few theorems, or too few using premises
            say(f"extract: no {folder}/ split: {e}")
            split_meta[folder] = {"not_written": str(e)}
            continue
        before = len(split.train)
        split.train = [t for t in split.train if t.full_name not in excluded]
        split.strategy = folder if strategy == "random" else "ri (LeanDojo's novel_premises)"
        write_split(split, out / folder)
        split_meta[folder] = {"train": len(split.train), "val": len(split.val), "test": len(split.test),
                              "excluded_from_train": before - len(split.train)}
    distinct = set()
    for folder in (f for f, v in split_meta.items() if "train" in v):
        for part in ("train", "val", "test"):
            distinct.update((t["file_path"], t["full_name"]) for t in load_json(out / folder / f"{part}.json"))
    meta = {
        "dataset_name": f"statement-level dataset of {proj.name}, extracted from source (prover data extract)",
        "from_repo": {"url": origin[0], "commit": origin[1]}, "builder_version": BUILDER_VERSION,
        "counts": {"files": corpus_meta["files"], "premises": corpus_meta["premises"],
                   "theorems": len(distinct), "splits": {k: {p: v[p] for p in ("train", "val", "test")}
                                                        for k, v in split_meta.items() if "train" in v}},
        "theorems_read": len(theorems), "splits": split_meta, "seed": seed, "exclude": str(exclude) if exclude else None,
        "resolved_with": str(corpus) if corpus else None,
        "premise_links": sum(len(r["traced_tactics"][0]["annotated_tactic"][1]) for r in records),
        "not_settled": dict(sorted(stats.items())), "corpus": corpus_meta,
        "limits": ["statement-level: one pseudo-step per theorem (tactic = the proof after :=, "
                   "state_before = the statement rendered, state_after = 'no goals')",
                   "the rendered goal is the statement as written: no elaboration (coercions, implicit "
                   "arguments, notation, Type* universes stay as written)",
                   "premise names resolved from the proof text (namespaces, open, the theorem's "
                   "prefixes); no overloads, no field notation on terms",
                   "Lean core premises (Init, Std, Lean) are not in the corpus"],
    }
    write_json(out / "metadata.json", meta)
    return meta


__all__ = ["extract", "render_state", "theorem_records", "proof_text"]
