"""Proof environments: one theorem at a time, a tactic in, a result out.

`base` holds the result types and the `ProofEnv` interface; `leandojo_env` runs tactics in
Lean through LeanDojo (Lean before v4.12); `repl_env` through the Lean REPL (lean-interact); `replay` simulates Lean from traced proofs (never a pass@1 number).
"""
from prover.env.base import (
    ENV_LEANDOJO,
    ENV_REPL,
    ENV_REPLAY,
    EnvCrash,
    EnvFailure,
    EnvInitError,
    GivenUp,
    ProofEnv,
    ProofFinished,
    State,
    TacticError,
    TacticResult,
    Timeout,
    normalize_ws,
)

__all__ = [
    "ENV_LEANDOJO", "ENV_REPL", "ENV_REPLAY", "EnvCrash", "EnvFailure", "EnvInitError", "GivenUp",
    "ProofEnv", "ProofFinished", "State", "TacticError", "TacticResult", "Timeout",
    "normalize_ws",
]
