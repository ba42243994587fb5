"""`prover data trace`: LeanDojo Benchmark 4 datasets from a Lean project, through lean-dojo
(`leandojo`) or the Lean REPL (`repl`). After the environments in the pipeline: tracing runs Lean."""
