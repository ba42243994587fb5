"""The JSON the service takes and gives. These models are what the OpenAPI schema describes.

Request fields are strict (`"k": "5"` or `"rerank": "yes"` is an error, not a guess) and
unknown fields are refused, so a typo such as `top_k` says so instead of being ignored.
`/generate` and `/encode` take and give exactly LeanCopilot's external-model JSON
(`LeanCopilot/Models/External.lean`): the field names there are a protocol, not ours to choose.
"""
from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from prover.data.premise import Premise
from retriever.base import RankedPremise


class SearchRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    state: str = Field(description="A proof state (hypotheses, then `⊢ goal`) or a partial statement")
    k: int | None = Field(None, description="How many premises (1..limits.max_k; default retriever.k)")
    rerank: bool = Field(False, description="Re-rank the first stage's top k1 with CAR")
    retriever: str | None = Field(None, description="First stage (default: the service's default); "
                                                    "`cfr+car` is `cfr` with rerank")
    mode: Literal["formal", "informal"] = Field("formal", description="`informal`: `state` is plain "
                                                "English, LaTeX, a theorem's name or a Lean-like term, "
                                                "searched by the served `informal` retriever")
    file_path: str | None = Field(None, description="The file being worked on, a file of the corpus "
                                  "(`Mathlib/Data/Nat/Basic.lean`, `Mathlib.Data.Nat.Basic`, or a path "
                                  "ending in one): only premises accessible there are ranked")
    position: list[int] | None = Field(None, description="`[line, column]` in `file_path` (1-based "
                                       "line): its own declarations count only if they end before it. "
                                       "Default: the end of the file")
    imports: list[str] | None = Field(None, description="For a file outside the corpus: the modules it "
                                      "imports; only their premises and those they import are ranked")


class PremiseOut(BaseModel):
    full_name: str
    statement: str = Field(description="`<VAR> args <GOAL> goal`, as the retrievers read it")
    args: list[str]
    goal: str
    kind: str
    path: str = Field(description="Source file, relative to the library root")
    line: int = Field(description="First line of the declaration (1-based)")
    end_line: int
    code: str

    @classmethod
    def of(cls, p: Premise) -> PremiseOut:
        return cls(full_name=p.full_name, statement=p.render(), args=list(p.args), goal=p.goal,
                   kind=p.kind, path=p.path, line=p.start[0], end_line=p.end[0], code=p.code)


class Hit(PremiseOut):
    rank: int
    score: float = Field(description="The retriever's score; with rerank, CAR logits for the top k1")
    index: int = Field(description="Position of the premise in the corpus")
    doc: str = Field("", description="The declaration's docstring, where the corpus has one")
    matched: list[str] = Field(default_factory=list, description="Informal mode: the query words this "
                               "premise matched (`word→term` when through an identification cloud)")

    @classmethod
    def ranked(cls, rank: int, r: RankedPremise, matched: list[str] | None = None, doc: str = "") -> Hit:
        return cls(**PremiseOut.of(r.premise).model_dump(), rank=rank, score=r.score, index=r.index,
                   doc=doc or r.premise.doc, matched=matched or [])


class ContextOut(BaseModel):
    file_path: str | None = Field(None, description="The file, as the corpus names it")
    position: list[int] | None = Field(None, description="null: the end of the file")
    imports: list[str] = Field(default_factory=list, description="The imports found in the corpus")
    unknown_imports: list[str] = Field(default_factory=list,
                                       description="Imports not in the corpus (no premises of theirs "
                                                   "are searched)")
    accessible: int = Field(description="How many premises were ranked")


class SearchResponse(BaseModel):
    retriever: str
    rerank: bool
    k: int
    took_ms: float
    generation: int = Field(description="Which load answered; it grows by one on each reload")
    context: ContextOut | None = Field(None, description="The theorem context searched in, if given")
    results: list[Hit]


class GenerateRequest(BaseModel):
    """LeanCopilot's `GeneratorRequest`."""

    model_config = ConfigDict(extra="forbid", strict=True)

    name: str = Field(description="Which served generator (GET /health lists them)")
    input: str = Field(description="A proof state, as LeanCopilot sends it")
    prefix: str | None = Field("", description="Every tactic starts with this (LeanCopilot's "
                               "`suggest_tactics \"rw\"`); empty: no constraint")


class Generation(BaseModel):
    output: str = Field(description="A tactic")
    score: float = Field(description="log P(tactic | input), the whole tactic, prefix included")


class GenerateResponse(BaseModel):
    outputs: list[Generation] = Field(description="Distinct tactics, best first")


class EncodeRequest(BaseModel):
    """LeanCopilot's `EncoderRequest`."""

    model_config = ConfigDict(extra="forbid", strict=True)

    name: str = Field(description="Which served dense retriever (GET /health lists the encoders)")
    input: str = Field(description="A proof state")


class EncodeResponse(BaseModel):
    outputs: list[float] = Field(description="The state's embedding: premises are ranked by their "
                                             "inner product with it")


class PremiseResponse(BaseModel):
    full_name: str
    premises: list[PremiseOut] = Field(description="Usually one; a few names are declared in several files")


class ReloadRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    index: str | None = Field(None, description="Retriever run folder (default: the current one)")
    corpus: str | None = Field(None, description="LeanDojo dataset folder (default: the current one)")


class ErrorResponse(BaseModel):
    error: str
    field: str | None = None
