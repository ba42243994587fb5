"""A stand-in for the Lean REPL binary that answers only with what the real Lean answered.

It loads the REPL's own test transcripts (`NAME.in`: JSON requests separated by blank lines;
`NAME.expected.out`: the real REPL's answers, in order) and answers a request with the
recorded answer to the same request made on the same Lean state. States are identified by
how they were made, not by their ids: an environment is "the command C run on environment
E", a proof state is "the i-th proof state in the answer to request R". So several
transcripts can be loaded at once, and a client may send their requests in any order or
interleaved: ids in the answers are handed out afresh, counting up from 0 as the real REPL
does, and requests are translated back to the recorded ids. A request no transcript recorded
on that state has no real answer: the process prints why on stderr and exits with code 3, so
the client sees a REPL that died (it must never get an invented answer).

Environment (all optional but the first):
- FAKE_REPL_TRANSCRIPTS: `.in` files, separated by os.pathsep; each `.expected.out` beside it.
  A `"path"` request is matched by the file's content, read relative to the process's
  working directory (recorded ones: relative to the transcript's `test/` parent folder).
- FAKE_REPL_LOG: append each request received (one JSON line) to this file.
- FAKE_REPL_HANG_ON / FAKE_REPL_EXIT_ON: a request whose JSON contains this text makes the
  REPL never answer (a timeout) / exit at once with code 137 (as when the kernel kills an
  out-of-memory process). With FAKE_REPL_FAULT_ONCE (a file path) the fault fires once: the
  first time creates that file, and a restarted REPL then behaves.

Five requests our REPL env makes have no transcript; they are answered by rules, each one
stated here, and nothing else is:
- a tactic `set_option maxHeartbeats N in` + newline + T is answered as T (a heartbeat limit
  changes Lean's answer only for a tactic that runs out of heartbeats, and no recorded one does);
- the verifier's re-check `theorem [NS.]prover_check_<hex> REST` is answered as the recorded
  command on the same state that is identical but for its declaration's name (`theorem|lemma
  NAME REST` or `example REST`): a fresh name does not change how Lean elaborates a proof;
- `#print axioms NAME` on the environment that declared NAME by such a re-check (or on its
  kernel replay, below) is answered
  only when FAKE_REPL_AXIOMS holds a JSON list: the axioms, in the format of Lean's
  src/Lean/Elab/Print.lean (`'NAME' depends on axioms: [..]`, or `'NAME' does not depend on
  any axioms` for []). These are the test's choice, not Lean's: no transcript prints axioms.
- the kernel replay, `{"pickleTo": P, "env": E}` then `{"unpickleEnvFrom": P}`, is answered
  only when FAKE_REPL_KERNEL is set: pickling answers `{"env": E}` and writes P, as the
  recorded `pickle_environment` transcripts do; unpickling, with FAKE_REPL_KERNEL=accept,
  answers a new environment (`{"env": N}`, as recorded); with FAKE_REPL_KERNEL=reject, it does
  what the REPL does when `Lean.Environment.replay` throws the kernel's exception, which
  `unpickleCommandSnapshot` does not catch: the message on stderr and the process ends (exit 1).
  Which of the two happens is the test's choice, not Lean's.
- the verifier's query (`prover.env.lean_query`: an `#eval` printing one line, the marker
  `prover-lean-query:` then JSON) is answered with one info message in that format: on the
  environment a re-check declared (or its kernel replay), `locals` holds the re-checked theorem
  (no flags) and FAKE_REPL_ADDED (a JSON list of [components, flags]: what the proof added, the
  test's choice), and each asked name's axioms are FAKE_REPL_LEAN_AXIOMS (a JSON list of
  component lists) or, without it, FAKE_REPL_AXIOMS' names cut at their dots; on any other
  environment `locals` is empty and each asked name is unknown (null). The answers are the
  test's choice, not Lean's: no transcript runs the query.
The process protocol is the REPL's: a request is one JSON object ended by a blank line; an
answer is the JSON text followed by a blank line.
"""
from __future__ import annotations

import json
import os
import re
import sys
import time
from pathlib import Path

# Keys a client may add that do not change Lean's answer in these transcripts.
_IGNORED_KEYS = ("incrementality", "setOptions")
_HEARTBEATS = re.compile(r"^set_option maxHeartbeats \d+ in\n")
_FRESH = re.compile(r"^((?:[^\n]*\bin\n)*)theorem ((?:[\w.']+\.)?prover_check_[0-9a-f]+)\b")
_DECLARED = re.compile(r"^((?:[^\n]*\bin\n)*)(?:(?:theorem|lemma) [^\s:({\[]+|example)")
_PRINT_AXIOMS = re.compile(r"^#print axioms (\S+)$")
_QUERY_MARKER = "prover-lean-query:"


def renamed_key(cmd: str) -> str | None:
    """A declaration command with its keyword and name blanked (how re-checks are matched)."""
    m = _FRESH.match(cmd) or _DECLARED.match(cmd)
    return None if m is None else m.group(1) + "<DECL>" + cmd[m.end():]


def read_objects(text: str) -> list[dict]:
    """JSON objects separated by whitespace (the transcripts' layout; some hold raw control
    characters inside strings, which the REPL's own JSON reader accepts)."""
    dec = json.JSONDecoder(strict=False)
    out, i = [], 0
    while True:
        while i < len(text) and text[i].isspace():
            i += 1
        if i >= len(text):
            return out
        obj, i = dec.raw_decode(text, i)
        out.append(obj)


def _proof_states(answer: dict) -> list[int]:
    """The proof state ids an answer hands out, in the order they appear."""
    ids = [s["proofState"] for s in answer.get("sorries", []) if "proofState" in s]
    ids += [t["proofState"] for t in answer.get("tactics", []) if "proofState" in t]
    if "proofState" in answer:
        ids.append(answer["proofState"])
    return ids


class Transcripts:
    """Recorded answers keyed by (the state a request runs on, the request itself)."""

    def __init__(self) -> None:
        self.answers: dict[str, tuple[dict, str | None, list[str]]] = {}
        self.renamed: dict[str, str] = {}  # a recorded command's key with its name blanked -> key

    def key(self, request: dict, env_node: str | None, ps_node: str | None, file_text: str | None) -> str:
        body = {k: v for k, v in request.items() if k not in _IGNORED_KEYS + ("env", "proofState", "path")}
        return json.dumps({"on_env": env_node, "on_ps": ps_node, "file": file_text, **body}, sort_keys=True)

    def load(self, path_in: Path) -> None:
        out = path_in.with_name(path_in.name[:-3] + ".expected.out")
        requests = read_objects(path_in.read_text(encoding="utf-8"))
        answers = read_objects(out.read_text(encoding="utf-8"))
        base = path_in.parent.parent if path_in.parent.name == "test" else path_in.parent.parent.parent
        envs: dict[int, str] = {}  # the transcript's ids -> state identities
        states: dict[int, str] = {}
        for request, answer in zip(requests, answers):
            env_node = envs.get(request["env"]) if "env" in request else None
            ps_node = states.get(request["proofState"]) if "proofState" in request else None
            file_text = None
            if "path" in request:
                f = base / request["path"]
                if not f.exists():
                    f = path_in.parent / Path(request["path"]).name
                file_text = f.read_text(encoding="utf-8") if f.exists() else None
            key = self.key(request, env_node, ps_node, file_text)
            new_env = None
            if "env" in answer and answer["env"] not in envs:
                envs[answer["env"]] = new_env = f"env<{key}>"
            ps_nodes = []
            for i, ps in enumerate(_proof_states(answer)):
                if ps not in states:
                    states[ps] = f"ps{i}<{key}>"
                ps_nodes.append(states[ps])
            self.answers.setdefault(key, (answer, new_env, ps_nodes))
            if "cmd" in request and (shape := renamed_key(request["cmd"])) is not None:
                self.renamed.setdefault(self.key({**request, "cmd": shape}, env_node, ps_node, None), key)


class Repl:
    """One REPL process's live ids, mapped to the recorded states they stand for."""

    def __init__(self, transcripts: Transcripts) -> None:
        self.t = transcripts
        self.envs: list[str] = []
        self.states: list[str] = []
        self.declared: dict[int, str] = {}  # env id -> the fresh name a re-check declared in it

    def answer(self, request: dict) -> dict | None:
        kernel = os.environ.get("FAKE_REPL_KERNEL")
        if kernel and "pickleTo" in request and "env" in request and 0 <= request["env"] < len(self.envs):
            Path(request["pickleTo"]).write_text(str(request["env"]), encoding="utf-8")
            return {"env": request["env"]}
        if kernel and "unpickleEnvFrom" in request and Path(request["unpickleEnvFrom"]).exists():
            if kernel == "reject":
                print("uncaught exception: (kernel) declaration type mismatch, 'prover_check_aux._auxLemma.1' "
                      "has type\n  2 + 2 = 5\nbut is expected to have type\n  True", file=sys.stderr, flush=True)
                sys.exit(1)
            pickled = int(Path(request["unpickleEnvFrom"]).read_text(encoding="utf-8"))
            self.envs.append(f"unpickled<{self.envs[pickled]}>")
            if pickled in self.declared:  # the replayed constants include the re-checked theorem
                self.declared[len(self.envs) - 1] = self.declared[pickled]
            return {"env": len(self.envs) - 1}
        if "tactic" in request and _HEARTBEATS.match(request["tactic"]):
            request = {**request, "tactic": _HEARTBEATS.sub("", request["tactic"], count=1)}
        if "cmd" in request and (m := _PRINT_AXIOMS.match(request["cmd"].strip())):
            return self._axioms(request, m.group(1))
        if "cmd" in request and _QUERY_MARKER in request["cmd"] and "collectAxioms" in request["cmd"]:
            return self._query(request)
        answer = self._recorded(request)
        if answer is None and "cmd" in request and (m := _FRESH.match(request["cmd"])):
            answer = self._renamed(request)
            if answer is not None and "env" in answer:
                self.declared[answer["env"]] = m.group(2)
        return answer

    def _renamed(self, request: dict) -> dict | None:
        env_node = self.envs[request["env"]] if 0 <= request.get("env", -1) < len(self.envs) else None
        key = self.t.key({**request, "cmd": renamed_key(request["cmd"])}, env_node, None, None)
        original = self.t.renamed.get(key)
        if original is None:
            return None
        recorded, new_env, ps_nodes = self.t.answers[original]
        answer = json.loads(json.dumps(recorded))
        if "env" in answer:
            answer["env"] = len(self.envs)
            self.envs.append(f"renamed<{original}>")
        return answer

    def _axioms(self, request: dict, name: str) -> dict | None:
        chosen = os.environ.get("FAKE_REPL_AXIOMS")
        if chosen is None or self.declared.get(request.get("env", -1)) != name:
            return None
        axioms = json.loads(chosen)
        data = (f"'{name}' depends on axioms: [{', '.join(axioms)}]" if axioms
                else f"'{name}' does not depend on any axioms")
        env = len(self.envs)
        self.envs.append(f"axioms<{name}>")
        return {"messages": [{"severity": "info", "pos": {"line": 1, "column": 0},
                              "endPos": {"line": 1, "column": 6}, "data": data}], "env": env}

    def _query(self, request: dict) -> dict:
        cmd = request["cmd"]
        asked = cmd[cmd.index("for n in ([") + len("for n in (["):cmd.index("] : List Name)")]
        n_names = asked.count("Name.anonymous")
        declared = self.declared.get(request.get("env", -1))
        if declared is not None:
            own = [[declared.split("."), []]]
            added = json.loads(os.environ.get("FAKE_REPL_ADDED", "[]"))
            if "FAKE_REPL_LEAN_AXIOMS" in os.environ:
                axioms = json.loads(os.environ["FAKE_REPL_LEAN_AXIOMS"])
            else:
                axioms = [a.split(".") for a in json.loads(os.environ.get("FAKE_REPL_AXIOMS", "[]"))]
            data = {"locals": own + added, "axioms": [axioms] * n_names}
        else:
            data = {"locals": [], "axioms": [None] * n_names}
        env = len(self.envs)
        self.envs.append(f"query<{request.get('env')}>")
        text = _QUERY_MARKER + json.dumps(data, ensure_ascii=False, separators=(",", ":"))
        return {"messages": [{"severity": "info", "pos": {"line": 2, "column": 0},
                              "endPos": {"line": 2, "column": 5}, "data": text}], "env": env}

    def _recorded(self, request: dict) -> dict | None:
        env_node = ps_node = file_text = None
        if "env" in request:
            if not 0 <= request["env"] < len(self.envs):
                return {"message": "Unknown environment."}
            env_node = self.envs[request["env"]]
        if "proofState" in request:
            if not 0 <= request["proofState"] < len(self.states):
                return {"message": "Unknown proof state."}
            ps_node = self.states[request["proofState"]]
        if "path" in request:
            f = Path(request["path"])
            if not f.exists():
                return None
            file_text = f.read_text(encoding="utf-8")
        found = self.t.answers.get(self.t.key(request, env_node, ps_node, file_text))
        if found is None:
            return None
        recorded, new_env, ps_nodes = found
        answer = json.loads(json.dumps(recorded))
        if "env" in answer:
            if new_env is not None:
                answer["env"] = len(self.envs)
                self.envs.append(new_env)
            else:  # pickling answers with the environment it was given
                answer["env"] = request.get("env", answer["env"])
        live = []
        for node in ps_nodes:
            if node == ps_node:  # the state it was given (pickling answers with it)
                live.append(request["proofState"])
            else:
                live.append(len(self.states))
                self.states.append(node)
        it = iter(live)
        for s in answer.get("sorries", []):
            if "proofState" in s:
                s["proofState"] = next(it)
        for t in answer.get("tactics", []):
            if "proofState" in t:
                t["proofState"] = next(it)
        if "proofState" in answer:
            answer["proofState"] = next(it)
        return answer


def _fault(kind: str, request_text: str) -> bool:
    needle = os.environ.get(kind)
    if not needle or needle not in request_text:
        return False
    once = os.environ.get("FAKE_REPL_FAULT_ONCE")
    if once:
        if os.path.exists(once):
            return False
        Path(once).write_text(kind)
    return True


def _requests(stream):
    """Requests as the REPL reads them: lines up to a blank line."""
    buf: list[str] = []
    for line in stream:
        if line.strip():
            buf.append(line)
        elif buf:
            yield "".join(buf)
            buf = []
    if buf:
        yield "".join(buf)


def main() -> int:
    transcripts = Transcripts()
    for p in filter(None, os.environ.get("FAKE_REPL_TRANSCRIPTS", "").split(os.pathsep)):
        transcripts.load(Path(p))
    repl = Repl(transcripts)
    log = os.environ.get("FAKE_REPL_LOG")
    for text in _requests(sys.stdin):
        request = json.loads(text, strict=False)
        if log:
            with open(log, "a", encoding="utf-8") as f:
                f.write(json.dumps(request, ensure_ascii=False) + "\n")
        if _fault("FAKE_REPL_EXIT_ON", text):
            os._exit(137)
        if _fault("FAKE_REPL_HANG_ON", text):
            while True:
                time.sleep(60)
        answer = repl.answer(request)
        if answer is None:
            print(f"fake REPL: no recorded answer for {json.dumps(request, ensure_ascii=False)}",
                  file=sys.stderr, flush=True)
            return 3
        sys.stdout.write(json.dumps(answer, ensure_ascii=False, indent=1) + "\n\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
